package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OCIStorageRouteSpec says which clusters pull OCI artifacts from which registries, in which order.
//
// A cluster matches the route when its name is in clusterNames, or it is a member of a
// ManagedClusterSet in clusterGroups, or it matches any of clusterSelectors. Routes of a workspace
// are evaluated in ascending priority and the first match wins; the default route catches every
// cluster no other route matched.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.default) && self.default) || ((!has(self.clusterNames) || size(self.clusterNames) == 0) && (!has(self.clusterGroups) || size(self.clusterGroups) == 0) && (!has(self.clusterSelectors) || size(self.clusterSelectors) == 0))",message="a default route catches the clusters no other route matched: it may not set clusterNames, clusterGroups or clusterSelectors"
type OCIStorageRouteSpec struct {
	// Priority orders the routes of a workspace: lower is evaluated first. Two routes of one
	// workspace may not share a priority.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Priority int32 `json:"priority"`

	// Default makes this the workspace's catch-all route. A default route names no clusters,
	// groups or selectors; at most one route per workspace is the default.
	// +optional
	Default bool `json:"default,omitempty"`

	// ClusterNames selects OCM ManagedClusters by name, at most 1000. The list is atomic:
	// whoever applies it owns all of it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClusterNames []string `json:"clusterNames,omitempty"`

	// ClusterGroups selects the members of these OCM ManagedClusterSets, by name, at most 100.
	// The list is atomic: whoever applies it owns all of it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClusterGroups []string `json:"clusterGroups,omitempty"`

	// ClusterSelectors selects clusters by label; a cluster matching any selector matches the
	// route. An empty selector matches every cluster. At most 32 selectors.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	ClusterSelectors []LabelSelector `json:"clusterSelectors,omitempty"`

	// Registries is the pull chain: names of OCI registry Secrets in the same namespace, tried in
	// order, at most 16. Auth, TLS, connection and integrity failures move to the next registry
	// at once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Registries []string `json:"registries"`

	// ReplicationWait is how long an agent keeps retrying a registry that does not have an
	// artifact yet (replication is behind) before it moves on to the next one. It is a Go duration
	// from zero to a day, such as "0s", "90s", "10m", "1h30m" or "1.5h"; units are h, m, s, ms,
	// us (or µs) and ns, so a day is "24h", and no minus sign is accepted.
	//
	// The field is a string, not a metav1.Duration, so that a route stored with a value no
	// duration can hold (written before this bound existed) still decodes: routing then marks
	// that route SpecValid=False instead of failing to read every route.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('24h')",message="replicationWait is at most a day (24h)"
	ReplicationWait string `json:"replicationWait,omitempty"`

	// Verify, when set, makes the route's clusters verify every artifact's signature before
	// using it; see OCIVerify.
	// +optional
	Verify *OCIVerify `json:"verify,omitempty"`
}

// LabelSelector is a Kubernetes label selector (the JSON shape of metav1.LabelSelector, the same
// semantics), with bounds: at most 64 matchLabels and 32 matchExpressions.
//
// +structType=atomic
type LabelSelector struct {
	// MatchLabels are labels a cluster must all have, with these values.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MatchExpressions are requirements a cluster's labels must all meet.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector (metav1's shape).
type LabelSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:MaxLength=16
	Operator string `json:"operator"`

	// Values are the label values for In and NotIn (at most 64); empty for Exists and
	// DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// OCIStorageRouteStatus is the route's effect on its workspace, written by `fleet-controller hub`.
type OCIStorageRouteStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// MatchedClusters is how many of the workspace's clusters resolve to this route: the route is
	// the first, by priority, that matches them.
	// +optional
	MatchedClusters int32 `json:"matchedClusters"`

	// MatchedClusterSample names some of those clusters, the first by name (at most 10).
	// +optional
	// +listType=atomic
	MatchedClusterSample []string `json:"matchedClusterSample,omitempty"`

	// Conditions say whether the route works: Ready, derived from SpecValid, RegistriesResolved,
	// PriorityConflict and Written (its chain is in the ManifestWork of every cluster it wins);
	// Delivered when every such cluster's work agent applied it (WorkPending until then,
	// ClusterNotReporting while a cluster does not report); Shadowed when every cluster it
	// selects is matched first by an earlier route; AgentCredentials False when a registry of its
	// chain has no agent credentials, so that its push credentials are delivered to the clusters
	// instead.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// OCIStorageRoute routes the clusters of a workspace to an ordered chain of OCI registries.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ocir,categories=fleet
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="Registries",type=string,JSONPath=`.spec.registries`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedClusters`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OCIStorageRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OCIStorageRouteSpec   `json:"spec"`
	Status OCIStorageRouteStatus `json:"status,omitempty"`
}

// OCIStorageRouteList is a list of OCIStorageRoutes.
//
// +kubebuilder:object:root=true
type OCIStorageRouteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIStorageRoute `json:"items"`
}
