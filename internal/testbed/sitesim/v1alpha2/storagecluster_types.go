package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageClusterSpec is the sizing an approved draft deployed.
type StorageClusterSpec struct {
	// ConfigRef names the ClusterDeploymentConfig the cluster was expanded from.
	// +optional
	ConfigRef string `json:"configRef,omitempty"`

	// The draft's spec.cluster at approval, name included.
	ClusterTemplate `json:",inline"`
}

// StoragePhase is a StorageCluster's or StorageNode's state.
// +kubebuilder:validation:Enum=Pending;Online;Offline;Failed
type StoragePhase string

// Storage phases: Pending until the node (or every node of the cluster) serves.
const (
	StoragePending StoragePhase = "Pending"
	StorageOnline  StoragePhase = "Online"
	StorageOffline StoragePhase = "Offline"
	StorageFailed  StoragePhase = "Failed"
)

// StorageClusterStatus is the cluster's state, written by the operator.
type StorageClusterStatus struct {
	// Phase is Online once every node serves.
	// +optional
	Phase StoragePhase `json:"phase,omitempty"`

	// UUID identifies the cluster; StorageClasses name it.
	// +optional
	UUID string `json:"uuid,omitempty"`

	// Pool is the cluster's storage pool; StorageClasses name it.
	// +optional
	Pool string `json:"pool,omitempty"`

	// Nodes summarise the cluster's StorageNodes, by name.
	// +optional
	Nodes []StorageClusterNode `json:"nodes,omitempty"`
}

// StorageClusterNode is one StorageNode as its cluster reports it.
type StorageClusterNode struct {
	// Name is the StorageNode's name.
	Name string `json:"name"`
	// +optional
	Phase StoragePhase `json:"phase,omitempty"`
	// Hostname is the host (Kubernetes Node) the storage node runs on.
	// +optional
	Hostname string `json:"hostname,omitempty"`
}

// StorageCluster is a deployed simplyblock storage cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbsc
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="UUID",type=string,JSONPath=`.status.uuid`
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.status.pool`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StorageCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StorageClusterSpec   `json:"spec,omitempty"`
	Status StorageClusterStatus `json:"status,omitempty"`
}

// StorageClusterList is a list of StorageClusters.
//
// +kubebuilder:object:root=true
type StorageClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StorageCluster `json:"items"`
}
