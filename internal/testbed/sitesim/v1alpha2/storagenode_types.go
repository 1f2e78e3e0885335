package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageNodeSpec places a storage node of a cluster on a host.
type StorageNodeSpec struct {
	// ClusterRef names the node's StorageCluster.
	ClusterRef string `json:"clusterRef"`

	// NodeName is the Kubernetes Node the storage node runs on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// Devices are the NVMe devices the node serves.
	// +optional
	Devices Devices `json:"devices,omitempty"`
}

// StorageNodeStatus is the node's state, written by the operator.
type StorageNodeStatus struct {
	// Phase is Online once the node serves.
	// +optional
	Phase StoragePhase `json:"phase,omitempty"`

	// Hostname is the host's name.
	// +optional
	Hostname string `json:"hostname,omitempty"`
}

// StorageNode is one storage node of a StorageCluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbsn
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.status.hostname`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StorageNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StorageNodeSpec   `json:"spec,omitempty"`
	Status StorageNodeStatus `json:"status,omitempty"`
}

// StorageNodeList is a list of StorageNodes.
//
// +kubebuilder:object:root=true
type StorageNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StorageNode `json:"items"`
}
