package inventory

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

func TestClusterSetMembership(t *testing.T) {
	exclusive := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "airgap-stores"}}
	bySelector := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "eu"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
		ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}}}
	global := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
		ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}
	nilSelector := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "none"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
		ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector}}}

	cases := []struct {
		name   string
		set    *clusterv1beta2.ManagedClusterSet
		labels map[string]string
		want   bool
	}{
		{"exclusive label member", exclusive, map[string]string{clusterv1beta2.ClusterSetLabel: "airgap-stores"}, true},
		{"exclusive label of another set", exclusive, map[string]string{clusterv1beta2.ClusterSetLabel: "edge"}, false},
		{"exclusive label absent", exclusive, map[string]string{"region": "eu"}, false},
		{"selector matches", bySelector, map[string]string{"region": "eu", "tier": "prod"}, true},
		{"selector does not match", bySelector, map[string]string{"region": "us"}, false},
		{"empty selector matches all", global, map[string]string{}, true},
		{"missing selector matches none", nilSelector, map[string]string{"region": "eu"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := newClusterSet(tc.set)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.contains(tc.labels); got != tc.want {
				t.Fatalf("contains(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}

func TestRouteFromAPI(t *testing.T) {
	r := &v1alpha1.OCIStorageRoute{ObjectMeta: metav1.ObjectMeta{Name: "eu"}, Spec: v1alpha1.OCIStorageRouteSpec{
		Priority: 10, ClusterNames: []string{"a"}, ClusterGroups: []string{"g"},
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"region": "eu"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"lab"}}}}},
		Registries: []string{"harbor-eu", "harbor-central"}, ReplicationWait: &metav1.Duration{Duration: 10 * time.Minute},
	}}
	got := RouteFromAPI(r)
	if got.Name != "eu" || got.Priority != 10 || got.Default || got.ReplicationWait != 10*time.Minute ||
		len(got.Registries) != 2 || got.Registries[1] != "harbor-central" || got.ClusterNames[0] != "a" || got.ClusterGroups[0] != "g" {
		t.Fatalf("RouteFromAPI = %+v", got)
	}
	sel := got.ClusterSelectors[0]
	want := routing.Requirement{Key: "tier", Operator: routing.NotIn, Values: []string{"lab"}}
	if e := sel.MatchExpressions[0]; sel.MatchLabels["region"] != "eu" || len(sel.MatchExpressions) != 1 ||
		e.Key != want.Key || e.Operator != want.Operator || len(e.Values) != 1 || e.Values[0] != "lab" {
		t.Fatalf("selector = %+v, want matchLabels region=eu and %+v", sel, want)
	}
}
