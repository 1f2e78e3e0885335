package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperatorOpsAction is what a run does; the simulator knows Discover only.
// +kubebuilder:validation:Enum=Discover
type OperatorOpsAction string

// ActionDiscover inspects the site's nodes and writes a draft ClusterDeploymentConfig.
const ActionDiscover OperatorOpsAction = "Discover"

// OperatorOpsSpec asks the operator for one run.
type OperatorOpsSpec struct {
	// Action is the run's kind.
	Action OperatorOpsAction `json:"action"`

	// Discover configures a Discover run.
	// +optional
	Discover *DiscoverSpec `json:"discover,omitempty"`
}

// DiscoverSpec selects the nodes a discovery inspects and names the draft it writes. Workers
// and a nodeSelector are exclusive, as in the operator's published CRD.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.workers) && size(self.workers) > 0 && has(self.nodeSelector) && size(self.nodeSelector) > 0)",message="workers and nodeSelector are exclusive: state one or the other"
type DiscoverSpec struct {
	// ConfigName names the draft ClusterDeploymentConfig; empty means the run's name.
	// +optional
	ConfigName string `json:"configName,omitempty"`

	// ClusterRef names an existing StorageCluster the run grows (accepted, not acted on).
	// +optional
	ClusterRef string `json:"clusterRef,omitempty"`

	// Workers restricts the run to these Node names; empty means every worker.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=253
	Workers []string `json:"workers,omitempty"`

	// EnableControlPlaneNodes includes control-plane Nodes, which are skipped otherwise.
	// +optional
	EnableControlPlaneNodes bool `json:"enableControlPlaneNodes,omitempty"`

	// NodeSelector restricts the run to Nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// OperatorOpsPhase is a run's progress.
// +kubebuilder:validation:Enum=Inspecting;Probing;Writing;Completed;Failed
type OperatorOpsPhase string

// Phases of a Discover run, in order; Completed and Failed are final.
const (
	OpsInspecting OperatorOpsPhase = "Inspecting"
	OpsProbing    OperatorOpsPhase = "Probing"
	OpsWriting    OperatorOpsPhase = "Writing"
	OpsCompleted  OperatorOpsPhase = "Completed"
	OpsFailed     OperatorOpsPhase = "Failed"
)

// OperatorOpsStatus is the run's progress, written by the operator.
type OperatorOpsStatus struct {
	// Phase is Inspecting, Probing, Writing, then Completed or Failed.
	// +optional
	Phase OperatorOpsPhase `json:"phase,omitempty"`

	// Step describes what the run does now.
	// +optional
	Step string `json:"step,omitempty"`

	// Message explains the outcome.
	// +optional
	Message string `json:"message,omitempty"`

	// ConfigRef names the draft ClusterDeploymentConfig the run wrote.
	// +optional
	ConfigRef string `json:"configRef,omitempty"`
}

// OperatorOps is one operation of the storage operator on the site, such as a discovery.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=operatorops,singular=operatorops,shortName=sbops
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.action`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.status.configRef`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OperatorOps struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OperatorOpsSpec   `json:"spec"`
	Status OperatorOpsStatus `json:"status,omitempty"`
}

// OperatorOpsList is a list of OperatorOps.
//
// +kubebuilder:object:root=true
type OperatorOpsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OperatorOps `json:"items"`
}
