package replication

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(s int) *metav1.Time { return &metav1.Time{Time: t0.Add(time.Duration(s) * time.Second)} }

func pulled(cluster, registry, dgst string, success int, pushed *metav1.Time) Pull {
	return Pull{Cluster: cluster, Chain: []string{"mirror", "source"}, Repository: "apps/web", Status: v1alpha1.OCIPullStatus{
		State: v1alpha1.OCIPullPulled, Registry: registry, Digest: dgst, LastSuccess: at(success), PushedAt: pushed}}
}

func TestPercentile(t *testing.T) {
	var ten []time.Duration
	for i := 1; i <= 10; i++ {
		ten = append(ten, time.Duration(i)*time.Second)
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{"one value", []time.Duration{7 * time.Second}, 95, 7 * time.Second},
		{"median of ten", ten, 50, 5 * time.Second},
		{"p95 of ten is the largest", ten, 95, 10 * time.Second},
		{"p90 of ten", ten, 90, 9 * time.Second},
		{"p0 is the smallest", ten, 0, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.p); got != tc.want {
				t.Fatalf("Percentile(%v, %d) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		pulls   []Pull
		prev    v1alpha1.OCIReplicationStatus
		want    []v1alpha1.ReplicatedArtifact
		p50     time.Duration
		p95     time.Duration
		waiting int32
	}{
		{
			name:  "annotated artifact pulled from the mirror 30s after its push",
			pulls: []Pull{pulled("a", "mirror", "sha256:1", 30, at(0))},
			want:  []v1alpha1.ReplicatedArtifact{{Repository: "apps/web", Digest: "sha256:1", PushedAt: *at(0), PushedAtFrom: "Annotation", FirstPulled: at(30), Lag: &metav1.Duration{Duration: 30 * time.Second}}},
			p50:   30 * time.Second, p95: 30 * time.Second,
		},
		{
			name: "failed over to the source: the mirror waits, pushed-at is the first pull served",
			pulls: []Pull{
				{Cluster: "a", Chain: []string{"mirror", "source"}, Repository: "apps/web", Status: v1alpha1.OCIPullStatus{
					State: v1alpha1.OCIPullPulled, Registry: "source", Digest: "sha256:2", LastSuccess: at(12)}},
			},
			want:    []v1alpha1.ReplicatedArtifact{{Repository: "apps/web", Digest: "sha256:2", PushedAt: *at(12), PushedAtFrom: "FirstServed"}},
			waiting: 1,
		},
		{
			name: "a later pull does not move the first pull on",
			prev: v1alpha1.OCIReplicationStatus{Artifacts: []v1alpha1.ReplicatedArtifact{
				{Repository: "apps/web", Digest: "sha256:1", PushedAt: *at(0), PushedAtFrom: "Annotation", FirstPulled: at(30)}}},
			pulls: []Pull{pulled("a", "mirror", "sha256:1", 900, at(0))},
			want:  []v1alpha1.ReplicatedArtifact{{Repository: "apps/web", Digest: "sha256:1", PushedAt: *at(0), PushedAtFrom: "Annotation", FirstPulled: at(30), Lag: &metav1.Duration{Duration: 30 * time.Second}}},
			p50:   30 * time.Second, p95: 30 * time.Second,
		},
		{
			name:  "the earliest of two clusters counts",
			pulls: []Pull{pulled("a", "mirror", "sha256:1", 50, at(0)), pulled("b", "mirror", "sha256:1", 20, at(0))},
			want:  []v1alpha1.ReplicatedArtifact{{Repository: "apps/web", Digest: "sha256:1", PushedAt: *at(0), PushedAtFrom: "Annotation", FirstPulled: at(20), Lag: &metav1.Duration{Duration: 20 * time.Second}}},
			p50:   20 * time.Second, p95: 20 * time.Second,
		},
		{
			name: "waiting at the mirror with a digest known",
			pulls: []Pull{{Cluster: "a", Chain: []string{"mirror", "source"}, Repository: "apps/web", Status: v1alpha1.OCIPullStatus{
				State: v1alpha1.OCIPullWaitingForArtifact, Registry: "mirror", Digest: "sha256:3", PushedAt: nil}},
				pulled("b", "source", "sha256:3", 5, at(1))},
			want:    []v1alpha1.ReplicatedArtifact{{Repository: "apps/web", Digest: "sha256:3", PushedAt: *at(1), PushedAtFrom: "Annotation"}},
			waiting: 1,
		},
		{
			name:  "a mirror after the one that served was never asked",
			pulls: []Pull{pulled("a", "source", "sha256:4", 5, at(1))},
			want:  nil,
		},
		{
			name:  "out of the window",
			pulls: []Pull{pulled("a", "mirror", "sha256:1", 30, &metav1.Time{Time: now.Add(-25 * time.Hour)})},
			want:  nil,
		},
		{
			name: "a tag not resolved yet is not counted",
			pulls: []Pull{{Cluster: "a", Chain: []string{"mirror", "source"}, Repository: "apps/web", Status: v1alpha1.OCIPullStatus{
				State: v1alpha1.OCIPullWaitingForArtifact, Registry: "mirror"}}},
		},
		{
			name: "p50 and p95 over five lags",
			pulls: []Pull{pulled("a", "mirror", "sha256:a", 10, at(0)), pulled("a", "mirror", "sha256:b", 20, at(0)), pulled("a", "mirror", "sha256:c", 30, at(0)),
				pulled("a", "mirror", "sha256:d", 40, at(0)), pulled("a", "mirror", "sha256:e", 300, at(0))},
			p50: 30 * time.Second, p95: 300 * time.Second,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mirror := "mirror"
			if tc.name == "a mirror after the one that served was never asked" {
				mirror = "other"
			}
			st, next := Observe(mirror, tc.prev, tc.pulls, now, DefaultWindow)
			if tc.want != nil || len(st.Artifacts) == 0 {
				if len(st.Artifacts) != len(tc.want) {
					t.Fatalf("artifacts %+v, want %+v", st.Artifacts, tc.want)
				}
				for i := range tc.want {
					g, w := st.Artifacts[i], tc.want[i]
					if g.Digest != w.Digest || !g.PushedAt.Equal(&w.PushedAt) || g.PushedAtFrom != w.PushedAtFrom || !g.FirstPulled.Equal(w.FirstPulled) || (g.Lag == nil) != (w.Lag == nil) || g.Lag != nil && *g.Lag != *w.Lag {
						t.Fatalf("artifact %d = %+v, want %+v", i, g, w)
					}
				}
			}
			if got := dur(st.P50); got != tc.p50 {
				t.Errorf("p50 %v, want %v", got, tc.p50)
			}
			if got := dur(st.P95); got != tc.p95 {
				t.Errorf("p95 %v, want %v", got, tc.p95)
			}
			if st.Waiting != tc.waiting {
				t.Errorf("waiting %d, want %d", st.Waiting, tc.waiting)
			}
			if len(st.Artifacts) == 0 != next.IsZero() {
				t.Errorf("next %v with %d artifacts", next, len(st.Artifacts))
			}
			// Steady state: the same reports on the status just computed give the same status.
			again, _ := Observe(mirror, st, tc.pulls, now, DefaultWindow)
			if !equalStatus(again, st) {
				t.Errorf("not stable:\n%+v\n%+v", st, again)
			}
		})
	}
}

func dur(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

func equalStatus(a, b v1alpha1.OCIReplicationStatus) bool {
	if len(a.Artifacts) != len(b.Artifacts) || a.Waiting != b.Waiting || a.Measured != b.Measured || dur(a.P50) != dur(b.P50) || dur(a.P95) != dur(b.P95) {
		return false
	}
	for i := range a.Artifacts {
		x, y := a.Artifacts[i], b.Artifacts[i]
		if x.Digest != y.Digest || !x.PushedAt.Equal(&y.PushedAt) || !x.FirstPulled.Equal(y.FirstPulled) {
			return false
		}
	}
	return true
}
