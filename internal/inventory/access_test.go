package inventory

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

func TestAccess(t *testing.T) {
	edge := clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "edge"}}
	eu := clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "eu"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
		ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}}}
	broken := clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
		ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}}}}}}
	sets := []clusterv1beta2.ManagedClusterSet{eu, broken, edge}
	cluster := func(name string, labels map[string]string) metav1.Object {
		return &metav1.ObjectMeta{Name: name, Labels: labels}
	}
	inEdgeAndEU := cluster("eu-01", map[string]string{clusterv1beta2.ClusterSetLabel: "edge", "region": "eu"})
	for _, c := range []struct {
		name      string
		bound     []string
		cluster   metav1.Object
		wantSets  []string
		wantBound []string
		wantMsg   string
	}{
		{name: "bound through the exclusive label", bound: []string{"edge"}, cluster: inEdgeAndEU, wantSets: []string{"edge", "eu"}, wantBound: []string{"edge"}},
		{name: "bound through a selector", bound: []string{"eu", "other"}, cluster: inEdgeAndEU, wantSets: []string{"edge", "eu"}, wantBound: []string{"eu"}},
		{name: "no binding", cluster: inEdgeAndEU, wantSets: []string{"edge", "eu"},
			wantMsg: "cluster eu-01 is in no ManagedClusterSet bound to workspace team-c: bind one of its sets (edge, eu) with a ManagedClusterSetBinding in team-c"},
		{name: "bound to a set that does not hold it", bound: []string{"eu"}, cluster: cluster("us-01", map[string]string{clusterv1beta2.ClusterSetLabel: "edge"}), wantSets: []string{"edge"},
			wantMsg: "cluster us-01 is in no ManagedClusterSet bound to workspace team-c: bind one of its sets (edge) with a ManagedClusterSetBinding in team-c"},
		{name: "in no set at all", bound: []string{"eu"}, cluster: cluster("lone", nil),
			wantMsg: "cluster lone is in no ManagedClusterSet bound to workspace team-c, nor in any other: add it to a ManagedClusterSet and bind that set with a ManagedClusterSetBinding in team-c"},
		{name: "a bound set that cannot be read holds nothing", bound: []string{"broken"}, cluster: cluster("eu-02", map[string]string{"region": "eu"}), wantSets: []string{"eu"},
			wantMsg: "cluster eu-02 is in no ManagedClusterSet bound to workspace team-c: bind one of its sets (eu) with a ManagedClusterSetBinding in team-c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ca := NewAccess("team-c", c.bound, sets).Of(c.cluster)
			if !reflect.DeepEqual(ca.Sets, c.wantSets) || !reflect.DeepEqual(ca.Bound, c.wantBound) {
				t.Errorf("sets %v bound %v, want %v and %v", ca.Sets, ca.Bound, c.wantSets, c.wantBound)
			}
			if ca.Allowed() != (c.wantBound != nil) || ca.NotBound() != c.wantMsg {
				t.Errorf("allowed %v, NotBound %q; want %q", ca.Allowed(), ca.NotBound(), c.wantMsg)
			}
		})
	}
	a := NewAccess("team-c", []string{"broken", "edge", "missing"}, sets)
	if len(a.Invalid) != 1 || a.Invalid[0].Name != "broken" || !reflect.DeepEqual(a.Groups(), []string{"edge"}) {
		t.Errorf("invalid %v, groups %v; want broken invalid and groups [edge]", a.Invalid, a.Groups())
	}
	if NewAccess("team-c", nil, sets).Invalid != nil {
		t.Error("an unbound set that cannot be read is reported invalid; it concerns no workspace")
	}
}
