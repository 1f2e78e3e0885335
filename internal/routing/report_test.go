package routing_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

func TestResolveAll(t *testing.T) {
	router := mustCompile(t,
		asDefault(route("rest", 1)),
		withSelectors(route("eu", 20), sel(ml("region", "eu"))),
		withNames(route("pin", 10), "eu-2"),
	)
	inventory := []routing.Cluster{
		cluster("us-1", ml("region", "us")),
		cluster("eu-2", ml("region", "eu")),
		cluster("eu-1", ml("region", "eu")),
	}
	rep := router.ResolveAll(inventory)
	onlyNamed := mustCompile(t, withNames(route("pin", 10), "eu-2")).ResolveAll(inventory)

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"clusters sorted by name", names(rep.Clusters), []string{"eu-1", "eu-2", "us-1"}},
		{"each cluster's route", routesOf(rep.Clusters), []string{"eu", "pin", "rest"}},
		{"routes in priority order, default last", rep.Routes, []routing.RouteClusters{
			{Route: "pin", Priority: 10, Clusters: []string{"eu-2"}},
			{Route: "eu", Priority: 20, Clusters: []string{"eu-1"}},
			{Route: "rest", Priority: 1, Default: true, Clusters: []string{"us-1"}},
		}},
		{"nothing unmatched with a default", rep.Unmatched, []string(nil)},
		{"nothing shadowed", rep.Shadowed, []routing.Shadow(nil)},
		{"unmatched sorted without a default", onlyNamed.Unmatched, []string{"eu-1", "us-1"}},
		{"route without clusters listed empty", mustCompile(t, withNames(route("pin", 10), "x")).ResolveAll(inventory).Routes,
			[]routing.RouteClusters{{Route: "pin", Priority: 10}}},
		{"empty inventory", *mustCompile(t, withNames(route("pin", 10), "x")).ResolveAll(nil),
			routing.Report{Clusters: []routing.Resolution{}, Routes: []routing.RouteClusters{{Route: "pin", Priority: 10}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}

	t.Run("lookup of a resolved cluster", func(t *testing.T) {
		got, ok := rep.Resolution("eu-2")
		if !ok || got.Route != "pin" || got.MatchedBy.Criterion != routing.ByName {
			t.Fatalf("Resolution(eu-2) = %+v, %v", got, ok)
		}
	})
	t.Run("lookup of an unknown cluster", func(t *testing.T) {
		if got, ok := rep.Resolution("nope"); ok {
			t.Fatalf("Resolution(nope) = %+v, want not found", got)
		}
	})
}

func names(rs []routing.Resolution) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Cluster)
	}
	return out
}

func routesOf(rs []routing.Resolution) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Route)
	}
	return out
}

func TestShadowed(t *testing.T) {
	euClusters := withSelectors(route("eu-clusters", 10), sel(ml("region", "eu")))
	inventory := []routing.Cluster{
		cluster("eu-staging-01", ml("region", "eu", "env", "staging"), "staging"),
		cluster("eu-prod-01", ml("region", "eu", "env", "prod")),
		cluster("us-prod-01", ml("region", "us", "env", "prod"), "airgap"),
		cluster("lab-sandbox", nil),
	}
	tests := []struct {
		name   string
		routes []routing.Route
		want   []routing.Shadow
	}{
		{"route named after a cluster an earlier selector takes", []routing.Route{euClusters, withNames(route("eu-staging", 20), "eu-staging-01")},
			[]routing.Shadow{{Route: "eu-staging", Priority: 20, Claims: []routing.Claim{{Cluster: "eu-staging-01", Route: "eu-clusters", Priority: 10}}}}},
		{"moved first, it is not shadowed", []routing.Route{euClusters, withNames(route("eu-staging", 5), "eu-staging-01")}, nil},
		{"wins one of its clusters", []routing.Route{euClusters, withNames(route("mixed", 20), "eu-staging-01", "lab-sandbox")}, nil},
		{"selects no cluster at all", []routing.Route{euClusters, withNames(route("ghost", 20), "nowhere")}, nil},
		{"claims by several earlier routes", []routing.Route{
			euClusters,
			withGroups(route("airgap", 11), "airgap"),
			withSelectors(route("prod", 30), sel(ml("env", "prod"))),
		}, []routing.Shadow{{Route: "prod", Priority: 30, Claims: []routing.Claim{
			{Cluster: "eu-prod-01", Route: "eu-clusters", Priority: 10},
			{Cluster: "us-prod-01", Route: "airgap", Priority: 11},
		}}}},
		{"group route shadowed", []routing.Route{euClusters, withGroups(route("staging", 20), "staging")},
			[]routing.Shadow{{Route: "staging", Priority: 20, Claims: []routing.Claim{{Cluster: "eu-staging-01", Route: "eu-clusters", Priority: 10}}}}},
		{"unanchored selector shadowed", []routing.Route{withSelectors(route("all", 1), sel(nil)), withSelectors(route("nogpu", 2), sel(nil, req("gpu", routing.DoesNotExist)))},
			[]routing.Shadow{{Route: "nogpu", Priority: 2, Claims: []routing.Claim{
				{Cluster: "eu-prod-01", Route: "all", Priority: 1},
				{Cluster: "eu-staging-01", Route: "all", Priority: 1},
				{Cluster: "lab-sandbox", Route: "all", Priority: 1},
				{Cluster: "us-prod-01", Route: "all", Priority: 1},
			}}}},
		{"two shadowed routes in priority order", []routing.Route{
			withNames(route("late", 40), "lab-sandbox"),
			withSelectors(route("all", 1), sel(nil, req("region", routing.Exists)), sel(nil, req("region", routing.DoesNotExist))),
			withGroups(route("mid", 30), "airgap"),
		}, []routing.Shadow{
			{Route: "mid", Priority: 30, Claims: []routing.Claim{{Cluster: "us-prod-01", Route: "all", Priority: 1}}},
			{Route: "late", Priority: 40, Claims: []routing.Claim{{Cluster: "lab-sandbox", Route: "all", Priority: 1}}},
		}},
		{"one cluster matched by several criteria is claimed once", []routing.Route{euClusters, withSelectors(withNames(route("dup", 20), "eu-prod-01"), sel(ml("env", "prod"), req("region", routing.In, "eu")), sel(ml("region", "eu"), req("env", routing.NotIn, "staging")))},
			[]routing.Shadow{{Route: "dup", Priority: 20, Claims: []routing.Claim{{Cluster: "eu-prod-01", Route: "eu-clusters", Priority: 10}}}}},
		{"default route winning nothing is not shadowed", []routing.Route{withSelectors(route("all", 1), sel(nil)), asDefault(route("rest", 2))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustCompile(t, tt.routes...).ResolveAll(inventory).Shadowed; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Shadowed = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("enough to write the provider's warning", func(t *testing.T) {
		s := mustCompile(t, euClusters, withNames(route("eu-staging", 20), "eu-staging-01")).ResolveAll(inventory).Shadowed[0]
		c := s.Claims[0]
		got := fmt.Sprintf("route %q is shadowed: cluster %s is matched first by route %q (priority %d)", s.Route, c.Cluster, c.Route, c.Priority)
		if want := `route "eu-staging" is shadowed: cluster eu-staging-01 is matched first by route "eu-clusters" (priority 10)`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

func TestStaticShadows(t *testing.T) {
	p := func(attr string, i int) routing.Path { return routing.Path{routing.Attr(attr), routing.Index(i)} }
	sels := func(i int) routing.Path { return p("cluster_selectors", i) }
	one := func(route string, prio int64, field routing.Path, by string, byPrio int64, byField routing.Path) []routing.StaticShadow {
		return []routing.StaticShadow{{Route: route, Priority: prio, Coverage: []routing.Coverage{{Field: field, By: by, ByPriority: byPrio, ByField: byField}}}}
	}
	bySel := func(name string, prio int64, s ...routing.Selector) routing.Route {
		return withSelectors(route(name, prio), s...)
	}

	tests := []struct {
		name   string
		routes []routing.Route
		want   []routing.StaticShadow
	}{
		{"earlier empty selector covers a selector", []routing.Route{bySel("all", 1, sel(nil)), bySel("eu", 2, sel(ml("region", "eu")))},
			one("eu", 2, sels(0), "all", 1, sels(0))},
		{"earlier empty selector covers names", []routing.Route{bySel("all", 1, sel(nil)), withNames(route("pin", 2), "c")},
			one("pin", 2, p("cluster_names", 0), "all", 1, sels(0))},
		{"earlier empty selector covers groups", []routing.Route{bySel("all", 1, sel(nil)), withGroups(route("grp", 2), "g")},
			one("grp", 2, p("cluster_groups", 0), "all", 1, sels(0))},
		{"later empty selector is not covered by a narrower one", []routing.Route{bySel("eu", 1, sel(ml("region", "eu"))), bySel("all", 2, sel(nil))}, nil},
		{"earlier subset of requirements", []routing.Route{bySel("eu", 1, sel(ml("region", "eu"))), bySel("eu-edge", 2, sel(ml("region", "eu", "tier", "edge")))},
			one("eu-edge", 2, sels(0), "eu", 1, sels(0))},
		{"earlier superset of requirements", []routing.Route{bySel("eu-edge", 1, sel(ml("region", "eu", "tier", "edge"))), bySel("eu", 2, sel(ml("region", "eu")))}, nil},
		{"other value", []routing.Route{bySel("eu", 1, sel(ml("region", "eu"))), bySel("us", 2, sel(ml("region", "us")))}, nil},
		{"value inside an earlier in list", []routing.Route{bySel("euus", 1, sel(nil, req("region", routing.In, "eu", "us"))), bySel("eu", 2, sel(ml("region", "eu")))},
			one("eu", 2, sels(0), "euus", 1, sels(0))},
		{"in list wider than the earlier one", []routing.Route{bySel("eu", 1, sel(nil, req("region", routing.In, "eu"))), bySel("euus", 2, sel(nil, req("region", routing.In, "eu", "us")))}, nil},
		{"earlier exists covers in", []routing.Route{bySel("any", 1, sel(nil, req("region", routing.Exists))), bySel("eu", 2, sel(nil, req("region", routing.In, "eu", "us")))},
			one("eu", 2, sels(0), "any", 1, sels(0))},
		{"earlier exists covers exists", []routing.Route{bySel("any", 1, sel(nil, req("gpu", routing.Exists))), bySel("gpu", 2, sel(nil, req("gpu", routing.Exists), req("tier", routing.DoesNotExist)))},
			one("gpu", 2, sels(0), "any", 1, sels(0))},
		{"earlier exists does not cover not in", []routing.Route{bySel("any", 1, sel(nil, req("env", routing.Exists))), bySel("np", 2, sel(nil, req("env", routing.NotIn, "prod")))}, nil},
		{"earlier not in covers a disjoint in", []routing.Route{bySel("np", 1, sel(nil, req("env", routing.NotIn, "prod"))), bySel("dev", 2, sel(ml("env", "dev")))},
			one("dev", 2, sels(0), "np", 1, sels(0))},
		{"earlier not in does not cover an overlapping in", []routing.Route{bySel("np", 1, sel(nil, req("env", routing.NotIn, "prod"))), bySel("pd", 2, sel(nil, req("env", routing.In, "prod", "dev")))}, nil},
		{"earlier not in covers a wider not in", []routing.Route{bySel("np", 1, sel(nil, req("env", routing.NotIn, "prod"))), bySel("nps", 2, sel(nil, req("env", routing.NotIn, "prod", "staging")))},
			one("nps", 2, sels(0), "np", 1, sels(0))},
		{"earlier not in does not cover a narrower not in", []routing.Route{bySel("nps", 1, sel(nil, req("env", routing.NotIn, "prod", "staging"))), bySel("np", 2, sel(nil, req("env", routing.NotIn, "prod")))}, nil},
		{"earlier not in covers does not exist", []routing.Route{bySel("np", 1, sel(nil, req("env", routing.NotIn, "prod"))), bySel("none", 2, sel(nil, req("env", routing.DoesNotExist)))},
			one("none", 2, sels(0), "np", 1, sels(0))},
		{"earlier does not exist covers does not exist", []routing.Route{bySel("nogpu", 1, sel(nil, req("gpu", routing.DoesNotExist))), bySel("edge", 2, sel(ml("tier", "edge"), req("gpu", routing.DoesNotExist)))},
			one("edge", 2, sels(0), "nogpu", 1, sels(0))},
		{"earlier does not exist does not cover not in", []routing.Route{bySel("nogpu", 1, sel(nil, req("gpu", routing.DoesNotExist))), bySel("x", 2, sel(nil, req("gpu", routing.NotIn, "a")))}, nil},
		{"names covered by two earlier routes", []routing.Route{withNames(route("a", 1), "c1"), withNames(route("b", 2), "c2", "c1"), withNames(route("c", 3), "c2", "c1")},
			[]routing.StaticShadow{{Route: "c", Priority: 3, Coverage: []routing.Coverage{
				{Field: p("cluster_names", 0), By: "b", ByPriority: 2, ByField: p("cluster_names", 0)},
				{Field: p("cluster_names", 1), By: "a", ByPriority: 1, ByField: p("cluster_names", 0)},
			}}}},
		{"names partly covered", []routing.Route{withNames(route("a", 1), "c1"), withNames(route("b", 2), "c1", "c2")}, nil},
		{"groups covered", []routing.Route{withGroups(route("a", 1), "g1", "g2"), withGroups(route("b", 2), "g2")},
			one("b", 2, p("cluster_groups", 0), "a", 1, p("cluster_groups", 1))},
		{"a group does not cover a name", []routing.Route{withGroups(route("a", 1), "c1"), withNames(route("b", 2), "c1")}, nil},
		{"mixed route with one criterion uncovered", []routing.Route{withNames(route("a", 1), "c1"), withSelectors(withNames(route("b", 2), "c1"), sel(ml("k", "v")))}, nil},
		{"mixed route covered by different routes", []routing.Route{withNames(route("a", 1), "c1"), bySel("s", 2, sel(ml("k", "v"))), withSelectors(withNames(route("b", 3), "c1"), sel(ml("k", "v", "j", "w")))},
			[]routing.StaticShadow{{Route: "b", Priority: 3, Coverage: []routing.Coverage{
				{Field: p("cluster_names", 0), By: "a", ByPriority: 1, ByField: p("cluster_names", 0)},
				{Field: sels(0), By: "s", ByPriority: 2, ByField: sels(0)},
			}}}},
		{"earliest covering route is reported", []routing.Route{bySel("all", 5, sel(nil)), withNames(route("a", 1), "c1"), withNames(route("b", 9), "c1")},
			[]routing.StaticShadow{{Route: "b", Priority: 9, Coverage: []routing.Coverage{{Field: p("cluster_names", 0), By: "a", ByPriority: 1, ByField: p("cluster_names", 0)}}}}},
		{"input order does not matter", []routing.Route{bySel("eu", 2, sel(ml("region", "eu"))), bySel("all", 1, sel(nil))},
			one("eu", 2, sels(0), "all", 1, sels(0))},
		{"a route does not cover itself", []routing.Route{bySel("r", 1, sel(ml("a", "1"))), withSelectors(route("s", 2), sel(ml("b", "1")), sel(ml("b", "1", "c", "1")))}, nil},
		{"default unreachable behind an empty selector", []routing.Route{asDefault(route("rest", 0)), bySel("all", 7, sel(ml("k", "v")), sel(nil))},
			[]routing.StaticShadow{{Route: "rest", Priority: 0, Coverage: []routing.Coverage{{Field: routing.Path{routing.Attr("default")}, By: "all", ByPriority: 7, ByField: sels(1)}}}}},
		{"default reachable", []routing.Route{asDefault(route("rest", 0)), bySel("neg", 7, sel(nil, req("k", routing.DoesNotExist)))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustCompile(t, tt.routes...).StaticShadows(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("StaticShadows = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	res := func(cluster, route string) routing.Resolution {
		return routing.Resolution{Cluster: cluster, Route: route}
	}
	tests := []struct {
		name          string
		before, after []routing.Resolution
		want          []routing.Move
	}{
		{"no change", []routing.Resolution{res("a", "r")}, []routing.Resolution{res("a", "r")}, nil},
		{"route to route", []routing.Resolution{res("a", "r")}, []routing.Resolution{res("a", "s")}, []routing.Move{{Cluster: "a", From: "r", To: "s"}}},
		{"route to no route", []routing.Resolution{res("a", "r")}, []routing.Resolution{res("a", "")}, []routing.Move{{Cluster: "a", From: "r"}}},
		{"no route to route", []routing.Resolution{res("a", "")}, []routing.Resolution{res("a", "r")}, []routing.Move{{Cluster: "a", To: "r"}}},
		{"clusters on one side only are not moves", []routing.Resolution{res("gone", "r")}, []routing.Resolution{res("new", "s")}, nil},
		{"sorted by cluster", []routing.Resolution{res("b", "r"), res("a", "r"), res("c", "r")}, []routing.Resolution{res("c", "s"), res("b", "s"), res("a", "r")},
			[]routing.Move{{Cluster: "b", From: "r", To: "s"}, {Cluster: "c", From: "r", To: "s"}}},
		{"chain change within a route is no move", []routing.Resolution{{Cluster: "a", Route: "r", Registries: []string{"x"}}}, []routing.Resolution{{Cluster: "a", Route: "r", Registries: []string{"y"}}}, nil},
		{"empty", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := routing.Diff(tt.before, tt.after); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Diff = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("a new route captures clusters", func(t *testing.T) {
		inventory := []routing.Cluster{cluster("eu-1", ml("region", "eu")), cluster("eu-2", ml("region", "eu", "tier", "edge")), cluster("us-1", ml("region", "us"))}
		eu := withSelectors(route("eu", 10), sel(ml("region", "eu")))
		before := mustCompile(t, eu).ResolveAll(inventory)
		after := mustCompile(t, eu, withSelectors(route("edge", 5), sel(ml("tier", "edge"))), asDefault(route("rest", 0))).ResolveAll(inventory)
		want := []routing.Move{{Cluster: "eu-2", From: "eu", To: "edge"}, {Cluster: "us-1", To: "rest"}}
		if got := routing.Diff(before.Clusters, after.Clusters); !reflect.DeepEqual(got, want) {
			t.Fatalf("Diff = %+v, want %+v", got, want)
		}
	})
}
