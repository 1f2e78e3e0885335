package fleetrules

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// join is a join ns/name of cluster created age minutes after t0, bound to site's entry.
func join(ns, name, cluster string, minute int, site, entry string) v1alpha1.FleetClusterJoin {
	j := v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))},
		Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: site}}
	if entry != "" {
		j.Spec.Edge = &v1alpha1.ClusterJoinEdge{IngressID: entry}
	}
	return j
}

func deleting(j v1alpha1.FleetClusterJoin) v1alpha1.FleetClusterJoin {
	now := metav1.NewTime(t0)
	j.DeletionTimestamp = &now
	return j
}

func joined(j v1alpha1.FleetClusterJoin) v1alpha1.FleetClusterJoin {
	j.Status.Conditions = []metav1.Condition{{Type: v1alpha1.JoinedCondition, Status: metav1.ConditionTrue}}
	return j
}

func keyOf(j *v1alpha1.FleetClusterJoin) string {
	if j == nil {
		return ""
	}
	return Key(j)
}

func TestJoinOf(t *testing.T) {
	for _, c := range []struct {
		name, owner string
		joins       []v1alpha1.FleetClusterJoin
		want        string
	}{
		{name: "none", joins: nil, want: ""},
		{name: "other clusters only", joins: []v1alpha1.FleetClusterJoin{join("a", "j", "eu-02", 0, "s", "")}, want: ""},
		{name: "the only one", joins: []v1alpha1.FleetClusterJoin{join("a", "j", "eu-01", 0, "s", "")}, want: "a/j"},
		{name: "no owner: the oldest", owner: "",
			joins: []v1alpha1.FleetClusterJoin{join("a", "young", "eu-01", 5, "s", ""), join("b", "old", "eu-01", 1, "s", "")}, want: "b/old"},
		{name: "no owner, same time: by namespace then name", owner: "",
			joins: []v1alpha1.FleetClusterJoin{join("b", "a", "eu-01", 1, "s", ""), join("a", "z", "eu-01", 1, "s", ""), join("a", "y", "eu-01", 1, "s", "")}, want: "a/y"},
		// An older join arrived late: the younger one holds the cluster and keeps it. "The oldest"
		// (the provider's old rule) named the older one here.
		{name: "owner beats an older join", owner: "a/young",
			joins: []v1alpha1.FleetClusterJoin{join("b", "old", "eu-01", 1, "s", ""), join("a", "young", "eu-01", 5, "s", "")}, want: "a/young"},
		// The status lags the labels: the join that says Joined lost the cluster. "Joined first"
		// (the app-route controller's old rule) named it here.
		{name: "owner beats a stale Joined status", owner: "a/new",
			joins: []v1alpha1.FleetClusterJoin{joined(join("a", "stale", "eu-01", 0, "s", "")), join("a", "new", "eu-01", 3, "s", "")}, want: "a/new"},
		{name: "owner gone: the oldest candidate", owner: "c/gone",
			joins: []v1alpha1.FleetClusterJoin{join("a", "young", "eu-01", 5, "s", ""), join("b", "old", "eu-01", 1, "s", "")}, want: "b/old"},
		{name: "owner being deleted: the next", owner: "b/old",
			joins: []v1alpha1.FleetClusterJoin{join("a", "young", "eu-01", 5, "s", ""), deleting(join("b", "old", "eu-01", 1, "s", ""))}, want: "a/young"},
		{name: "owner names the join of another cluster", owner: "a/other",
			joins: []v1alpha1.FleetClusterJoin{join("a", "other", "eu-02", 0, "s", ""), join("a", "mine", "eu-01", 4, "s", "")}, want: "a/mine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := keyOf(JoinOf("eu-01", c.owner, c.joins)); got != c.want {
				t.Errorf("JoinOf = %q, want %q", got, c.want)
			}
		})
	}
}

func TestEntryHolder(t *testing.T) {
	for _, c := range []struct {
		name  string
		joins []v1alpha1.FleetClusterJoin
		want  string
	}{
		{name: "none bound", joins: []v1alpha1.FleetClusterJoin{join("a", "j", "eu-01", 0, "berlin", "rp"), join("a", "k", "eu-02", 0, "paris", "pf")}, want: ""},
		{name: "the oldest bound", joins: []v1alpha1.FleetClusterJoin{join("a", "late", "eu-01", 9, "berlin", "pf"), join("a", "early", "eu-02", 2, "berlin", "pf")}, want: "a/early"},
		{name: "same time: by name", joins: []v1alpha1.FleetClusterJoin{join("a", "k", "eu-01", 2, "berlin", "pf"), join("a", "j", "eu-02", 2, "berlin", "pf")}, want: "a/j"},
		{name: "a join being deleted frees it", joins: []v1alpha1.FleetClusterJoin{deleting(join("a", "early", "eu-01", 0, "berlin", "pf")), join("a", "late", "eu-02", 5, "berlin", "pf")}, want: "a/late"},
		{name: "another site's entry of that id does not count", joins: []v1alpha1.FleetClusterJoin{join("a", "early", "eu-01", 0, "paris", "pf"), join("a", "late", "eu-02", 5, "berlin", "pf")}, want: "a/late"},
		{name: "a join without an entry does not count", joins: []v1alpha1.FleetClusterJoin{join("a", "early", "eu-01", 0, "berlin", ""), join("a", "late", "eu-02", 5, "berlin", "pf")}, want: "a/late"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := keyOf(EntryHolder(c.joins, "berlin", "pf")); got != c.want {
				t.Errorf("EntryHolder = %q, want %q", got, c.want)
			}
		})
	}
}

func TestEntryIDs(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []v1alpha1.IngressEntry
		want    string
	}{
		{name: "none", want: "none"},
		{name: "in spec order", entries: []v1alpha1.IngressEntry{{ID: "wan-b"}, {ID: "wan-a"}}, want: "wan-b,wan-a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s v1alpha1.FleetSite
			s.Spec.Edge.Ingress = c.entries
			got := ""
			for i, id := range EntryIDs(&s) {
				if i > 0 {
					got += ","
				}
				got += id
			}
			if got != c.want {
				t.Errorf("EntryIDs = %q, want %q", got, c.want)
			}
		})
	}
}
