package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

func routeClustersWorkspace() *inventory.Workspace {
	w := &inventory.Workspace{Name: "ws"}
	for i := range 40 {
		w.Clusters = append(w.Clusters, routing.Cluster{Name: fmt.Sprintf("c%02d", i),
			Labels: map[string]string{"zone": fmt.Sprintf("z%d", i%4), "tier": fmt.Sprintf("t%d", i%5)}})
	}
	w.Routes = []routing.Route{ // sorted by name, as the inventory has them
		{Name: "a", Priority: 10, Registries: []string{"r"}, ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"zone": "z0"}}}},
		{Name: "b", Priority: 20, Registries: []string{"r"}, ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"tier": "t1"}}}},
		{Name: "c", Default: true, Registries: []string{"r"}},
	}
	return w
}

// The clusters an unchanged route wins come from the hub's resolution; they must be what routing
// the route anew gives, and a changed route must still be routed anew.
func TestWonByUnchangedRouteIsRoutedOnce(t *testing.T) {
	w := routeClustersWorkspace()
	for _, r := range w.Routes {
		won := wonBy(r, []string{r.Name}, w)
		got, err := won.Clusters()
		if err != nil {
			t.Fatal(err)
		}
		want, err := routeWins(r, []string{r.Name}, w)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("route %s: wonBy %v, routed anew %v", r.Name, got, want)
		}
		if !won.Unchanged {
			t.Errorf("route %s as on the hub is not seen as unchanged", r.Name)
		}
	}
	// b moved before a takes the clusters of tier t1 in zone z0 from a: all 8 of tier t1.
	moved := w.Routes[1]
	moved.Priority = 5
	won := wonBy(moved, []string{"b"}, w)
	if won.Unchanged {
		t.Fatal("a changed priority is seen as unchanged")
	}
	got, err := won.Clusters()
	if err != nil {
		t.Fatal(err)
	}
	hubWins, _ := w.Wins("b")
	if len(got) != 8 || len(hubWins) != 6 {
		t.Errorf("b before a wins %v (want all 8 of tier t1); on the hub it wins %v (want the 6 outside zone z0)", got, hubWins)
	}
	if unchangedOnHub(w.Routes[0], []string{"a", "renamed"}, w) {
		t.Error("a route that replaces another as well is seen as unchanged")
	}
}

func TestSelectorCandidates(t *testing.T) {
	w := routeClustersWorkspace()
	count := func(sel routing.Selector) int {
		n := 0
		for range selectorCandidates(sel, w) {
			n++
		}
		return n
	}
	if n := count(routing.Selector{MatchLabels: map[string]string{"zone": "z0", "tier": "t1"}}); n != 8 {
		t.Errorf("zone z0 and tier t1: %d candidates, want the 8 of the rarer label tier=t1", n)
	}
	if n := count(routing.Selector{MatchLabels: map[string]string{"zone": "z9"}}); n != 0 {
		t.Errorf("zone z9: %d candidates, want none", n)
	}
	if n := count(routing.Selector{MatchExpressions: []routing.Requirement{{Key: "zone", Operator: routing.Exists}}}); n != 40 {
		t.Errorf("expressions only: %d candidates, want every cluster", n)
	}
}

// A route as the hub spells it (every list written out, empty ones too) is the same route as the
// plan's, which leaves empty lists out: otherwise every unchanged route of a plan is routed anew.
// Both sides build an empty list as nil (routeOf, inventory.RouteFrom), so a plain comparison
// serves: the plan's model, written as apply writes it and read back, is the route planned.
func TestPlannedRouteEqualsHubSpelling(t *testing.T) {
	ctx := context.Background()
	empty := route("r", 1, "central")
	empty.ClusterNames, empty.ClusterGroups = strSet(), strSet()
	empty.ClusterSelectors = sels(sel(map[string]string{"zone": "z1"}, []attr.Value{}), sel(map[string]string{}, []attr.Value{expr("tier", "Exists", []string{})}))
	for name, m := range map[string]ociRouteModel{"empty lists": empty, "null lists": route("r", 1, "central")} {
		planned, known, _, diags := routeOf(ctx, &m)
		if !known || diags.HasError() {
			t.Fatalf("%s: routeOf: known %v, %v", name, known, diags)
		}
		obj, diags := expandOCIRoute(ctx, hubresource.ExpandRequest[ociRouteModel]{Plan: &m})
		if diags.HasError() {
			t.Fatalf("%s: expand: %v", name, diags)
		}
		obj.SetName("r") // the engine's part of the object
		onHub, err := inventory.RouteFrom(obj)
		if err != nil {
			t.Fatal(err)
		}
		w := &inventory.Workspace{Name: "ws", Routes: []routing.Route{onHub}}
		if !reflect.DeepEqual(onHub, planned) || !unchangedOnHub(planned, []string{"r"}, w) {
			t.Errorf("%s: the hub's spelling of the plan's route is seen as another route:\nhub  %#v\nplan %#v", name, onHub, planned)
		}
	}
	w := &inventory.Workspace{Name: "ws", Routes: []routing.Route{{Name: "r", Priority: 1, Registries: []string{"central"},
		ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"zone": "z1"}}}}}}
	for name, change := range map[string]func(*routing.Route){
		"priority":  func(r *routing.Route) { r.Priority = 2 },
		"selector":  func(r *routing.Route) { r.ClusterSelectors[0].MatchLabels = map[string]string{"zone": "z2"} },
		"registry":  func(r *routing.Route) { r.Registries = []string{"central", "mirror"} },
		"a name":    func(r *routing.Route) { r.ClusterNames = []string{"c1"} },
		"no select": func(r *routing.Route) { r.ClusterSelectors = nil },
	} {
		changed := w.Routes[0]
		changed.ClusterSelectors = []routing.Selector{{MatchLabels: map[string]string{"zone": "z1"}}}
		change(&changed)
		if unchangedOnHub(changed, []string{"r"}, w) {
			t.Errorf("a changed %s is seen as the same route", name)
		}
	}
}
