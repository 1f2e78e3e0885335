package probework

import (
	"encoding/json"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
)

func str(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: &v}}
}

func num(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}}
}

// reported is a work carrying ws's probe whose feedback says results at the given generations.
func reported(t *testing.T, ws string, gen, observed int64, results string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{}
	if err := Add(w, ws); err != nil {
		t.Fatal(err)
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: v1alpha1.GroupVersion.Group, Kind: "RegistryProbe", Name: Name(ws), Namespace: ocichain.Namespace},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			str("workspace", ws), num("generation", gen), num("observedGeneration", observed), str("results", results), str("probedAt", "2026-12-01T19:00:00Z"),
		}},
	}}
	return w
}

func TestAdd(t *testing.T) {
	w := &workv1.ManifestWork{}
	if err := Add(w, "team-a"); err != nil {
		t.Fatal(err)
	}
	var obj v1alpha1.RegistryProbe
	if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Kind != "RegistryProbe" || obj.Name != "oci-chain-team-a" || obj.Namespace != ocichain.Namespace || obj.Spec.Workspace != "team-a" {
		t.Errorf("manifest %+v", obj)
	}
	c := w.Spec.ManifestConfigs[0]
	if c.ResourceIdentifier.Resource != "registryprobes" || c.ResourceIdentifier.Name != obj.Name || c.FeedbackScrapeType != workv1.FeedbackWatchType ||
		len(c.FeedbackRules) != 1 || len(c.FeedbackRules[0].JsonPaths) != len(feedbackPaths) {
		t.Errorf("config %+v", c)
	}
}

func TestReadTrustsOnlyCurrentFeedback(t *testing.T) {
	chain := []string{"apac", "central"}
	cases := []struct {
		name     string
		work     *workv1.ManifestWork
		ws       string
		want     string
		wantNone bool
	}{
		{name: "current", work: reported(t, "team-a", 1, 1, "apac=Unreachable,central=Reachable"), ws: "team-a", want: "apac=Unreachable,central=Reachable"},
		{name: "spec not observed yet", work: reported(t, "team-a", 2, 1, "apac=Unreachable,central=Reachable"), ws: "team-a", wantNone: true},
		{name: "another workspace's probe", work: reported(t, "team-b", 1, 1, "apac=Unreachable"), ws: "team-a", wantNone: true},
		{name: "a registry left the chain, garbage ignored", work: reported(t, "team-a", 1, 1, "old=TLS,central=Reachable,=x,junk"), ws: "team-a", want: "central=Reachable"},
		{name: "nothing probed", work: reported(t, "team-a", 1, 1, ""), ws: "team-a", wantNone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Read(tc.work, tc.ws, chain)
			if tc.wantNone {
				if got != nil {
					t.Fatalf("got %+v, want nothing", got)
				}
				return
			}
			s := ""
			for i, r := range got {
				if i > 0 {
					s += ","
				}
				s += r.Registry + "=" + r.State
				if r.ProbedAt == nil || r.ProbedAt.UTC().Format("15:04") != "19:00" {
					t.Errorf("%s probedAt %v", r.Registry, r.ProbedAt)
				}
			}
			if s != tc.want {
				t.Errorf("got %s, want %s", s, tc.want)
			}
		})
	}
}
