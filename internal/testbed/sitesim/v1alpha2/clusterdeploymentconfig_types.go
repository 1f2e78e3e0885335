package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterDeploymentConfigSpec is a draft storage cluster: the sizing template, the nodes and
// devices discovery found, and the approval that deploys it. The hub owns cluster and approved
// (server-side apply, field manager hub-deploy); the operator writes nodeSets.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.approved) || !oldSelf.approved || (has(self.approved) && self.approved)",message="approved is one-way: an approved draft cannot be un-approved"
type ClusterDeploymentConfigSpec struct {
	// Approved deploys the draft; once true it stays true.
	// +optional
	Approved bool `json:"approved,omitempty"`

	// Cluster is the storage cluster's sizing.
	// +optional
	Cluster ClusterTemplate `json:"cluster,omitempty"`

	// NodeSets are the nodes and devices the cluster is built from, as discovery found them.
	// +optional
	// +listType=map
	// +listMapKey=name
	NodeSets []NodeSet `json:"nodeSets,omitempty"`
}

// ClusterTemplate sizes a storage cluster. Its bounds are the operator's published CRD's
// (internal/storagerules holds them for the provider's plan checks; storageruletest.Cases tests
// both against one table).
type ClusterTemplate struct {
	// Name is the StorageCluster's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// VCPUCount is the vCPUs each storage node reserves.
	// +required
	// +kubebuilder:validation:Minimum=4
	VCPUCount int32 `json:"vcpuCount"`

	// MaxSubsystemCount is the most NVMe-oF subsystems (volumes) per node.
	// +required
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=75
	MaxSubsystemCount int32 `json:"maxSubsystemCount"`

	// MinHugePagesSize is the huge-page memory each node needs, a quantity such as "2G".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	MinHugePagesSize string `json:"minHugePagesSize,omitempty"`

	// EnableDriveFormat formats the devices before use.
	// +optional
	EnableDriveFormat bool `json:"enableDriveFormat,omitempty"`

	// EnableJournalDevice dedicates a device per node to the journal.
	// +optional
	EnableJournalDevice bool `json:"enableJournalDevice,omitempty"`

	// Stripe is the erasure-coding scheme.
	// +optional
	Stripe *Stripe `json:"stripe,omitempty"`
}

// Stripe is an erasure-coding scheme: data chunks plus parity chunks, one of the layouts the
// operator supports; an unstated half counts as 1 (so dataChunks 8 alone is 8+1, refused).
//
// +kubebuilder:validation:XValidation:rule="[has(self.dataChunks) ? self.dataChunks : 1, has(self.parityChunks) ? self.parityChunks : 1] in [[1, 0], [1, 1], [2, 1], [4, 1], [1, 2], [2, 2], [4, 2]]",message="stripe must be one of 1+0, 1+1, 2+1, 4+1, 1+2, 2+2, 4+2 (dataChunks+parityChunks; an unstated half counts as 1)"
type Stripe struct {
	// +optional
	// +kubebuilder:validation:Minimum=1
	DataChunks *int32 `json:"dataChunks,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	ParityChunks *int32 `json:"parityChunks,omitempty"`
}

// NodeSet is a set of node groups.
type NodeSet struct {
	Name string `json:"name"`
	// +optional
	Groups []NodeGroup `json:"groups,omitempty"`
}

// NodeGroup is nodes sharing a device layout.
type NodeGroup struct {
	Name string `json:"name"`
	// Workers are Node names.
	// +optional
	Workers []string `json:"workers,omitempty"`
	// +optional
	Devices Devices `json:"devices,omitempty"`
}

// Devices are a group's storage devices.
type Devices struct {
	// NVMe are device names such as nvme0n1.
	// +optional
	NVMe []string `json:"nvme,omitempty"`
}

// DraftPhase is a draft's progress.
// +kubebuilder:validation:Enum=Draft;Expanding;Expanded;Failed
type DraftPhase string

// Phases of a draft: Draft until approved, then Expanding and Expanded; Failed when discovery or
// expansion failed.
const (
	DraftDraft     DraftPhase = "Draft"
	DraftExpanding DraftPhase = "Expanding"
	DraftExpanded  DraftPhase = "Expanded"
	DraftFailed    DraftPhase = "Failed"
)

// ClusterDeploymentConfigStatus is the draft's state, written by the operator.
type ClusterDeploymentConfigStatus struct {
	// Phase is Draft, Expanding, Expanded or Failed.
	// +optional
	Phase DraftPhase `json:"phase,omitempty"`

	// Message holds the validation findings.
	// +optional
	Message string `json:"message,omitempty"`

	// NodeRefs are the names of the Nodes the draft names.
	// +optional
	NodeRefs []string `json:"nodeRefs,omitempty"`

	// ClusterRef names the StorageCluster created from the draft.
	// +optional
	ClusterRef string `json:"clusterRef,omitempty"`
}

// ClusterDeploymentConfig is a draft storage cluster that discovery writes and an approval
// deploys.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbcdc
// +kubebuilder:printcolumn:name="Approved",type=boolean,JSONPath=`.spec.approved`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.status.clusterRef`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterDeploymentConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterDeploymentConfigSpec   `json:"spec,omitempty"`
	Status ClusterDeploymentConfigStatus `json:"status,omitempty"`
}

// ClusterDeploymentConfigList is a list of ClusterDeploymentConfigs.
//
// +kubebuilder:object:root=true
type ClusterDeploymentConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterDeploymentConfig `json:"items"`
}
