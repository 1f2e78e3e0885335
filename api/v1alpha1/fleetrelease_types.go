package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UninstallFinalizer is the finalizer `fleet-controller agent` puts on a FleetRelease so that
// deleting it uninstalls the Helm release first.
const UninstallFinalizer = "fleet.umkim.io/helm-uninstall"

// Labels `fleet-controller agent` sets on the Helm releases it installs (Helm keeps them on the
// release's Secrets): the release's owner. The agent upgrades and uninstalls only a release whose
// labels name the FleetRelease's workspace and app (ReleaseOwnedBy), unless the FleetRelease says
// adopt. Every value is a valid label value whatever the app's name.
const (
	// ReleaseWorkspaceLabel is the workspace (hub namespace) whose app installed the release.
	ReleaseWorkspaceLabel = "fleet.umkim.io/workspace"
	// ReleaseAppLabel is the name of the FleetApp that installed the release, for people: cut
	// with a hash suffix to the 63 characters of a label value when longer (BoundedName), so two
	// names may share it (a long name and one spelled like its cut form).
	ReleaseAppLabel = "fleet.umkim.io/app"
	// ReleaseAppHashLabel identifies the app exactly: a hash of its whole name (AppHash).
	ReleaseAppHashLabel = "fleet.umkim.io/app-hash"
)

// ReleaseOwner is the owner labels of a Helm release installed for the app of workspace.
func ReleaseOwner(workspace, app string) map[string]string {
	return map[string]string{ReleaseWorkspaceLabel: workspace, ReleaseAppLabel: BoundedName(app, MaxLabel), ReleaseAppHashLabel: AppHash(app)}
}

// AppHash is the ReleaseAppHashLabel value of app: 32 hex digits of the SHA-256 of its name.
func AppHash(app string) string {
	sum := sha256.Sum256([]byte(app))
	return hex.EncodeToString(sum[:16])
}

// ReleaseOwnedBy tells whether a release's labels name the app of workspace as its owner: the
// workspace and the app's hash; or, on a release labelled before the hash label existed (none),
// the workspace and the app label, which was then the same.
func ReleaseOwnedBy(labels map[string]string, workspace, app string) bool {
	if labels[ReleaseWorkspaceLabel] != workspace {
		return false
	}
	if h, ok := labels[ReleaseAppHashLabel]; ok {
		return h == AppHash(app)
	}
	return labels[ReleaseAppLabel] == BoundedName(app, MaxLabel)
}

// FleetReleaseSpec asks `fleet-controller agent` on a workload cluster to install the chart an
// OCIPull of the same namespace pulled, as a Helm release. The hub's apps reconciler writes it
// from a FleetApp; it is not meant to be written by hand.
type FleetReleaseSpec struct {
	// Workspace is the hub workspace (namespace) of the app: Helm acts as the workspace's
	// ServiceAccount, and the release records it as its owner.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workspace is immutable"
	Workspace string `json:"workspace"`

	// App is the name of the FleetApp on the hub, recorded on the release as its owner with the
	// workspace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="app is immutable"
	App string `json:"app"`

	// Pull is the name of the OCIPull, in the release's namespace, that pulls the chart.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pull string `json:"pull"`

	// ReleaseName is the Helm release's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="releaseName is immutable"
	ReleaseName string `json:"releaseName"`

	// Namespace the release is installed in, created if missing.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="namespace is immutable"
	Namespace string `json:"namespace"`

	// Values for the chart.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesSecretRef names a key of a Secret in the release's namespace whose values (YAML or
	// JSON) are merged over values.
	// +optional
	ValuesSecretRef *SecretKeyRef `json:"valuesSecretRef,omitempty"`

	// Adopt lets the agent take over a Helm release of the same name and namespace that it did
	// not install for this app (one installed by hand, or for another app): it upgrades it and
	// records the app as its owner. Without it such a release is left untouched and the
	// FleetRelease's phase is OwnedElsewhere.
	// +optional
	Adopt bool `json:"adopt,omitempty"`

	// Repairs counts the drift repairs the app asked for (the FleetApp's spec.repairs): a new
	// count is a new generation, which has the agent upgrade the release once with the same
	// chart and values, and Helm's three-way merge restores the objects changed on the cluster.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Repairs int64 `json:"repairs,omitempty"`
}

// ReleasePhase is where a release stands on the cluster.
// +kubebuilder:validation:Enum=Pending;Installing;Deployed;Failed;OwnedElsewhere
type ReleasePhase string

// Phases of a release.
const (
	// ReleasePending: the chart is not pulled yet (the OCIPull says why).
	ReleasePending ReleasePhase = "Pending"
	// ReleaseInstalling: Helm installs or upgrades the release.
	ReleaseInstalling ReleasePhase = "Installing"
	// ReleaseDeployed: Helm's last install or upgrade succeeded.
	ReleaseDeployed ReleasePhase = "Deployed"
	// ReleaseFailed: the chart could not be loaded or Helm failed.
	ReleaseFailed ReleasePhase = "Failed"
	// ReleaseOwnedElsewhere: a Helm release of that name and namespace exists that the agent did
	// not install for this app (installed by hand, or for another app); the agent leaves it
	// untouched, never upgrades nor uninstalls it, unless spec.adopt is set.
	ReleaseOwnedElsewhere ReleasePhase = "OwnedElsewhere"
)

// FleetReleaseStatus is written by `fleet-controller agent`.
type FleetReleaseStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase of the release.
	// +optional
	Phase ReleasePhase `json:"phase,omitempty"`

	// Revision is the Helm release's revision.
	// +optional
	Revision int32 `json:"revision,omitempty"`

	// Digest of the chart last installed.
	// +optional
	Digest string `json:"digest,omitempty"`

	// Chart is the installed chart's name-version.
	// +optional
	Chart string `json:"chart,omitempty"`

	// Message says why the release failed or what it waits for.
	// +optional
	Message string `json:"message,omitempty"`

	// Drift is what the agent's last drift check of the deployed release found: the objects of
	// Helm's release manifest whose fields, as the chart sets them, differ on the cluster or that
	// are gone. Unset until the first check of the release.
	// +optional
	Drift *ReleaseDrift `json:"drift,omitempty"`
}

// MaxDriftObjects is the most objects ReleaseDrift.Objects lists.
const MaxDriftObjects = 10

// ReleaseDrift is a drift check's finding: how many objects of a release drifted, and a sample
// of them small enough for OCM's status feedback.
type ReleaseDrift struct {
	// Count is how many objects of the release drifted, listed or not; 0 when none did.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`

	// Objects are drifted objects, ordered by kind, namespace and name: the first ones (at most
	// MaxDriftObjects) whose JSON fits OCM's 1,024 bytes for a feedback value.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Objects []ObjectRef `json:"objects,omitempty"`
}

// ObjectRef names an object on a workload cluster.
type ObjectRef struct {
	// Kind of the object, e.g. Deployment.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Namespace of the object; empty for a cluster-scoped one.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// String is "<kind> <namespace>/<name>", or "<kind> <name>" for a cluster-scoped object.
func (o ObjectRef) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// SetDrift records drifted (ordered as the sample should be): all of them in Count, and in
// Objects the first ones that fit MaxDriftObjects and MaxFeedbackJSON, so that the status
// feedback carries them to the hub.
func (s *FleetReleaseStatus) SetDrift(drifted []ObjectRef) {
	d := &ReleaseDrift{Count: int32(min(len(drifted), 1<<31-1))} //nolint:gosec // bounded
	for n := min(len(drifted), MaxDriftObjects); n > 0; n-- {
		if raw, err := json.Marshal(drifted[:n]); err == nil && len(raw) <= MaxFeedbackJSON {
			d.Objects = append([]ObjectRef(nil), drifted[:n]...)
			break
		}
	}
	s.Drift = d
}

// FleetRelease is a Helm release on a workload cluster, installed by `fleet-controller agent`
// from a chart an OCIPull brought through the routed registry chain. Deleting it uninstalls the
// release.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=frel,categories=fleet
// +kubebuilder:printcolumn:name="Release",type=string,JSONPath=`.spec.releaseName`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.namespace`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.status.chart`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FleetRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetReleaseSpec   `json:"spec"`
	Status FleetReleaseStatus `json:"status,omitempty"`
}

// FleetReleaseList is a list of FleetReleases.
//
// +kubebuilder:object:root=true
type FleetReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetRelease `json:"items"`
}
