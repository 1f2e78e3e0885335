package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OCIPullSpec names an OCI artifact for `fleet-controller agent` to pull on a workload cluster,
// through the registry chain the hub delivered for a workspace.
//
// +kubebuilder:validation:XValidation:rule="has(self.tag) != has(self.digest)",message="set exactly one of tag and digest"
type OCIPullSpec struct {
	// Workspace names the chain to pull through: the agent reads the chain Secret
	// fleet-system/oci-chain-<workspace> that the hub delivers to the cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Workspace string `json:"workspace"`

	// Repository is the artifact's path below each registry's namespace, such as "apps/web".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`
	Repository string `json:"repository"`

	// Tag is the artifact's tag; it is resolved to a digest once per pull. Set tag or digest.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_][a-zA-Z0-9._-]*$`
	Tag string `json:"tag,omitempty"`

	// Digest is the artifact's manifest digest, such as "sha256:…". Set tag or digest.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`
	Digest string `json:"digest,omitempty"`
}

// OCIPullState is the state of a pull.
// +kubebuilder:validation:Enum=Pulling;Pulled;WaitingForArtifact;Failed
type OCIPullState string

// Pull states, as the puller's.
const (
	// OCIPullPulling: the agent is downloading the artifact from registry; pulledBytes and
	// totalBytes tell how far it has got.
	OCIPullPulling OCIPullState = "Pulling"
	// OCIPullPulled: the artifact is in the agent's cache.
	OCIPullPulled OCIPullState = "Pulled"
	// OCIPullWaitingForArtifact: a registry lacks the artifact and the agent waits for
	// replication until nextRetry; not an error.
	OCIPullWaitingForArtifact OCIPullState = "WaitingForArtifact"
	// OCIPullFailed: the last attempt failed (reason gives the class); when every registry of
	// the chain failed, the agent starts the pull over later.
	OCIPullFailed OCIPullState = "Failed"
)

// Reasons of an OCIPull's Ready condition.
const (
	// ReasonPulled: the artifact is in the agent's cache.
	ReasonPulled = "Pulled"
	// ReasonWaitingForArtifact: a registry lacks the artifact; replication is behind.
	ReasonWaitingForArtifact = "WaitingForArtifact"
	// ReasonPulling: the agent is downloading the artifact.
	ReasonPulling = "Pulling"
	// ReasonPullFailed: every registry of the chain failed; status.reason is the last class.
	ReasonPullFailed = "PullFailed"
	// ReasonChainNotDelivered: the workspace's chain Secret is not on the cluster (yet): the
	// hub has not delivered it.
	ReasonChainNotDelivered = "ChainNotDelivered"
	// ReasonChainInvalid: the chain Secret is on the cluster but cannot be used.
	ReasonChainInvalid = "ChainInvalid"
)

// OCIPullStatus is the pull's progress, written by `fleet-controller agent`.
type OCIPullStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// State is Pulling, Pulled, WaitingForArtifact or Failed. A status whose
	// observedGeneration is not the object's generation is the previous spec's: the agent has
	// not started on this one.
	// +optional
	State OCIPullState `json:"state,omitempty"`

	// Reason is the failure class of the last attempt (Unauthorized, TLS, Unreachable, NotFound
	// or IntegrityMismatch); empty after a success.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Registry is the registry of the chain that served the artifact, or that was last tried.
	// +optional
	Registry string `json:"registry,omitempty"`

	// Digest is the artifact's manifest digest, resolved from the tag when a tag is asked for.
	// +optional
	Digest string `json:"digest,omitempty"`

	// Attempts counts the attempts at registry in this pull.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// NextRetry is when the agent asks registry again while WaitingForArtifact, or starts the
	// pull over after every registry failed (Failed; the wait doubles per failure, with jitter,
	// up to the agent's --retry-failed-max).
	// +optional
	NextRetry *metav1.Time `json:"nextRetry,omitempty"`

	// LastSuccess is when the artifact was last pulled.
	// +optional
	LastSuccess *metav1.Time `json:"lastSuccess,omitempty"`

	// Verified names who signed the artifact pulled, when the chain's route verifies
	// signatures: "cosign key SHA256:<fingerprint>" or "notation x509.subject <subject>
	// (certificate SHA256:<fingerprint>)".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Verified string `json:"verified,omitempty"`

	// PulledBytes is how much of the artifact the current or last attempt has received, content
	// already in the agent's cache counted; updated every few seconds while Pulling.
	// +optional
	PulledBytes int64 `json:"pulledBytes,omitempty"`

	// TotalBytes is the size of the artifact's content (manifests, config and layers) as far as
	// its manifests tell so far.
	// +optional
	TotalBytes int64 `json:"totalBytes,omitempty"`

	// Message is the last attempt's error, for people; it never holds credentials.
	// +optional
	Message string `json:"message,omitempty"`

	// Size is the pulled artifact's size in bytes: its manifests, configs and layers, as its
	// manifests in the agent's cache tell; set once Pulled.
	// +optional
	Size int64 `json:"size,omitempty"`

	// PushedAt is when the artifact was made, from its manifest's
	// org.opencontainers.image.created annotation; unset when the manifest has none (the hub
	// then takes the first successful pull of the digest it observed, see OCIReplication).
	// +optional
	PushedAt *metav1.Time `json:"pushedAt,omitempty"`

	// Failovers are the registries of the chain this pull gave up on, in order, each with the
	// class of its failure: why a later registry served, or why the pull failed. It is a sample:
	// the last ones that fit OCM's 1,024 bytes for a feedback value; FailoverCount counts them all.
	// +optional
	// +listType=atomic
	Failovers []Failover `json:"failovers,omitempty"`

	// FailoverCount is how many registries this pull gave up on, failovers listed or not.
	// +optional
	FailoverCount int32 `json:"failoverCount,omitempty"`

	// Route is the hub route whose chain the pull used.
	// +optional
	Route string `json:"route,omitempty"`

	// Conditions: Ready is True once the artifact is pulled; False with reason Pulling,
	// WaitingForArtifact, PullFailed, ChainNotDelivered or ChainInvalid otherwise.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MaxFeedbackJSON is OCM's limit for a list or object status feedback value, in bytes: the work
// agent drops a larger one without a word.
const MaxFeedbackJSON = 1024

// SetFailovers records fs: all of them in FailoverCount, and in Failovers the last ones whose
// JSON fits MaxFeedbackJSON, so that the status feedback carries them to the hub.
func (s *OCIPullStatus) SetFailovers(fs []Failover) {
	s.FailoverCount = int32(min(len(fs), 1<<31-1)) //nolint:gosec // bounded
	s.Failovers = nil
	for from := range len(fs) + 1 {
		if raw, err := json.Marshal(fs[from:]); err == nil && len(raw) <= MaxFeedbackJSON {
			if from < len(fs) {
				s.Failovers = append([]Failover(nil), fs[from:]...)
			}
			return
		}
	}
}

// Failover is a registry a pull gave up on.
type Failover struct {
	// Registry is the registry's name in the chain.
	Registry string `json:"registry"`
	// Reason is the failure class: Unauthorized, TLS, Unreachable, NotFound (after the
	// replication wait) or IntegrityMismatch.
	Reason string `json:"reason"`
}

// OCIPull asks the agent on a workload cluster to pull an OCI artifact into its content-addressed
// cache, through the registry chain the hub delivered for a workspace, with failover.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ocip,categories=fleet
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Registry",type=string,JSONPath=`.status.registry`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.status.digest`,priority=1
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OCIPull struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OCIPullSpec   `json:"spec"`
	Status OCIPullStatus `json:"status,omitempty"`
}

// OCIPullList is a list of OCIPulls.
//
// +kubebuilder:object:root=true
type OCIPullList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIPull `json:"items"`
}
