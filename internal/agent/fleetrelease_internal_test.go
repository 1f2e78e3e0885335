package agent

import (
	"bytes"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// deploy installs a release without history, then upgrades it: each time a new revision whose
// manifest carries exactly the values given and whose labels name the owner given, the last
// one's over the former's (an adoption) (Helm's in-memory storage, a printing kube client).
func TestInstallThenUpgrade(t *testing.T) {
	chrt, err := loader.LoadArchive(bytes.NewReader(testbed.HelloChart("hello", "0.1.0")))
	if err != nil {
		t.Fatal(err)
	}
	mem := driver.NewMemory()
	mem.SetNamespace("apps")
	cfg := &action.Configuration{
		Releases:     storage.Init(mem),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}

	for _, step := range []struct {
		values     map[string]any
		revision   int
		greeting   string
		superseded bool
		workspace  string
	}{
		{map[string]any{"greeting": "hi"}, 1, `greeting: "hi"`, false, "one"},
		{map[string]any{"greeting": "bonjour"}, 2, `greeting: "bonjour"`, true, "one"},
		// No values: the chart's default, none carried from the last revision. Another owner
		// takes the release over.
		{map[string]any{}, 3, `greeting: "hello"`, true, "two"},
	} {
		owner := v1alpha1.ReleaseOwner(step.workspace, "web")
		rel, err := deploy(t.Context(), cfg, step.revision > 1, "web", "apps", chrt, step.values, owner, time.Minute)
		if err != nil {
			t.Fatalf("revision %d: %v", step.revision, err)
		}
		if rel.Version != step.revision || rel.Namespace != "apps" || rel.Info.Status != release.StatusDeployed {
			t.Errorf("release: revision %d in %q, %s; want revision %d in apps, deployed", rel.Version, rel.Namespace, rel.Info.Status, step.revision)
		}
		if !strings.Contains(rel.Manifest, step.greeting) || !strings.Contains(rel.Manifest, "name: web-hello") || !strings.Contains(rel.Manifest, "port: 80") {
			t.Errorf("revision %d manifest lacks %s, the ConfigMap web-hello or the Service's port 80:\n%s", step.revision, step.greeting, rel.Manifest)
		}
		stored, err := cfg.Releases.Get("web", step.revision)
		if err != nil || !maps.Equal(stored.Labels, owner) || !ownedBy(stored, &v1alpha1.FleetRelease{Spec: v1alpha1.FleetReleaseSpec{Workspace: step.workspace, App: "web"}}) {
			t.Errorf("revision %d labels %v (%v), want the owner's %v", step.revision, stored.Labels, err, owner)
		}
		if valuesHash(rel.Config) != valuesHash(step.values) {
			t.Errorf("revision %d stored values %v, want %v", step.revision, rel.Config, step.values)
		}
		if step.superseded {
			prev, err := cfg.Releases.Get("web", step.revision-1)
			if err != nil || prev.Info.Status != release.StatusSuperseded {
				t.Errorf("revision %d after an upgrade: %v, %v; want superseded", step.revision-1, prev, err)
			}
		}
	}
	history, err := cfg.Releases.History("web")
	if err != nil || len(history) != 3 {
		t.Errorf("history: %d revisions, %v; want 3", len(history), err)
	}
}

// A release is this app's only when both owner labels name its workspace and app; the app's
// label is cut to a label value's 63 characters, with a hash, like any bounded name.
func TestOwnedBy(t *testing.T) {
	long := strings.Repeat("a", 100)
	rel := func(ws, app string) *v1alpha1.FleetRelease {
		return &v1alpha1.FleetRelease{Spec: v1alpha1.FleetReleaseSpec{Workspace: ws, App: app}}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		rel    *v1alpha1.FleetRelease
		want   bool
	}{
		{"installed by hand", nil, rel("ws", "web"), false},
		{"this app's", v1alpha1.ReleaseOwner("ws", "web"), rel("ws", "web"), true},
		{"another workspace's app of that name", v1alpha1.ReleaseOwner("other", "web"), rel("ws", "web"), false},
		{"another app of the workspace", v1alpha1.ReleaseOwner("ws", "api"), rel("ws", "web"), false},
		{"only the workspace label", map[string]string{v1alpha1.ReleaseWorkspaceLabel: "ws"}, rel("ws", "web"), false},
		{"a long app name", v1alpha1.ReleaseOwner("ws", long), rel("ws", long), true},
		{"a long app name, another one", v1alpha1.ReleaseOwner("ws", long+"b"), rel("ws", long), false},
		// An app named like a long name's cut form shares its app label, not its hash.
		{"a name spelled like a long one's label", v1alpha1.ReleaseOwner("ws", long), rel("ws", v1alpha1.BoundedName(long, v1alpha1.MaxLabel)), false},
		{"the long one, by the other's labels", v1alpha1.ReleaseOwner("ws", v1alpha1.BoundedName(long, v1alpha1.MaxLabel)), rel("ws", long), false},
		// Migration: a release labelled before the hash label counts as owned by its app label.
		{"labelled before the hash label", map[string]string{v1alpha1.ReleaseWorkspaceLabel: "ws", v1alpha1.ReleaseAppLabel: "web"}, rel("ws", "web"), true},
		{"labelled before the hash label, another app", map[string]string{v1alpha1.ReleaseWorkspaceLabel: "ws", v1alpha1.ReleaseAppLabel: "api"}, rel("ws", "web"), false},
		{"labelled before the hash label, another workspace", map[string]string{v1alpha1.ReleaseWorkspaceLabel: "other", v1alpha1.ReleaseAppLabel: "web"}, rel("ws", "web"), false},
		{"a hash label of another app beside this app's label", map[string]string{v1alpha1.ReleaseWorkspaceLabel: "ws", v1alpha1.ReleaseAppLabel: "web",
			v1alpha1.ReleaseAppHashLabel: v1alpha1.AppHash("api")}, rel("ws", "web"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownedBy(&release.Release{Labels: tc.labels}, tc.rel); got != tc.want {
				t.Errorf("ownedBy(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
	for _, app := range []string{"web", long, strings.Repeat("b", 253)} {
		for k, v := range v1alpha1.ReleaseOwner("ws", app) {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("label %s=%q of app %.20s…: %v", k, v, app, errs)
			}
		}
	}
}
