package agent

import (
	"bytes"
	"io"
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

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// deploy installs a release without history, then upgrades it: each time a new revision whose
// manifest carries exactly the values given (Helm's in-memory storage, a printing kube client).
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
	}{
		{map[string]any{"greeting": "hi"}, 1, `greeting: "hi"`, false},
		{map[string]any{"greeting": "bonjour"}, 2, `greeting: "bonjour"`, true},
		// No values: the chart's default, none carried from the last revision.
		{map[string]any{}, 3, `greeting: "hello"`, true},
	} {
		rel, err := deploy(t.Context(), cfg, "web", "apps", chrt, step.values, time.Minute)
		if err != nil {
			t.Fatalf("revision %d: %v", step.revision, err)
		}
		if rel.Version != step.revision || rel.Namespace != "apps" || rel.Info.Status != release.StatusDeployed {
			t.Errorf("release: revision %d in %q, %s; want revision %d in apps, deployed", rel.Version, rel.Namespace, rel.Info.Status, step.revision)
		}
		if !strings.Contains(rel.Manifest, step.greeting) || !strings.Contains(rel.Manifest, "name: web-hello") || !strings.Contains(rel.Manifest, "port: 80") {
			t.Errorf("revision %d manifest lacks %s, the ConfigMap web-hello or the Service's port 80:\n%s", step.revision, step.greeting, rel.Manifest)
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
