package appwork

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func app(secret bool) *v1alpha1.FleetApp {
	a := &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "web"},
		Spec: v1alpha1.FleetAppSpec{Chart: "hello", Cluster: "eu-01", Namespace: "shop", Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}}}
	if secret {
		a.Spec.ValuesSecretRef = &v1alpha1.SecretKeyRef{Name: "web-values", Key: "values.yaml"}
	}
	return a
}

func chart(version, digest string) *v1alpha1.FleetChart {
	return &v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "hello"},
		Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: version, Digest: digest}}
}

// decoded returns the work's manifests by kind.
func decoded(t *testing.T, w *workv1.ManifestWork) (pulls []v1alpha1.OCIPull, releases []v1alpha1.FleetRelease, secrets []corev1.Secret) {
	t.Helper()
	for _, m := range w.Spec.Workload.Manifests {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(m.Raw, &tm); err != nil {
			t.Fatal(err)
		}
		var err error
		switch tm.Kind {
		case "OCIPull":
			pulls = append(pulls, v1alpha1.OCIPull{})
			err = json.Unmarshal(m.Raw, &pulls[len(pulls)-1])
		case "FleetRelease":
			releases = append(releases, v1alpha1.FleetRelease{})
			err = json.Unmarshal(m.Raw, &releases[len(releases)-1])
		case "Secret":
			secrets = append(secrets, corev1.Secret{})
			err = json.Unmarshal(m.Raw, &secrets[len(secrets)-1])
		default:
			t.Errorf("unexpected kind %q", tm.Kind)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return pulls, releases, secrets
}

func TestNew(t *testing.T) {
	w, err := New(app(false), chart("0.1.0", ""), nil, NamesOf(app(false)))
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "app.ws.web" || w.Namespace != "eu-01" {
		t.Errorf("work %s/%s, want eu-01/app.ws.web", w.Namespace, w.Name)
	}
	if l := w.Labels; l[hub.ManagedByLabel] != hub.ControllerManager || l[hub.WorkspaceLabel] != "ws" || l[hub.ComponentLabel] != Component {
		t.Errorf("labels %v", l)
	}
	if got := w.Annotations[hub.OwnerAnnotation]; got != "ws/web" {
		t.Errorf("owner annotation %q", got)
	}
	pulls, releases, secrets := decoded(t, w)
	if len(pulls) != 1 || len(releases) != 1 || len(secrets) != 0 {
		t.Fatalf("%d pulls, %d releases, %d secrets; want 1, 1, 0", len(pulls), len(releases), len(secrets))
	}
	p := pulls[0]
	if p.Name != "app.ws.web" || p.Namespace != "fleet-system" || p.Spec != (v1alpha1.OCIPullSpec{Workspace: "ws", Repository: "charts/hello", Tag: "0.1.0"}) {
		t.Errorf("pull %s/%s %+v", p.Namespace, p.Name, p.Spec)
	}
	r := releases[0]
	if r.Name != "app.ws.web" || r.Namespace != "fleet-system" || len(r.Finalizers) != 1 || r.Finalizers[0] != v1alpha1.UninstallFinalizer {
		t.Errorf("release %s/%s finalizers %v", r.Namespace, r.Name, r.Finalizers)
	}
	if r.Spec.Pull != p.Name || r.Spec.ReleaseName != "web" || r.Spec.Namespace != "shop" || string(r.Spec.Values.Raw) != `{"replicas":2}` || r.Spec.ValuesSecretRef != nil ||
		r.Spec.Workspace != "ws" || r.Spec.App != "web" || r.Spec.Adopt {
		t.Errorf("release spec %+v; want workspace ws, app web, no adopt", r.Spec)
	}
	adopting := app(false)
	adopting.Spec.Adopt = true
	w2, err := New(adopting, chart("0.1.0", ""), nil, NamesOf(adopting))
	if err != nil {
		t.Fatal(err)
	}
	if _, rels, _ := decoded(t, w2); len(rels) != 1 || !rels[0].Spec.Adopt {
		t.Errorf("the release of an app with adopt: %+v, want adopt", rels)
	}
	var paths []string
	for _, c := range w.Spec.ManifestConfigs {
		for _, rule := range c.FeedbackRules {
			for _, jp := range rule.JsonPaths {
				paths = append(paths, c.ResourceIdentifier.Resource+":"+jp.Name)
			}
		}
	}
	for _, want := range []string{"ocipulls:state", "ocipulls:digest", "fleetreleases:phase", "fleetreleases:revision", "fleetreleases:digest",
		"fleetreleases:chart", "fleetreleases:message", "fleetreleases:observedGeneration", "fleetreleases:generation"} {
		if !strings.Contains(strings.Join(paths, " "), want) {
			t.Errorf("feedback rules %v lack %s", paths, want)
		}
	}

	// A pinned digest is pulled by digest, without the tag.
	w, err = New(app(false), chart("0.1.0", digest), nil, NamesOf(app(false)))
	if err != nil {
		t.Fatal(err)
	}
	if pulls, _, _ := decoded(t, w); pulls[0].Spec.Digest != digest || pulls[0].Spec.Tag != "" {
		t.Errorf("pinned pull %+v", pulls[0].Spec)
	}
}

func TestNewValuesSecret(t *testing.T) {
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "web-values"},
		Data: map[string][]byte{"values.yaml": []byte("password: s3cret\n"), "other": []byte("not carried")}}
	w, err := New(app(true), chart("0.1.0", ""), src, NamesOf(app(true)))
	if err != nil {
		t.Fatal(err)
	}
	_, releases, secrets := decoded(t, w)
	if len(secrets) != 1 {
		t.Fatalf("%d secrets, want 1", len(secrets))
	}
	s := secrets[0]
	if s.Name != "app-values.ws.web" || s.Namespace != "fleet-system" || len(s.Data) != 1 || string(s.Data["values.yaml"]) != "password: s3cret\n" {
		t.Errorf("secret %s/%s with keys %d", s.Namespace, s.Name, len(s.Data))
	}
	if ref := releases[0].Spec.ValuesSecretRef; ref == nil || *ref != (v1alpha1.SecretKeyRef{Name: s.Name, Key: "values.yaml"}) {
		t.Errorf("release valuesSecretRef %+v", ref)
	}
	delete(src.Data, "values.yaml")
	if _, err := New(app(true), chart("0.1.0", ""), src, NamesOf(app(true))); err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), `no key "values.yaml"`) {
		t.Errorf("missing key: %v", err)
	}
}

// TestNewUnderGivenNames: an adopted work keeps every name it had (a renamed FleetRelease would
// be deleted from the cluster, uninstalling the release).
func TestNewUnderGivenNames(t *testing.T) {
	src := &corev1.Secret{Data: map[string][]byte{"values.yaml": []byte("a: 1\n")}}
	w, err := New(app(true), chart("0.1.0", ""), src, Names{Work: "app-ws-web", ValuesSecret: "app-ws-web-values"})
	if err != nil {
		t.Fatal(err)
	}
	pulls, releases, secrets := decoded(t, w)
	if w.Name != "app-ws-web" || pulls[0].Name != w.Name || releases[0].Name != w.Name || releases[0].Spec.Pull != w.Name ||
		secrets[0].Name != "app-ws-web-values" || releases[0].Spec.ValuesSecretRef.Name != secrets[0].Name {
		t.Errorf("work %s pull %s release %s (pull %s) secret %s", w.Name, pulls[0].Name, releases[0].Name, releases[0].Spec.Pull, secrets[0].Name)
	}
	if mc := w.Spec.ManifestConfigs[1].ResourceIdentifier; mc.Resource != "fleetreleases" || mc.Name != w.Name {
		t.Errorf("release feedback rule names %+v", mc)
	}
}

// TestNamesOf: apps of two workspaces whose legacy names were one (ws team-a's web, ws team's
// a-web) get distinct works; no app's values Secret is another's work (a suffix on the work's
// name could be); long names stay within 253 characters and distinct.
func TestNamesOf(t *testing.T) {
	named := func(ws, name string) *v1alpha1.FleetApp {
		return &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}
	}
	long := strings.Repeat("n", 253)
	apps := []*v1alpha1.FleetApp{named("team-a", "web"), named("team", "a-web"), named("team-a", "web-values"), named("team", "a-web-values"),
		named("ws", long), named("ws", long[:252]+"m")}
	seen := map[string]string{}
	for _, a := range apps {
		n := NamesOf(a)
		for _, name := range []string{n.Work, n.ValuesSecret} {
			if other, dup := seen[name]; dup {
				t.Errorf("%s/%s and %s both give %q", a.Namespace, a.Name[:min(len(a.Name), 12)], other, name)
			}
			seen[name] = a.Namespace + "/" + a.Name[:min(len(a.Name), 12)]
			if len(name) > v1alpha1.MaxSubdomain {
				t.Errorf("%q: %d characters", name, len(name))
			}
		}
	}
	if n := NamesOf(named("team-a", "web")); n != (Names{Work: "app.team-a.web", ValuesSecret: "app-values.team-a.web"}) {
		t.Errorf("names %+v", n)
	}
}

func str(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: &v}}
}

func num(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}}
}

// reportedWork is app's work at generation gen, applied at appliedGen, with the pull's and the
// release's feedback (none when nil).
func reportedWork(t *testing.T, gen, appliedGen int64, pull, release []workv1.FeedbackValue) *workv1.ManifestWork {
	t.Helper()
	w, err := New(app(false), chart("0.1.0", ""), nil, NamesOf(app(false)))
	if err != nil {
		t.Fatal(err)
	}
	w.Generation = gen
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: appliedGen, Message: "applied"}}
	if pull != nil {
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: "fleet.umkim.io", Kind: "OCIPull", Resource: "ocipulls", Name: w.Name, Namespace: "fleet-system"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: pull}})
	}
	if release != nil {
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: "fleet.umkim.io", Kind: "FleetRelease", Resource: "fleetreleases", Name: w.Name, Namespace: "fleet-system"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: release}})
	}
	return w
}

func pulled(state string) []workv1.FeedbackValue {
	return []workv1.FeedbackValue{str("workspace", "ws"), str("repository", "charts/hello"), str("tag", "0.1.0"), num("generation", 1),
		num("observedGeneration", 1), str("state", state), str("registry", "mirror-eu"), str("digest", digest)}
}

func release(gen, observed int64, phase string) []workv1.FeedbackValue {
	return []workv1.FeedbackValue{num("generation", gen), num("observedGeneration", observed), str("phase", phase), num("revision", 3),
		str("digest", digest), str("chart", "hello-0.1.0"), str("message", "upgraded")}
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name                string
		work                *workv1.ManifestWork
		delivered           bool
		pullState, relPhase string
		reported            bool
		revision            int32
	}{
		{"no feedback", reportedWork(t, 1, 1, nil, nil), true, pullwork.Unknown, Unknown, false, 0},
		{"work not applied at its generation", reportedWork(t, 2, 1, pulled("Pulled"), release(1, 1, "Deployed")), false, pullwork.Unknown, Unknown, true, 3},
		{"waiting for the artifact", reportedWork(t, 1, 1, pulled("WaitingForArtifact"), nil), true, "WaitingForArtifact", Unknown, false, 0},
		{"release behind its generation", reportedWork(t, 1, 1, pulled("Pulled"), release(2, 1, "Deployed")), true, "Pulled", Unknown, true, 3},
		{"deployed", reportedWork(t, 1, 1, pulled("Pulled"), release(2, 2, "Deployed")), true, "Pulled", "Deployed", true, 3},
		{"release failed", reportedWork(t, 1, 1, pulled("Pulled"), release(1, 1, "Failed")), true, "Pulled", "Failed", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Read(tc.work)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Delivered != tc.delivered || rep.Pull.State() != tc.pullState || rep.Release.Phase() != tc.relPhase || rep.Release.Reported != tc.reported {
				t.Errorf("delivered %v pull %s release %s reported %v; want %v %s %s %v", rep.Delivered, rep.Pull.State(), rep.Release.Phase(),
					rep.Release.Reported, tc.delivered, tc.pullState, tc.relPhase, tc.reported)
			}
			if rep.Release.Status.Revision != tc.revision {
				t.Errorf("revision %d, want %d", rep.Release.Status.Revision, tc.revision)
			}
			if tc.relPhase == "Deployed" && (rep.Release.Status.Digest != digest || rep.Release.Status.Chart != "hello-0.1.0" || rep.Pull.Status.Registry != "mirror-eu") {
				t.Errorf("release %+v pull %+v", rep.Release.Status, rep.Pull.Status)
			}
		})
	}
}

// The release's drift comes back as its count and, where the work agent returns lists, its
// sample; without any drift feedback there is no drift, not a drift of 0. The work asks for both
// and carries the app's repairs to the FleetRelease.
func TestReadDrift(t *testing.T) {
	objects := `[{"kind":"Deployment","namespace":"hello","name":"web"}]`
	raw := workv1.FeedbackValue{Name: "driftObjects", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &objects}}
	for _, tc := range []struct {
		name     string
		feedback []workv1.FeedbackValue
		want     *v1alpha1.ReleaseDrift
	}{
		{"not checked", nil, nil},
		{"checked, none", []workv1.FeedbackValue{num("driftCount", 0)}, &v1alpha1.ReleaseDrift{}},
		{"drifted, count only (no list feedback)", []workv1.FeedbackValue{num("driftCount", 3)}, &v1alpha1.ReleaseDrift{Count: 3}},
		{"drifted, with the sample", []workv1.FeedbackValue{num("driftCount", 3), raw},
			&v1alpha1.ReleaseDrift{Count: 3, Objects: []v1alpha1.ObjectRef{{Kind: "Deployment", Namespace: "hello", Name: "web"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Read(reportedWork(t, 1, 1, pulled("Pulled"), append(release(2, 2, "Deployed"), tc.feedback...)))
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Release.Status.Drift; !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("drift %+v, want %+v", got, tc.want)
			}
		})
	}

	a := app(false)
	a.Spec.Repairs = 2
	w, err := New(a, chart("0.1.0", ""), nil, NamesOf(a))
	if err != nil {
		t.Fatal(err)
	}
	var rel v1alpha1.FleetRelease
	if err := json.Unmarshal(w.Spec.Workload.Manifests[1].Raw, &rel); err != nil || rel.Kind != "FleetRelease" || rel.Spec.Repairs != 2 {
		t.Errorf("FleetRelease %s in the work: repairs %d (%v), want 2", rel.Kind, rel.Spec.Repairs, err)
	}
	var paths []string
	for _, c := range w.Spec.ManifestConfigs {
		if c.ResourceIdentifier.Resource == "fleetreleases" {
			for _, p := range c.FeedbackRules[0].JsonPaths {
				paths = append(paths, p.Name+"="+p.Path)
			}
		}
	}
	if !slices.Contains(paths, "driftCount=.status.drift.count") || !slices.Contains(paths, "driftObjects=.status.drift.objects") {
		t.Errorf("release feedback paths %v, want driftCount and driftObjects", paths)
	}
}
