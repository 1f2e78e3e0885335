package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How an artifact's pushed-at time was found (ReplicatedArtifact.PushedAtFrom).
const (
	// PushedAtAnnotation: the manifest's org.opencontainers.image.created annotation.
	PushedAtAnnotation = "Annotation"
	// PushedAtFirstServed: the manifest has no such annotation; the earliest successful pull of
	// the digest, from any registry, by any cluster of the workspace, that the hub observed.
	PushedAtFirstServed = "FirstServed"
)

// MaxReplicatedArtifacts bounds OCIReplication.status.artifacts: the artifacts pushed last.
const MaxReplicatedArtifacts = 50

// OCIReplicationStatus is how far behind one registry of a workspace is, as its clusters'
// pulls show, written by `fleet-controller hub`.
type OCIReplicationStatus struct {
	// Registry is the registry's name in the workspace (that of its registry Secret).
	Registry string `json:"registry"`

	// Window is how far back pushed artifacts are kept and counted.
	Window metav1.Duration `json:"window"`

	// Measured counts the artifacts of the window that clusters pulled from this registry: the
	// ones P50 and P95 are over.
	// +optional
	Measured int32 `json:"measured,omitempty"`

	// P50 is the median replication lag of the measured artifacts: the time from an artifact's
	// pushed-at to its first successful pull from this registry by any cluster. Unset when no
	// artifact was measured.
	// +optional
	P50 *metav1.Duration `json:"p50,omitempty"`

	// P95 is the 95th percentile of the same lags (nearest rank).
	// +optional
	P95 *metav1.Duration `json:"p95,omitempty"`

	// Waiting counts the artifacts of the window that a cluster asked this registry for and that
	// no cluster has pulled from it yet: replication has not reached it, or it is slower than
	// the clusters' replication wait and they pulled from a later registry.
	// +optional
	Waiting int32 `json:"waiting,omitempty"`

	// OldestWaiting is the pushed-at time of the oldest of the waiting artifacts.
	// +optional
	OldestWaiting *metav1.Time `json:"oldestWaiting,omitempty"`

	// Artifacts are the artifacts of the window this registry was asked for, newest pushed
	// first, at most 50.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Artifacts []ReplicatedArtifact `json:"artifacts,omitempty"`
}

// ReplicatedArtifact is one artifact a registry was asked for, and when it first served it.
type ReplicatedArtifact struct {
	// Repository is the artifact's path below the registries, such as "apps/web".
	Repository string `json:"repository"`
	// Digest is the artifact's manifest digest.
	Digest string `json:"digest"`
	// PushedAt is when the artifact was pushed, as PushedAtFrom tells.
	PushedAt metav1.Time `json:"pushedAt"`
	// PushedAtFrom is Annotation (the manifest's org.opencontainers.image.created) or
	// FirstServed (the earliest successful pull of the digest the hub observed: a lower bound of
	// the lag, since the artifact was pushed before).
	PushedAtFrom string `json:"pushedAtFrom"`
	// FirstPulled is the first successful pull from this registry by any cluster, as the hub
	// observed it; unset while the artifact is waiting.
	// +optional
	FirstPulled *metav1.Time `json:"firstPulled,omitempty"`
	// Lag is FirstPulled less PushedAt (never below zero); unset while waiting.
	// +optional
	Lag *metav1.Duration `json:"lag,omitempty"`
}

// OCIReplication is the observed replication lag of one registry of a workspace: one per
// registry that a cluster of the workspace was asked to pull from, named after the registry,
// written by `fleet-controller hub` from what the clusters' agents report about their pulls.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ocirep,categories=fleet
// +kubebuilder:printcolumn:name="Registry",type=string,JSONPath=`.status.registry`
// +kubebuilder:printcolumn:name="Measured",type=integer,JSONPath=`.status.measured`
// +kubebuilder:printcolumn:name="P50",type=string,JSONPath=`.status.p50`
// +kubebuilder:printcolumn:name="P95",type=string,JSONPath=`.status.p95`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waiting`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.status.window`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OCIReplication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status OCIReplicationStatus `json:"status,omitempty"`
}

// OCIReplicationList is a list of OCIReplications.
//
// +kubebuilder:object:root=true
type OCIReplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIReplication `json:"items"`
}
