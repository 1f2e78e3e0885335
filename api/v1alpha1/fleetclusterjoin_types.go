package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations the cluster-joins reconciler writes on a ManagedCluster.
const (
	// SiteLabel names the FleetSite a ManagedCluster is joined to.
	SiteLabel = "fleet.site"
	// CapabilityLabelPrefix prefixes one label per capability of a join:
	// capability.fleet.umkim.io/<name>=true.
	CapabilityLabelPrefix = "capability.fleet.umkim.io/"
	// JoinedByAnnotation names the FleetClusterJoin (<namespace>/<name>) that owns the cluster's
	// join labels.
	JoinedByAnnotation = "fleet.umkim.io/joined-by"
	// JoinLabelsAnnotation lists, comma-separated and sorted, the label keys that join set on the
	// cluster: exactly those are removed when a capability or the join goes.
	JoinLabelsAnnotation = "fleet.umkim.io/join-labels"
)

// ClusterJoinEdge binds the cluster to one ingress entry of its site.
type ClusterJoinEdge struct {
	// IngressID is the id of one of the site's edge.ingress entries. A port_forward entry serves
	// one cluster: the join created first holds it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	IngressID string `json:"ingressId"`
}

// FleetClusterJoinSpec binds an OCM ManagedCluster to a FleetSite.
type FleetClusterJoinSpec struct {
	// Cluster is the name of the OCM ManagedCluster. It cannot be changed: join another cluster
	// with another FleetClusterJoin.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable: join another cluster with another FleetClusterJoin"
	Cluster string `json:"cluster"`

	// Site is the name of a FleetSite in the join's namespace. The cluster is labelled
	// fleet.site=<site>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Site string `json:"site"`

	// Edge binds the cluster to one of the site's ingress entries; unset, the cluster has no
	// ingress of its own.
	// +optional
	Edge *ClusterJoinEdge `json:"edge,omitempty"`

	// Capabilities of the cluster, each labelled capability.fleet.umkim.io/<name>=true on it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Capabilities []string `json:"capabilities,omitempty"`
}

// FleetClusterJoinStatus is written by `fleet-controller hub` (the cluster-joins reconciler).
type FleetClusterJoinStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Labels are the label keys the join set on the ManagedCluster: the site label and one per
	// capability.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=65
	Labels []string `json:"labels,omitempty"`

	// IngressMethod is the method of the bound ingress entry, once found on the site.
	// +optional
	IngressMethod IngressMethod `json:"ingressMethod,omitempty"`

	// Conditions: Joined (the cluster carries the join's labels; reasons Labelled,
	// ClusterNotFound, SiteNotFound, ClusterAlreadyJoined) and Ready (joined and its ingress entry
	// usable; reasons Ready, IngressNotFound, IngressTaken, or Joined's reason).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FleetClusterJoin binds an OCM ManagedCluster to a FleetSite and one of its ingress entries, and
// labels the cluster with its site and capabilities.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fjoin,categories=fleet
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Site",type=string,JSONPath=`.spec.site`
// +kubebuilder:printcolumn:name="Ingress",type=string,JSONPath=`.spec.edge.ingressId`
// +kubebuilder:printcolumn:name="Joined",type=string,JSONPath=`.status.conditions[?(@.type=="Joined")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FleetClusterJoin struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetClusterJoinSpec   `json:"spec"`
	Status FleetClusterJoinStatus `json:"status,omitempty"`
}

// FleetClusterJoinList is a list of FleetClusterJoins.
//
// +kubebuilder:object:root=true
type FleetClusterJoinList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetClusterJoin `json:"items"`
}

// IngressID is the join's ingress entry id, "" when it binds none.
func (j *FleetClusterJoin) IngressID() string {
	if j.Spec.Edge == nil {
		return ""
	}
	return j.Spec.Edge.IngressID
}

// Condition types and reasons of sites and joins.
const (
	// JoinedCondition (positive) is True when the cluster carries the join's labels.
	JoinedCondition = "Joined"
	// WANPathCondition (positive) is False when a site has no ingress entry and no hub gateway.
	WANPathCondition = "WANPath"

	ReasonLabelled             = "Labelled"
	ReasonClusterNotFound      = "ClusterNotFound"
	ReasonSiteNotFound         = "SiteNotFound"
	ReasonClusterAlreadyJoined = "ClusterAlreadyJoined"
	ReasonIngressNotFound      = "IngressNotFound"
	ReasonIngressTaken         = "IngressTaken"
	ReasonNoWANPath            = "NoWANPath"
	ReasonHasWANPath           = "HasWANPath"
	ReasonEdgePublished        = "EdgePublished"
	ReasonEdgeWriteFailed      = "EdgeWriteFailed"
)
