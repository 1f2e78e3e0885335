package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestClusterNotReporting(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC))
	mc := func(st metav1.ConditionStatus, reason string) *clusterv1.ManagedCluster {
		c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "eu-01"}}
		if st != "" {
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: st, Reason: reason, LastTransitionTime: since}}
		}
		return c
	}
	if n := clusterNotReporting(mc(metav1.ConditionTrue, "ManagedClusterAvailable")); n != nil {
		t.Errorf("available cluster: %+v", n)
	}
	if n := clusterNotReporting(mc("", "")); n != nil {
		t.Errorf("cluster without the condition: %+v", n)
	}
	n := clusterNotReporting(mc(metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped"))
	want := `cluster "eu-01" has not reported since 2026-12-01T09:30:00Z: its ManagedCluster's ManagedClusterConditionAvailable is Unknown (ManagedClusterLeaseUpdateStopped); ` +
		"what the hub shows of it is as of then, and changes reach it once it reports again"
	if n == nil || n.Message() != want {
		t.Errorf("lease stopped: %+v, message\n%s\nwant\n%s", n, n.Message(), want)
	}
	if n := clusterNotReporting(mc(metav1.ConditionFalse, "ManagedClusterKubeAPIServerUnavailable")); n == nil || n.Status != metav1.ConditionFalse {
		t.Errorf("unavailable cluster: %+v", n)
	}

	update := func(a, b *clusterv1.ManagedCluster) bool {
		return availabilityChanged.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: b})
	}
	heartbeat := mc(metav1.ConditionTrue, "ManagedClusterAvailable")
	heartbeat.Status.Allocatable = clusterv1.ResourceList{"cpu": {}}
	for name, tc := range map[string]struct {
		a, b *clusterv1.ManagedCluster
		want bool
	}{
		"goes silent":         {mc(metav1.ConditionTrue, "ManagedClusterAvailable"), mc(metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped"), true},
		"comes back":          {mc(metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped"), mc(metav1.ConditionTrue, "ManagedClusterAvailable"), true},
		"first set":           {mc("", ""), mc(metav1.ConditionTrue, "ManagedClusterAvailable"), true},
		"a status heartbeat":  {mc(metav1.ConditionTrue, "ManagedClusterAvailable"), heartbeat, false},
		"other reason, False": {mc(metav1.ConditionFalse, "A"), mc(metav1.ConditionFalse, "B"), true},
	} {
		if got := update(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: passes %v, want %v", name, got, tc.want)
		}
	}
}

func TestWorkReported(t *testing.T) {
	w := func(gen int64, conds ...metav1.Condition) *workv1.ManifestWork {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Status: workv1.ManifestWorkStatus{Conditions: conds}}
	}
	applied := func(gen int64) metav1.Condition {
		return metav1.Condition{Type: workv1.WorkApplied, Status: "True", Reason: "AppliedManifestWorkComplete", ObservedGeneration: gen}
	}
	feedback := w(2, applied(2))
	feedback.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{ResourceMeta: workv1.ManifestResourceMeta{Name: "x"}}}
	for name, tc := range map[string]struct {
		a, b *workv1.ManifestWork
		want bool
	}{
		"first report":         {w(1), w(1, applied(1)), true},
		"applied the new spec": {w(2, applied(1)), w(2, applied(2)), true},
		"feedback only":        {w(2, applied(2)), feedback, false},
		"nothing changed":      {w(2, applied(2)), w(2, applied(2)), false},
		"Available appears":    {w(2, applied(2)), w(2, applied(2), metav1.Condition{Type: workv1.WorkAvailable, Status: "True", ObservedGeneration: 2}), true},
	} {
		if got := workReported.Update(event.UpdateEvent{ObjectOld: tc.a, ObjectNew: tc.b}); got != tc.want {
			t.Errorf("%s: passes %v, want %v", name, got, tc.want)
		}
	}
}
