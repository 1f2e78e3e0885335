package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RouteMode is where an app's public URL is served.
// +kubebuilder:validation:Enum=hub;site;none
type RouteMode string

// Modes of an app route.
const (
	// RouteHub: the hub's gateway (Traefik) serves the URL and forwards to the site; needs the
	// site's hubGateway.
	RouteHub RouteMode = "hub"
	// RouteSite: an Ingress on the app's cluster serves the URL through the site's ingress entry
	// the cluster is bound to.
	RouteSite RouteMode = "site"
	// RouteNone: no public URL; what an earlier mode made is removed.
	RouteNone RouteMode = "none"
)

// RouteBackend is the Service on the app's cluster, in the app's namespace, the route sends to.
type RouteBackend struct {
	// Name of the Service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Port of the Service.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// RouteTLS is how the route's host gets its certificate: a Secret, or ACME through cert-manager.
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.acmeIssuer)",message="give exactly one of secretName and acmeIssuer"
type RouteTLS struct {
	// SecretName is a kubernetes.io/tls Secret that holds the host's certificate, in the app's
	// namespace on the cluster (site mode) or the route's namespace on the hub (hub mode).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`
	// ACMEIssuer is a cert-manager ClusterIssuer that obtains the certificate by ACME; the
	// route's objects carry the cert-manager.io/cluster-issuer annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ACMEIssuer string `json:"acmeIssuer,omitempty"`
}

// FleetAppRouteSpec publishes one app's Service under a host and path.
// +kubebuilder:validation:XValidation:rule="self.mode == 'none' || has(self.host)",message="host is required unless mode is none"
type FleetAppRouteSpec struct {
	// App is the name of a FleetApp in the route's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	App string `json:"app"`

	// Mode is where the URL is served: hub (the hub's gateway, which needs the site's
	// hubGateway), site (an Ingress on the app's cluster, which needs the cluster bound to an
	// ingress entry of its site) or none.
	// +kubebuilder:default=site
	Mode RouteMode `json:"mode,omitempty"`

	// Host is the URL's host name. In mode hub it is the site's hubGateway.domain or a name
	// below it, and no wildcard; a host serves one workspace at a time (its first route's).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Host string `json:"host,omitempty"`

	// Path is the URL's path prefix: "/", or "/"-separated segments of letters, digits,
	// "-._~$*+;=:@" and %XX escapes for any other character, none empty ("//"), "." or "..",
	// optionally ending in "/".
	// +optional
	// +kubebuilder:default=/
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^(/|(/([.]*([A-Za-z0-9_~$*+;=:@-]|%[0-9A-Fa-f]{2})([A-Za-z0-9._~$*+;=:@-]|%[0-9A-Fa-f]{2})*|[.][.][.]+))+/?)$')",message="path must be / or /-separated segments of letters, digits, -._~$*+;=:@ and %XX escapes, with no empty, . or .. segment"
	Path string `json:"path,omitempty"`

	// Service the route sends to.
	Service RouteBackend `json:"service"`

	// TLS of the host; plain HTTP when unset.
	// +optional
	TLS *RouteTLS `json:"tls,omitempty"`
}

// FleetAppRouteStatus is written by `fleet-controller hub` (the app-routes reconciler).
type FleetAppRouteStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// URL is the route's public URL, set once what serves it is written on the hub (Written);
	// in site mode Ready says whether the cluster applied it yet. Empty in mode none.
	// +optional
	URL string `json:"url,omitempty"`

	// Cluster is the app's cluster.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// Published names what serves the route, once written on the hub: the ManifestWork
	// (<cluster namespace>/<name>) that carries the Ingress in site mode, or the hub gateway's
	// ConfigMap (<namespace>/<name>, in the controller's gateway namespace) in hub mode.
	// +optional
	Published string `json:"published,omitempty"`

	// Conditions: Written (what the route publishes is written on the hub; False with reason
	// AppNotFound, NotJoined, NoHubGateway, NoIngress, HostTaken, InvalidPath, WildcardHost,
	// HostOutsideDomain, ConfigMapTaken, NameTaken, NotBound, WorkTooLarge or PublishFailed);
	// Delivered, site mode only (the cluster's work agent applied the route's work at its
	// generation: WorkApplied, else WorkPending naming the cluster and what the agent reported);
	// Ready (the route is published as its mode says: Published, or Unpublished in mode none;
	// else the reason of Written, then Delivered); Stalled (True, reason WorkTooLarge) while the
	// route's work is over the work budget.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FleetAppRoute gives a FleetApp a public URL: through the hub's gateway (hub), an Ingress on
// the app's cluster (site), or none.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=froute,categories=fleet
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.spec.app`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FleetAppRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetAppRouteSpec   `json:"spec"`
	Status FleetAppRouteStatus `json:"status,omitempty"`
}

// FleetAppRouteList is a list of FleetAppRoutes.
//
// +kubebuilder:object:root=true
type FleetAppRouteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetAppRoute `json:"items"`
}
