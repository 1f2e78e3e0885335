package agent

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// A reconcile of a new generation starts from a status with nothing of the previous spec's pull
// but its last success; of the same generation, from the status as it is.
func TestGenerationStatus(t *testing.T) {
	last := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	old := v1alpha1.OCIPullStatus{
		ObservedGeneration: 1, State: v1alpha1.OCIPullPulled, Registry: "eu", Digest: "sha256:old", Attempts: 1,
		LastSuccess: &last, Route: "r", PulledBytes: 10, TotalBytes: 10, FailoverCount: 1, Failovers: []v1alpha1.Failover{{Registry: "us", Reason: "Unreachable"}},
		Conditions: []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPulled, ObservedGeneration: 1}},
	}
	for _, tt := range []struct {
		name       string
		generation int64
		want       v1alpha1.OCIPullStatus
	}{
		{"same generation", 1, old},
		{"new generation", 2, v1alpha1.OCIPullStatus{ObservedGeneration: 2, LastSuccess: &last, Route: "r", Conditions: old.Conditions}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pull := &v1alpha1.OCIPull{ObjectMeta: metav1.ObjectMeta{Generation: tt.generation}, Status: *old.DeepCopy()}
			got := generationStatus(pull)
			if !equalStatus(got, &tt.want) {
				t.Errorf("generationStatus = %+v\nwant %+v", *got, tt.want)
			}
			got.Conditions[0].Reason = "Changed"
			if pull.Status.Conditions[0].Reason != v1alpha1.ReasonPulled {
				t.Error("generationStatus shares the object's conditions")
			}
		})
	}
}

func equalStatus(a, b *v1alpha1.OCIPullStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.State == b.State && a.Registry == b.Registry && a.Digest == b.Digest &&
		a.Attempts == b.Attempts && a.Route == b.Route && a.PulledBytes == b.PulledBytes && a.TotalBytes == b.TotalBytes &&
		a.FailoverCount == b.FailoverCount && len(a.Failovers) == len(b.Failovers) && a.LastSuccess.Equal(b.LastSuccess) &&
		len(a.Conditions) == len(b.Conditions)
}

// A running pull's status: Pulling, its registry and bytes, Ready False at the generation.
func TestPullingStatus(t *testing.T) {
	pull := &v1alpha1.OCIPull{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	for _, tt := range []struct {
		name         string
		prog         puller.Progress
		wantRegistry string
		wantMessage  string
	}{
		{"before any registry answered", puller.Progress{}, "", "pulling the artifact through the chain"},
		{"mid-download", puller.Progress{Registry: "eu", Done: 3 << 20, Total: 12 << 20}, "eu", "pulling from eu"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1alpha1.OCIPullStatus{ObservedGeneration: 3}
			pullingStatus(status, pull, ocichain.Chain{Route: "r"}, puller.Cursor{Status: puller.Status{Reason: puller.NotFound, Message: "old"}}, tt.prog)
			if status.State != v1alpha1.OCIPullPulling || status.Registry != tt.wantRegistry || status.PulledBytes != tt.prog.Done ||
				status.TotalBytes != tt.prog.Total || status.Reason != "" || status.Message != "" || status.NextRetry != nil || status.Route != "r" {
				t.Errorf("status = %+v", *status)
			}
			r := meta.FindStatusCondition(status.Conditions, v1alpha1.ReadyCondition)
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonPulling || r.ObservedGeneration != 3 || r.Message != tt.wantMessage {
				t.Errorf("Ready = %+v; want False, Pulling, generation 3, %q", r, tt.wantMessage)
			}
		})
	}
}
