package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FleetAppSpec installs one chart as one Helm release on one named cluster.
// +kubebuilder:validation:XValidation:rule="has(self.releaseName) == has(oldSelf.releaseName) && (!has(self.releaseName) || self.releaseName == oldSelf.releaseName)",message="releaseName is immutable: install under another name with another FleetApp"
type FleetAppSpec struct {
	// Chart is the name of a FleetChart in the app's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Chart string `json:"chart"`

	// Cluster is the OCM ManagedCluster the release is installed on; it should be joined to a
	// site (FleetClusterJoin) and Ready. It cannot be changed: move an app by replacing it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable: move the app by replacing it"
	Cluster string `json:"cluster"`

	// ReleaseName is the Helm release's name; the app's name when unset. It cannot be changed.
	// +optional
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ReleaseName string `json:"releaseName,omitempty"`

	// Namespace on the cluster the release is installed in, created if missing. It must be the
	// workspace's on the cluster: created by the agent for it, or labelled
	// fleet.umkim.io/workspace=<workspace> by the cluster's administrator. It cannot be changed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="namespace is immutable: move the release by replacing the app"
	Namespace string `json:"namespace"`

	// Values for the chart, a JSON object as Helm's values.yaml would give it.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesSecretRef names a key of a Secret in the app's namespace that holds values (YAML or
	// JSON) which must not be written in the app, such as passwords; they are merged over
	// values. The Secret is delivered to the cluster with the release request.
	// +optional
	ValuesSecretRef *SecretKeyRef `json:"valuesSecretRef,omitempty"`

	// Adopt lets the cluster's agent take over an existing Helm release of the same name and
	// namespace that it did not install for this app (installed by hand with helm, or for
	// another app): it upgrades it with this app's chart and values and records the app as its
	// owner. Without it the agent leaves such a release untouched and the app's phase is
	// OwnedElsewhere.
	// +optional
	Adopt bool `json:"adopt,omitempty"`

	// Repairs counts the drift repairs asked for: raising it has the cluster's agent upgrade the
	// release once with the same chart and values, which restores the objects changed or deleted
	// on the cluster since Helm deployed them (status.drift lists them). fleet_app raises it on
	// an apply with repair_drift = true while the release has drifted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Repairs int64 `json:"repairs,omitempty"`
}

// ReleaseName is the app's Helm release name.
func (a *FleetApp) ReleaseName() string {
	if a.Spec.ReleaseName != "" {
		return a.Spec.ReleaseName
	}
	return a.Name
}

// AppPhase is where an app's release stands.
// +kubebuilder:validation:Enum=Pending;Pulling;WaitingForArtifact;Installing;Deployed;Failed;OwnedElsewhere
type AppPhase string

// Phases of an app.
const (
	// AppPending: the release request is not on the cluster yet, or the cluster reported nothing.
	AppPending AppPhase = "Pending"
	// AppPulling: the cluster's agent is pulling the chart through its chain.
	AppPulling AppPhase = "Pulling"
	// AppWaitingForArtifact: a registry of the chain lacks the chart (replication behind); the
	// agent retries.
	AppWaitingForArtifact AppPhase = "WaitingForArtifact"
	// AppInstalling: the chart is pulled and Helm installs or upgrades the release.
	AppInstalling AppPhase = "Installing"
	// AppDeployed: Helm's last install or upgrade of the release succeeded.
	AppDeployed AppPhase = "Deployed"
	// AppFailed: the pull failed at every registry, or Helm failed; the message says which.
	AppFailed AppPhase = "Failed"
	// AppOwnedElsewhere: the cluster has a Helm release of that name and namespace that the agent
	// did not install for this app; it is left untouched. Set spec.adopt to take it over, or
	// pick another release name or namespace.
	AppOwnedElsewhere AppPhase = "OwnedElsewhere"
)

// FleetAppStatus is written by `fleet-controller hub` (the apps reconciler) from what the
// cluster's agent reports through the work's status feedback.
type FleetAppStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ChartGeneration is the generation of the FleetChart (spec.chart) this status describes: a
	// new chart version or digest changes the chart, not the app, so that a status of the app's
	// generation may still describe the chart before. Unset while the chart is missing.
	// +optional
	ChartGeneration int64 `json:"chartGeneration,omitempty"`

	// Phase of the release.
	// +optional
	Phase AppPhase `json:"phase,omitempty"`

	// Revision is the Helm release's revision: 1 after the install, one more per upgrade.
	// +optional
	Revision int32 `json:"revision,omitempty"`

	// WorkName is the ManifestWork, in the cluster's namespace, that carries the release request.
	// +optional
	WorkName string `json:"workName,omitempty"`

	// Digest of the chart the cluster pulled.
	// +optional
	Digest string `json:"digest,omitempty"`

	// Registry that served the chart, or the one the pull waits on or failed at last.
	// +optional
	Registry string `json:"registry,omitempty"`

	// Reason of the pull's state: its failure class (Unauthorized, TLS, Unreachable, NotFound,
	// IntegrityMismatch) when not pulled.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Attempts the pull made at the current registry.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// NextRetry is when the pull asks a registry again.
	// +optional
	NextRetry *metav1.Time `json:"nextRetry,omitempty"`

	// Message says what the release waits for or why it failed.
	// +optional
	Message string `json:"message,omitempty"`

	// Drift is what the cluster's agent found at its last drift check of the release deployed
	// for this generation: the objects of the release changed or deleted on the cluster (count,
	// and a sample). Unset until the agent reported a check for the current generation.
	// +optional
	Drift *ReleaseDrift `json:"drift,omitempty"`

	// Conditions: Delivered (the release request is in a ManifestWork the cluster applied at its
	// current generation) and Ready (the release is Deployed at the current generation); both are
	// False with reason NameTaken when the app's ManifestWork name is held by another object, and
	// Unknown with reason ClusterNotReporting while the cluster does not report. Stalled (True,
	// reason WorkTooLarge) while the app's work is over the work budget and no values Secret
	// could change it; Ready then repeats it.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FleetApp installs a FleetChart as a Helm release on one named cluster: the hub delivers the
// release request in a ManifestWork; the cluster's agent pulls the chart through its routed
// registry chain and installs it with Helm. Deleting the app uninstalls the release.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fapp,categories=fleet
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.namespace`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Registry",type=string,JSONPath=`.status.registry`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FleetApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetAppSpec   `json:"spec"`
	Status FleetAppStatus `json:"status,omitempty"`
}

// FleetAppList is a list of FleetApps.
//
// +kubebuilder:object:root=true
type FleetAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetApp `json:"items"`
}
