package pullwork

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

var (
	web = Request{Name: "web", Spec: v1alpha1.OCIPullSpec{Repository: "apps/web", Tag: "1.0"}}
	db  = Request{Name: "db", Spec: v1alpha1.OCIPullSpec{Repository: "apps/db", Digest: "sha256:0123"}}
)

func str(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: &v}}
}

func num(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}}
}

// reported is the feedback of an OCIPull with spec at generation gen, observed at observed.
func reported(r Request, gen, observed int64, state, registry, lastSuccess string) workv1.ManifestCondition {
	values := []workv1.FeedbackValue{str("workspace", "ws"), str("repository", r.Spec.Repository), num("generation", gen),
		num("observedGeneration", observed), str("state", state), str("registry", registry), num("attempts", 2),
		str("digest", "sha256:abcd"), str("route", "eu"), str("nextRetry", "2026-11-30T10:00:00Z"), str("verified", "cosign key SHA256:00ff")}
	if r.Spec.Tag != "" {
		values = append(values, str("tag", r.Spec.Tag))
	}
	if r.Spec.Digest != "" {
		values = append(values, str("askedDigest", r.Spec.Digest))
	}
	if lastSuccess != "" {
		values = append(values, str("lastSuccess", lastSuccess))
	}
	raw := `[{"registry":"mirror-eu","reason":"Unauthorized"}]`
	values = append(values, workv1.FeedbackValue{Name: "failovers", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &raw}},
		num("failoverCount", 3)) // the list is the agent's bounded sample of them
	return workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "fleet.umkim.io", Kind: "OCIPull", Resource: "ocipulls", Name: r.Name, Namespace: "fleet-system"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
	}
}

func work(t *testing.T, gen, appliedGen int64, manifests ...workv1.ManifestCondition) *workv1.ManifestWork {
	t.Helper()
	w, err := New("eu-01", "pulls", "ws", web, db)
	if err != nil {
		t.Fatal(err)
	}
	w.Generation = gen
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: appliedGen}}
	w.Status.ResourceStatus.Manifests = manifests
	return w
}

func TestNew(t *testing.T) {
	w := work(t, 1, 1)
	if got := w.Labels; got[hub.WorkspaceLabel] != "ws" || got[hub.ComponentLabel] != Component || got[hub.ManagedByLabel] != hub.ControllerManager {
		t.Errorf("labels %v", got)
	}
	if len(w.Spec.Workload.Manifests) != 2 || len(w.Spec.ManifestConfigs) != 2 {
		t.Fatalf("want 2 manifests and 2 configs, got %d and %d", len(w.Spec.Workload.Manifests), len(w.Spec.ManifestConfigs))
	}
	cfg := w.Spec.ManifestConfigs[1]
	if id := cfg.ResourceIdentifier; id != (workv1.ResourceIdentifier{Group: "fleet.umkim.io", Resource: "ocipulls", Name: "db", Namespace: "fleet-system"}) {
		t.Errorf("resource identifier %+v", id)
	}
	if cfg.FeedbackScrapeType != workv1.FeedbackWatchType {
		t.Errorf("feedback scrape type %q, want Watch: status sent when it changes", cfg.FeedbackScrapeType)
	}
	if r := cfg.FeedbackRules; len(r) != 1 || r[0].Type != workv1.JSONPathsType || len(r[0].JsonPaths) != len(feedbackPaths) {
		t.Errorf("feedback rules %+v", r)
	}
	pulls, err := Read(w)
	if err != nil {
		t.Fatal(err)
	}
	if len(pulls) != 2 || pulls[0].Name != "web" || pulls[0].Spec.Workspace != "ws" || pulls[1].Spec.Digest != "sha256:0123" {
		t.Fatalf("read back %+v", pulls)
	}
	if pulls[0].State() != Unknown || pulls[0].Artifact() != "apps/web:1.0" || pulls[1].Artifact() != "apps/db@sha256:0123" {
		t.Errorf("no feedback yet: state %q, artifacts %q %q", pulls[0].State(), pulls[0].Artifact(), pulls[1].Artifact())
	}
	if _, err := New("eu-01", "pulls", "ws", Request{Name: "x", Spec: v1alpha1.OCIPullSpec{Workspace: "other", Repository: "a", Tag: "b"}}); err == nil {
		t.Error("a pull of another workspace was accepted")
	}
}

func TestReadTrustsOnlyCurrentFeedback(t *testing.T) {
	stale := web
	stale.Spec.Tag = "0.9"
	for _, tc := range []struct {
		name       string
		w          *workv1.ManifestWork
		wantWeb    string
		wantDB     string
		wantActive string
	}{
		{"both answered", work(t, 2, 2, reported(web, 3, 3, "Pulled", "mirror", "2026-11-30T09:00:00Z"),
			reported(db, 1, 1, "WaitingForArtifact", "mirror", "")), "Pulled", "WaitingForArtifact", "mirror"},
		{"work not applied at its generation", work(t, 3, 2, reported(web, 3, 3, "Pulled", "mirror", "2026-11-30T09:00:00Z")),
			Unknown, Unknown, ""},
		{"feedback about an older spec", work(t, 2, 2, reported(stale, 2, 2, "Failed", "source", "")), Unknown, Unknown, ""},
		{"agent has not seen the object's generation", work(t, 2, 2, reported(web, 4, 3, "Pulled", "mirror", "2026-11-30T09:00:00Z")),
			Unknown, Unknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pulls, err := Read(tc.w)
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]string{pulls[0].State(), pulls[1].State()}; got != [2]string{tc.wantWeb, tc.wantDB} {
				t.Errorf("states %v, want [%s %s]", got, tc.wantWeb, tc.wantDB)
			}
			s := Summarize(pulls)
			if s.Active != tc.wantActive {
				t.Errorf("active %q, want %q", s.Active, tc.wantActive)
			}
			if s.Pulled+s.Waiting+s.Failed+s.Unknown != 2 {
				t.Errorf("counts %+v do not add up to 2", s)
			}
		})
	}
	pulls, _ := Read(work(t, 2, 2, reported(web, 3, 3, "Pulled", "mirror", "2026-11-30T09:00:00Z"), reported(db, 1, 1, "Failed", "source", "")))
	st := pulls[0].Status
	if len(st.Failovers) != 1 || st.Failovers[0] != (v1alpha1.Failover{Registry: "mirror-eu", Reason: "Unauthorized"}) || st.FailoverCount != 3 {
		t.Errorf("failovers %+v", st.Failovers)
	}
	if st.Registry != "mirror" || st.Digest != "sha256:abcd" || st.Attempts != 2 || st.Route != "eu" || st.Verified != "cosign key SHA256:00ff" ||
		!st.NextRetry.Time.Equal(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)) || !st.LastSuccess.Time.Equal(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("decoded status %+v", st)
	}
	s := Summarize(pulls)
	if s != (Summary{Pulled: 1, Failed: 1, Active: "mirror", LastPull: st.LastSuccess}) {
		t.Errorf("summary %+v", s)
	}
}

// TestSummarizeTieIsOrderFree: two pulls that succeeded in the same second (lastSuccess's
// resolution) name the same active registry whatever order they are listed in, so that a
// reconcile does not flip it back and forth.
func TestSummarizeTieIsOrderFree(t *testing.T) {
	same := metav1.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	pulled := func(name, registry string) Pull {
		return Pull{Work: "pull-" + name, Request: Request{Name: name}, Fresh: true,
			Status: v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Registry: registry, LastSuccess: &same}}
	}
	a, b := pulled("after-restart", "source"), pulled("never", "stalled")
	for _, order := range [][]Pull{{a, b}, {b, a}} {
		if s := Summarize(order); s.Active != "stalled" || s.Pulled != 2 {
			t.Errorf("%s then %s: active %q pulled %d; want stalled (pull-never/never sorts last), 2", order[0].Name, order[1].Name, s.Active, s.Pulled)
		}
	}
}
