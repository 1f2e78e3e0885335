package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RegistryProbeSpec asks `fleet-controller agent` on a workload cluster to probe every registry
// of a workspace's chain: the hub delivers one, named like the chain Secret, beside it.
type RegistryProbeSpec struct {
	// Workspace names the chain whose registries are probed: the chain Secret
	// fleet-system/oci-chain-<workspace>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Workspace string `json:"workspace"`
}

// Reachable is the state of a registry that answered the probe; any other state is a failure
// class of the puller (Unauthorized, TLS, Unreachable).
const Reachable = "Reachable"

// RegistryProbeResult is what the last probe of one registry found.
type RegistryProbeResult struct {
	// Registry is the registry's name in the chain.
	Registry string `json:"registry"`
	// State is Reachable, or the failure class of the probe: Unauthorized, TLS or Unreachable.
	State string `json:"state"`
	// Since is when the registry entered State.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Message is the probe's error, for people; empty when Reachable. It never holds credentials.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// RegistryProbeStatus is the last probe of the chain, written by `fleet-controller agent`.
type RegistryProbeStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ProbedAt is when the results were last confirmed. The agent probes every --probe-interval,
	// but writes only when a result changes and, while none does, at least every
	// --probe-refresh: ProbedAt is never older than that bound while the agent runs.
	// +optional
	ProbedAt *metav1.Time `json:"probedAt,omitempty"`
	// Results is Registries in one scalar, "<registry>=<state>" joined by ",", in chain order:
	// what the hub's status feedback carries back.
	// +optional
	Results string `json:"results,omitempty"`
	// Registries are the results, in chain order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Registries []RegistryProbeResult `json:"registries,omitempty"`
}

// RegistryProbe is the connectivity probe of one workspace's registries from one workload cluster:
// the hub delivers it in fleet-system with the workspace's chain, and the agent writes its status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=fleet
// +kubebuilder:printcolumn:name="Workspace",type=string,JSONPath=`.spec.workspace`
// +kubebuilder:printcolumn:name="Results",type=string,JSONPath=`.status.results`
// +kubebuilder:printcolumn:name="Probed At",type=date,JSONPath=`.status.probedAt`
type RegistryProbe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RegistryProbeSpec   `json:"spec"`
	Status RegistryProbeStatus `json:"status,omitempty"`
}

// RegistryProbeList is a list of RegistryProbes.
//
// +kubebuilder:object:root=true
type RegistryProbeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RegistryProbe `json:"items"`
}

// RegistryReachability is one registry's reachability from one cluster, as its agent reported
// it through the status feedback of the chain's ManifestWork.
type RegistryReachability struct {
	// Registry is the registry's name in the chain.
	Registry string `json:"registry"`
	// State is Reachable, or the probe's failure class: Unauthorized, TLS or Unreachable.
	State string `json:"state"`
	// ProbedAt is when the cluster's agent last confirmed the result (at most its --probe-refresh
	// old while the agent runs and reports).
	// +optional
	ProbedAt *metav1.Time `json:"probedAt,omitempty"`
}
