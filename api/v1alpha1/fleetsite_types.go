package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressMethod is how traffic from the WAN reaches the clusters of a site through one ingress
// entry.
//
// +kubebuilder:validation:Enum=port_forward;reverse_proxy
type IngressMethod string

const (
	// IngressPortForward: the site's WAN router forwards ports of the entry's public address to
	// the NodePorts of one spoke's Traefik. An entry of this method serves exactly one cluster.
	IngressPortForward IngressMethod = "port_forward"
	// IngressReverseProxy: an external reverse proxy at the entry's address terminates TLS and
	// forwards by host name, so many clusters may share the entry.
	IngressReverseProxy IngressMethod = "reverse_proxy"
)

// IngressPorts are the spoke's Traefik NodePorts an ingress entry forwards to.
type IngressPorts struct {
	// HTTP is the NodePort of the spoke's Traefik web (HTTP) entry point.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	HTTP int32 `json:"http,omitempty"`

	// HTTPS is the NodePort of the spoke's Traefik websecure (HTTPS) entry point.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	HTTPS int32 `json:"https,omitempty"`
}

// IngressEntry is one way in from the WAN to clusters of the site.
//
// +kubebuilder:validation:XValidation:rule="self.method != 'port_forward' || (has(self.ports) && (has(self.ports.http) || has(self.ports.https)))",message="a port_forward entry names the NodePorts it forwards to: set ports.http or ports.https"
type IngressEntry struct {
	// ID names the entry within the site; a FleetClusterJoin binds a cluster to it by this id.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ID string `json:"id"`

	// Method is port_forward (the WAN router forwards to one spoke's NodePorts: one cluster per
	// entry) or reverse_proxy (an external reverse proxy terminates TLS: clusters may share it).
	Method IngressMethod `json:"method"`

	// Address is the entry's public IP address or host name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9.:]*[A-Za-z0-9])?$`
	Address string `json:"address"`

	// Ports are the spoke's Traefik NodePorts the entry forwards to; required for port_forward.
	// +optional
	Ports *IngressPorts `json:"ports,omitempty"`
}

// SiteEdge is how the site is reached from the WAN.
type SiteEdge struct {
	// Ingress lists the site's ways in, by id. A site with no entries and no hubGateway has no
	// fleet-managed WAN path.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=32
	Ingress []IngressEntry `json:"ingress,omitempty"`
}

// HubGateway publishes the site's apps through the hub's gateway.
//
// +kubebuilder:validation:XValidation:rule="!self.enabled || (has(self.domain) && size(self.domain) > 0)",message="an enabled hub gateway needs a domain"
type HubGateway struct {
	// Enabled turns the hub gateway on for the site.
	Enabled bool `json:"enabled"`

	// Domain is the DNS domain the hub gateway serves the site's apps under.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Domain string `json:"domain,omitempty"`
}

// SecretKeyRef names one key of a Secret in the namespace of the object that refers to it.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key within the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// Jumphost is an SSH bastion into the site. Its credentials are never inline: only a reference to
// a Secret of the workspace.
type Jumphost struct {
	// Host is the jumphost's address or host name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`

	// Port is the SSH port; unset means 22.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// User is the SSH user.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	User string `json:"user,omitempty"`

	// CredentialsSecretRef names the Secret key holding the SSH private key (or password).
	// +optional
	CredentialsSecretRef *SecretKeyRef `json:"credentialsSecretRef,omitempty"`
}

// FleetSiteSpec is a logical location of the fleet: its name for people and its ways in.
type FleetSiteSpec struct {
	// DisplayName is the site's name for people.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DisplayName string `json:"displayName,omitempty"`

	// Edge is how the site is reached from the WAN.
	// +optional
	Edge SiteEdge `json:"edge,omitempty"`

	// HubGateway publishes the site's apps through the hub's gateway.
	// +optional
	HubGateway *HubGateway `json:"hubGateway,omitempty"`

	// Jumphost is an SSH bastion into the site.
	// +optional
	Jumphost *Jumphost `json:"jumphost,omitempty"`
}

// FleetSiteStatus is written by `fleet-controller hub` (the sites reconciler).
type FleetSiteStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// JoinedClusters is how many FleetClusterJoins of the workspace bind a cluster to the site
	// and are Ready.
	// +optional
	JoinedClusters int32 `json:"joinedClusters"`

	// EdgeConfigMap names the ConfigMap in the site's namespace that carries its ingress data
	// (fleet-site-<name>-edge).
	// +optional
	EdgeConfigMap string `json:"edgeConfigMap,omitempty"`

	// Conditions: Ready (the edge ConfigMap is written) and WANPath (False, reason NoWANPath,
	// when the site has no ingress entry and no enabled hub gateway).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FleetSite is a logical location of the fleet: named ingress entries from the WAN, an optional
// hub gateway and an optional jumphost. Clusters join it with FleetClusterJoins.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fsite,categories=fleet
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Joined",type=integer,JSONPath=`.status.joinedClusters`
// +kubebuilder:printcolumn:name="WAN",type=string,JSONPath=`.status.conditions[?(@.type=="WANPath")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FleetSite struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetSiteSpec   `json:"spec,omitempty"`
	Status FleetSiteStatus `json:"status,omitempty"`
}

// FleetSiteList is a list of FleetSites.
//
// +kubebuilder:object:root=true
type FleetSiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetSite `json:"items"`
}

// Entry returns the site's ingress entry of that id.
func (s *FleetSite) Entry(id string) (IngressEntry, bool) {
	for _, e := range s.Spec.Edge.Ingress {
		if e.ID == id {
			return e, true
		}
	}
	return IngressEntry{}, false
}

// HasWANPath tells whether the site has a fleet-managed way in: an ingress entry or an enabled
// hub gateway.
func (s *FleetSite) HasWANPath() bool {
	return len(s.Spec.Edge.Ingress) > 0 || s.Spec.HubGateway != nil && s.Spec.HubGateway.Enabled
}
