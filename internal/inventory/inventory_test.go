package inventory

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

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

func routeObject(name string, spec map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetName(name)
	return u
}

func TestRouteFrom(t *testing.T) {
	u := routeObject("eu", map[string]any{
		"priority": int64(10), "clusterNames": []any{"a"}, "clusterGroups": []any{"g"},
		"clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"region": "eu"},
			"matchExpressions": []any{map[string]any{"key": "tier", "operator": "NotIn", "values": []any{"lab"}}}}},
		"registries": []any{"harbor-eu", "harbor-central"}, "replicationWait": "10m",
	})
	got, err := RouteFrom(&u)
	if err != nil {
		t.Fatal(err)
	}
	want := routing.Route{Name: "eu", Priority: 10, ClusterNames: []string{"a"}, ClusterGroups: []string{"g"},
		ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"region": "eu"},
			MatchExpressions: []routing.Requirement{{Key: "tier", Operator: routing.NotIn, Values: []string{"lab"}}}}},
		Registries: []string{"harbor-eu", "harbor-central"}, ReplicationWait: 10 * time.Minute}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RouteFrom =\n%+v\nwant\n%+v", got, want)
	}
	// The spec written back reads the same.
	back := routeObject("eu", RouteSpec(got, "10m"))
	if again, err := RouteFrom(&back); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("RouteFrom(RouteSpec) = %+v, %v", again, err)
	}
}

// The hub's spec writes every list and map out, empty ones too; they read back as none (nil), as
// the provider's plan model has them, so that a plain comparison tells an unchanged route.
func TestRouteFromEmptyIsNil(t *testing.T) {
	want := routing.Route{Name: "eu", Priority: 1, Registries: []string{"r"},
		ClusterSelectors: []routing.Selector{{MatchExpressions: []routing.Requirement{{Key: "zone", Operator: routing.Exists}}}, {}}}
	u := routeObject("eu", RouteSpec(want, "0s"))
	if spec := u.Object["spec"].(map[string]any); spec["clusterNames"] == nil || spec["clusterSelectors"].([]any)[1].(map[string]any)["matchLabels"] == nil {
		t.Fatalf("RouteSpec left out an empty list: %v", spec)
	}
	got, err := RouteFrom(&u)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RouteFrom(RouteSpec) =\n%#v\nwant\n%#v", got, want)
	}
}

// One bad value on the hub names the object and the field, and leaves the other objects usable.
func TestAssembleSkipsBadObjects(t *testing.T) {
	good := routeObject("good", map[string]any{"priority": int64(1), "clusterNames": []any{"c1"}, "registries": []any{"r"}})
	badWait := routeObject("bad-wait", map[string]any{"priority": int64(2), "clusterNames": []any{"c1"}, "registries": []any{"r"}, "replicationWait": "1d"})
	badLabel := routeObject("bad-label", map[string]any{"priority": int64(3), "registries": []any{"r"},
		"clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"not a key": "x"}}}})
	ws := Assemble("ws", Lists{Routes: []unstructured.Unstructured{badWait, good, badLabel}}, "tf")
	if len(ws.Routes) != 1 || ws.Routes[0].Name != "good" {
		t.Fatalf("routes = %+v, want only good", ws.Routes)
	}
	var invalid []string
	for _, i := range ws.Invalid {
		invalid = append(invalid, i.String())
	}
	want := []string{
		`OCIStorageRoute bad-wait: spec.replicationWait: "1d" is not a duration such as 90s or 10m`,
		`OCIStorageRoute bad-label: route "bad-label": cluster_selectors[0].match_labels["not a key"]: invalid label key "not a key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
	}
	if !reflect.DeepEqual(invalid, want) {
		t.Fatalf("invalid =\n%s\nwant\n%s", strings.Join(invalid, "\n"), strings.Join(want, "\n"))
	}
}
