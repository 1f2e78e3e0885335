// Package appwork is the ManifestWork that carries a FleetApp's release request to its cluster,
// and what the cluster's agent reports back through OCM's status feedback.
//
// The work lives in the app cluster's namespace on the hub and carries, in fleet-system on the
// cluster:
//   - an OCIPull of the chart (internal/pullwork's manifest and feedback rules): the digest when
//     the FleetChart pins one, else its version as the tag;
//   - a FleetRelease that installs what the pull brought, with the UninstallFinalizer already
//     set, so that deleting the work (foreground, OCM's default) has the agent uninstall the
//     release before the work goes;
//   - when the app names a values Secret, a Secret with that one key, which the FleetRelease's
//     valuesSecretRef names.
//
// The FleetRelease's status comes back by JSONPaths feedback beside the OCIPull's, its drift
// check's finding too (a count, and a sample of the drifted objects). A release
// status is trusted (Fresh) only when the work is applied at its generation and the agent
// observed the generation of the FleetRelease on the cluster; anything else is Unknown, never
// Failed, as pullwork does for pulls.
package appwork

import (
	"cmp"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// Component is the hub.ComponentLabel value of app works.
const Component = "app"

// Unknown is the phase of a release whose status has not come back for the work asked for.
const Unknown = "Unknown"

// Names are the names of what an app's work carries: the work in the cluster's namespace on the
// hub, which is also the name of its OCIPull and FleetRelease in fleet-system, and the values
// Secret beside them.
type Names struct {
	Work, ValuesSecret string
}

// NamesOf is the names of app's work: app.<workspace>.<name> and app-values.<workspace>.<name>
// (v1alpha1.WorkspaceObjectName), which no other app of any workspace shares.
func NamesOf(app *v1alpha1.FleetApp) Names {
	return Names{
		Work:         v1alpha1.WorkspaceObjectName(WorkPrefix, app.Namespace, app.Name, v1alpha1.MaxSubdomain),
		ValuesSecret: v1alpha1.WorkspaceObjectName(ValuesPrefix, app.Namespace, app.Name, v1alpha1.MaxSubdomain),
	}
}

// Prefixes of the names of an app's objects, one per kind of object (a suffix on another
// object's name could be the name of another app's).
const (
	WorkPrefix   = "app"
	ValuesPrefix = "app-values"
)

// Owner is the hub.OwnerAnnotation value of app's work.
func Owner(app *v1alpha1.FleetApp) string { return app.Namespace + "/" + app.Name }

var releaseGVR = struct{ group, resource string }{v1alpha1.GroupVersion.Group, "fleetreleases"}

// Feedback names: each is a JSONPath on the FleetRelease on the cluster.
var releasePaths = []workv1.JsonPath{
	{Name: "generation", Path: ".metadata.generation"},
	{Name: "observedGeneration", Path: ".status.observedGeneration"},
	{Name: "phase", Path: ".status.phase"},
	{Name: "revision", Path: ".status.revision"},
	{Name: "digest", Path: ".status.digest"},
	{Name: "chart", Path: ".status.chart"},
	{Name: "message", Path: ".status.message"},
	{Name: "driftCount", Path: ".status.drift.count"},
	// A list, bounded by the agent to fit OCM's 1,024 bytes (driftCount counts them all): it
	// comes back only where the work agent runs with the RawFeedbackJsonString feature gate.
	{Name: "driftObjects", Path: ".status.drift.objects"},
}

// New is the work that carries app's release of chart to the app's cluster, under names (NamesOf
// but for a work adopted from before those names). valuesSecret is the Secret
// app.Spec.ValuesSecretRef names (nil when it names none); only the named key goes.
func New(app *v1alpha1.FleetApp, chart *v1alpha1.FleetChart, valuesSecret *corev1.Secret, names Names) (*workv1.ManifestWork, error) {
	name := names.Work
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: app.Spec.Cluster,
		Labels:      map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.WorkspaceLabel: app.Namespace, hub.ComponentLabel: Component},
		Annotations: map[string]string{hub.OwnerAnnotation: Owner(app)},
	}}
	pull := v1alpha1.OCIPullSpec{Workspace: app.Namespace, Repository: chart.Spec.Repository, Digest: chart.Spec.Digest}
	if pull.Digest == "" {
		pull.Tag = chart.Spec.Version
	}
	if err := pullwork.Add(w, pullwork.Request{Name: name, Spec: pull}); err != nil {
		return nil, err
	}

	release := v1alpha1.FleetRelease{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FleetRelease"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ocichain.Namespace,
			// Set here, not only by the agent: deleting the work then waits for the uninstall.
			Finalizers: []string{v1alpha1.UninstallFinalizer}},
		Spec: v1alpha1.FleetReleaseSpec{Workspace: app.Namespace, App: app.Name, Pull: name, ReleaseName: app.ReleaseName(),
			Namespace: app.Spec.Namespace, Values: app.Spec.Values, Adopt: app.Spec.Adopt, Repairs: app.Spec.Repairs},
	}
	var secret *corev1.Secret
	if ref := app.Spec.ValuesSecretRef; ref != nil {
		if valuesSecret == nil {
			return nil, fmt.Errorf("app %s names values Secret %s: pass it", Owner(app), ref.Name)
		}
		data, ok := valuesSecret.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("values Secret %s/%s has no key %q", valuesSecret.Namespace, valuesSecret.Name, ref.Key)
		}
		secret = &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: names.ValuesSecret, Namespace: ocichain.Namespace},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{ref.Key: data},
		}
		release.Spec.ValuesSecretRef = &v1alpha1.SecretKeyRef{Name: secret.Name, Key: ref.Key}
	}
	if err := add(w, release); err != nil {
		return nil, err
	}
	w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: releaseGVR.group, Resource: releaseGVR.resource, Name: name, Namespace: ocichain.Namespace},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: releasePaths}},
		FeedbackScrapeType: workv1.FeedbackWatchType,
	})
	if secret != nil {
		if err := add(w, secret); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func add(w *workv1.ManifestWork, obj any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	return nil
}

// Report is what the app's cluster reported through the work.
type Report struct {
	// Delivered: the work is applied at its generation (work.Applied); DeliveryMessage says why not.
	Delivered       bool
	DeliveryMessage string
	// Pull is the chart's OCIPull; its State is pullwork.Unknown until fresh status came back.
	Pull    pullwork.Pull
	Release Release
}

// Release is the FleetRelease's status as its feedback carries it.
type Release struct {
	// Reported: some status came back, current or not.
	Reported bool
	// Fresh: Status answers the FleetRelease the work asks for now.
	Fresh  bool
	Status v1alpha1.FleetReleaseStatus
}

// Phase is the release's phase, or Unknown when no status came back for the work asked for.
func (r Release) Phase() string {
	if !r.Fresh || r.Status.Phase == "" {
		return Unknown
	}
	return string(r.Status.Phase)
}

// Read returns what the cluster reported through w; nothing reported reads as Unknown.
func Read(w *workv1.ManifestWork) (Report, error) {
	var rep Report
	rep.Delivered, rep.DeliveryMessage = work.Applied(w)
	pulls, err := pullwork.Read(w)
	if err != nil {
		return rep, err
	}
	if len(pulls) != 1 {
		return rep, fmt.Errorf("work %s/%s carries %d OCIPulls, want 1", w.Namespace, w.Name, len(pulls))
	}
	rep.Pull = pulls[0]
	for _, m := range w.Status.ResourceStatus.Manifests {
		r := m.ResourceMeta
		if r.Group != releaseGVR.group || r.Kind != "FleetRelease" || r.Name != w.Name || len(m.StatusFeedbacks.Values) == 0 {
			continue
		}
		var generation int64
		rep.Release.Reported = true
		rep.Release.Status, generation = decodeRelease(m.StatusFeedbacks.Values)
		rep.Release.Fresh = rep.Delivered && generation != 0 && generation == rep.Release.Status.ObservedGeneration
	}
	return rep, nil
}

// decodeRelease reads feedback values into a release status and the object's generation.
func decodeRelease(values []workv1.FeedbackValue) (st v1alpha1.FleetReleaseStatus, generation int64) {
	for _, v := range values {
		s, n := pullwork.Scalar(v)
		switch v.Name {
		case "generation":
			generation = n
		case "observedGeneration":
			st.ObservedGeneration = n
		case "phase":
			st.Phase = v1alpha1.ReleasePhase(s)
		case "revision":
			st.Revision = int32(min(n, 1<<31-1)) //nolint:gosec // bounded
		case "digest":
			st.Digest = s
		case "chart":
			st.Chart = s
		case "message":
			st.Message = s
		case "driftCount":
			st.Drift = cmp.Or(st.Drift, &v1alpha1.ReleaseDrift{})
			st.Drift.Count = int32(min(n, 1<<31-1)) //nolint:gosec // bounded
		case "driftObjects":
			if v.Value.JsonRaw != nil {
				st.Drift = cmp.Or(st.Drift, &v1alpha1.ReleaseDrift{})
				_ = json.Unmarshal([]byte(*v.Value.JsonRaw), &st.Drift.Objects) // a bad list is no list
			}
		}
	}
	return st, generation
}
