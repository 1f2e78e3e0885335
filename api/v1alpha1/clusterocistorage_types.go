package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterOCIStorageStatus is where one cluster pulls OCI artifacts from in one workspace.
type ClusterOCIStorageStatus struct {
	// Route is the OCIStorageRoute the cluster resolves to; empty when no route matches it.
	// +optional
	Route string `json:"route,omitempty"`

	// MatchedBy is the field of the route that matched the cluster, for example
	// spec.clusterNames, spec.clusterSelectors[1] or spec.default.
	// +optional
	MatchedBy string `json:"matchedBy,omitempty"`

	// Chain names the registries the cluster tries, in order: registry Secrets of the workspace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Chain []string `json:"chain,omitempty"`

	// ReplicationWait is the route's replicationWait, as delivered to the cluster.
	// +optional
	ReplicationWait string `json:"replicationWait,omitempty"`

	// Work is the ManifestWork, "<cluster namespace>/<name>", that carries the chain to the cluster.
	// +optional
	Work string `json:"work,omitempty"`

	// Active is the registry that served the latest of the cluster's pulled artifacts.
	// +optional
	Active string `json:"active,omitempty"`

	// Pulled counts the cluster's artifacts in its agent's cache, as last reported.
	// +optional
	Pulled int32 `json:"pulled,omitempty"`

	// Waiting counts the cluster's artifacts that wait for replication to a registry.
	// +optional
	Waiting int32 `json:"waiting,omitempty"`

	// Failed counts the cluster's artifacts whose pull failed on every registry.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// Unknown counts the cluster's artifacts whose status has not come back from the cluster
	// for the spec asked for (not delivered, not applied or not pulled yet).
	// +optional
	Unknown int32 `json:"unknown,omitempty"`

	// LastPull is when the cluster's agent last pulled an artifact.
	// +optional
	LastPull *metav1.Time `json:"lastPull,omitempty"`

	// Pulls are the artifacts the cluster's agent was asked to pull for the workspace (by pull
	// works and apps' charts), sorted by artifact, name and work, at most 100: what a tenant reads
	// in its own namespace instead of the ManifestWorks in the cluster's.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Pulls []ClusterPull `json:"pulls,omitempty"`

	// PullsOmitted counts the pulls left out of pulls (beyond its 100).
	// +optional
	PullsOmitted int32 `json:"pullsOmitted,omitempty"`

	// Reachability is each registry of the chain as the cluster's agent last probed it (its
	// RegistryProbe's feedback): Reachable or a failure class, and when. Empty until the agent
	// reports.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Reachability []RegistryReachability `json:"reachability,omitempty"`

	// Conditions: Written when the cluster's chain as routed now is in its ManifestWork (False
	// with reason LastGoodChainKept when the new chain names a missing registry and the previous
	// chain stays, WorkTooLarge or DeliveryFailed); Delivered when the cluster's work agent applied
	// that work at its current generation (WorkPending until then; Unknown, ClusterNotReporting,
	// while the cluster does not report); Ready from Written then Delivered, or False with reason
	// NoRoute when no route matches.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterPull is one artifact a cluster was asked to pull, and how it goes.
type ClusterPull struct {
	// Work is the ManifestWork, in the cluster's namespace on the hub, that asks for the pull.
	Work string `json:"work"`
	// Name is the OCIPull's name on the cluster.
	Name string `json:"name"`
	// Pull is what was asked: the artifact, by tag or digest.
	Pull OCIPullSpec `json:"pull"`
	// State is Pulling, Pulled, WaitingForArtifact or Failed as the agent reports it for the pull
	// asked for, or Unknown while no such report came back.
	State string `json:"state"`
	// Status is the agent's last report; when State is Unknown it may describe an earlier spec.
	// +optional
	Status *OCIPullStatus `json:"status,omitempty"`
}

// ClusterOCIStorage is the OCI storage routing of one cluster in one workspace: its route, its
// chain of registries and how its pulls go. `fleet-controller hub` keeps one per cluster of the
// workspace, named after the ManagedCluster, in the workspace namespace; it has no spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cocis,categories=fleet
// +kubebuilder:printcolumn:name="Route",type=string,JSONPath=`.status.route`
// +kubebuilder:printcolumn:name="Chain",type=string,JSONPath=`.status.chain`
// +kubebuilder:printcolumn:name="Matched By",type=string,JSONPath=`.status.matchedBy`,priority=1
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.active`
// +kubebuilder:printcolumn:name="Pulled",type=integer,JSONPath=`.status.pulled`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waiting`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Unknown",type=integer,JSONPath=`.status.unknown`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterOCIStorage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status ClusterOCIStorageStatus `json:"status,omitempty"`
}

// ClusterOCIStorageList is a list of ClusterOCIStorages.
//
// +kubebuilder:object:root=true
type ClusterOCIStorageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterOCIStorage `json:"items"`
}
