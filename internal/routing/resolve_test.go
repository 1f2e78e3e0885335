package routing_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

func TestResolve(t *testing.T) {
	eu := withSelectors(route("eu", 10), sel(ml("region", "eu")))
	in := func(vals ...string) routing.Route {
		return withSelectors(route("r", 10), sel(nil, req("site", routing.In, vals...)))
	}
	notIn := func(vals ...string) routing.Route {
		return withSelectors(route("r", 10), sel(nil, req("site", routing.NotIn, vals...)))
	}
	exists := withSelectors(route("r", 10), sel(nil, req("gpu", routing.Exists)))
	dne := withSelectors(route("r", 10), sel(nil, req("gpu", routing.DoesNotExist)))
	long := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"}
	named := withNames(route("named", 20), "c1", "c2", "c3")
	grouped := withGroups(route("grouped", 30), "stores", "labs")
	mixed := withSelectors(withGroups(withNames(route("mixed", 10), "c1"), "stores"), sel(ml("tier", "edge")))
	def := asDefault(route("def", 0))
	manyKeys := route("many", 10) // more label keys than Resolve reads on the stack
	for i := range 20 {
		manyKeys.ClusterSelectors = append(manyKeys.ClusterSelectors, sel(ml(fmt.Sprintf("k%02d", i), "v")))
	}

	tests := []struct {
		name    string
		routes  []routing.Route
		cluster routing.Cluster
		want    string // route, "" for none
		by      string // MatchedBy.String()
	}{
		// matchLabels
		{"match labels: one pair matches", []routing.Route{eu}, cluster("c", ml("region", "eu")), "eu", "cluster_selectors[0]"},
		{"match labels: other value", []routing.Route{eu}, cluster("c", ml("region", "us")), "", ""},
		{"match labels: key missing", []routing.Route{eu}, cluster("c", ml("tier", "edge")), "", ""},
		{"match labels: nil labels", []routing.Route{eu}, cluster("c", nil), "", ""},
		{"match labels: two pairs both hold", []routing.Route{withSelectors(route("r", 1), sel(ml("region", "eu", "tier", "edge")))}, cluster("c", ml("region", "eu", "tier", "edge", "x", "y")), "r", "cluster_selectors[0]"},
		{"match labels: two pairs one fails", []routing.Route{withSelectors(route("r", 1), sel(ml("region", "eu", "tier", "edge")))}, cluster("c", ml("region", "eu", "tier", "core")), "", ""},
		{"match labels: empty value matches empty label", []routing.Route{withSelectors(route("r", 1), sel(ml("edge", "")))}, cluster("c", ml("edge", "")), "r", "cluster_selectors[0]"},
		{"match labels: empty value needs the key", []routing.Route{withSelectors(route("r", 1), sel(ml("edge", "")))}, cluster("c", nil), "", ""},
		{"match labels: value is case sensitive", []routing.Route{eu}, cluster("c", ml("region", "EU")), "", ""},
		// In
		{"in: first value", []routing.Route{in("a", "b")}, cluster("c", ml("site", "a")), "r", "cluster_selectors[0]"},
		{"in: second value", []routing.Route{in("a", "b")}, cluster("c", ml("site", "b")), "r", "cluster_selectors[0]"},
		{"in: other value", []routing.Route{in("a", "b")}, cluster("c", ml("site", "z")), "", ""},
		{"in: key missing", []routing.Route{in("a", "b")}, cluster("c", ml("region", "a")), "", ""},
		{"in: repeated values", []routing.Route{in("a", "a", "b")}, cluster("c", ml("site", "b")), "r", "cluster_selectors[0]"},
		{"in: long list matches", []routing.Route{in(long...)}, cluster("c", ml("site", "s7")), "r", "cluster_selectors[0]"},
		{"in: long list misses", []routing.Route{in(long...)}, cluster("c", ml("site", "s10")), "", ""},
		// NotIn
		{"not in: excluded value", []routing.Route{notIn("a", "b")}, cluster("c", ml("site", "a")), "", ""},
		{"not in: other value", []routing.Route{notIn("a", "b")}, cluster("c", ml("site", "z")), "r", "cluster_selectors[0]"},
		{"not in: key missing matches", []routing.Route{notIn("a")}, cluster("c", ml("region", "eu")), "r", "cluster_selectors[0]"},
		{"not in: nil labels match", []routing.Route{notIn("a")}, cluster("c", nil), "r", "cluster_selectors[0]"},
		{"not in: long list excluded", []routing.Route{notIn(long...)}, cluster("c", ml("site", "s9")), "", ""},
		{"not in: long list other", []routing.Route{notIn(long...)}, cluster("c", ml("site", "x")), "r", "cluster_selectors[0]"},
		// Exists, DoesNotExist
		{"exists: key present", []routing.Route{exists}, cluster("c", ml("gpu", "a100")), "r", "cluster_selectors[0]"},
		{"exists: empty value counts", []routing.Route{exists}, cluster("c", ml("gpu", "")), "r", "cluster_selectors[0]"},
		{"exists: key missing", []routing.Route{exists}, cluster("c", ml("cpu", "x")), "", ""},
		{"does not exist: key missing", []routing.Route{dne}, cluster("c", ml("cpu", "x")), "r", "cluster_selectors[0]"},
		{"does not exist: nil labels", []routing.Route{dne}, cluster("c", nil), "r", "cluster_selectors[0]"},
		{"does not exist: key present", []routing.Route{dne}, cluster("c", ml("gpu", "")), "", ""},
		// combinations within one selector
		{"labels and expressions all hold", []routing.Route{withSelectors(route("r", 1), sel(ml("region", "eu"), req("tier", routing.In, "edge", "store"), req("gpu", routing.DoesNotExist)))}, cluster("c", ml("region", "eu", "tier", "store")), "r", "cluster_selectors[0]"},
		{"labels hold, an expression fails", []routing.Route{withSelectors(route("r", 1), sel(ml("region", "eu"), req("gpu", routing.DoesNotExist)))}, cluster("c", ml("region", "eu", "gpu", "x")), "", ""},
		{"in and not in on one key: allowed value", []routing.Route{withSelectors(route("r", 1), sel(nil, req("site", routing.In, "a", "b"), req("site", routing.NotIn, "b")))}, cluster("c", ml("site", "a")), "r", "cluster_selectors[0]"},
		{"in and not in on one key: excluded value", []routing.Route{withSelectors(route("r", 1), sel(nil, req("site", routing.In, "a", "b"), req("site", routing.NotIn, "b")))}, cluster("c", ml("site", "b")), "", ""},
		{"exists and does not exist on other keys", []routing.Route{withSelectors(route("r", 1), sel(nil, req("a", routing.Exists), req("b", routing.DoesNotExist)))}, cluster("c", ml("a", "1")), "r", "cluster_selectors[0]"},
		{"exists and does not exist on one key never match", []routing.Route{withSelectors(route("r", 1), sel(nil, req("a", routing.Exists), req("a", routing.DoesNotExist)))}, cluster("c", ml("a", "1")), "", ""},
		{"only negative requirements", []routing.Route{withSelectors(route("r", 1), sel(nil, req("env", routing.NotIn, "prod"), req("gpu", routing.DoesNotExist)))}, cluster("c", ml("env", "dev")), "r", "cluster_selectors[0]"},
		// empty selector
		{"empty selector matches any labels", []routing.Route{withSelectors(route("r", 1), sel(nil))}, cluster("c", ml("a", "b")), "r", "cluster_selectors[0]"},
		{"empty selector matches nil labels", []routing.Route{withSelectors(route("r", 1), routing.Selector{})}, cluster("c", nil), "r", "cluster_selectors[0]"},
		{"empty match labels map is empty selector", []routing.Route{withSelectors(route("r", 1), sel(map[string]string{}))}, cluster("c", nil), "r", "cluster_selectors[0]"},
		// several selectors are ORed
		{"second selector matches", []routing.Route{withSelectors(route("r", 1), sel(ml("region", "us")), sel(ml("region", "eu")))}, cluster("c", ml("region", "eu")), "r", "cluster_selectors[1]"},
		{"both selectors match: first reported", []routing.Route{withSelectors(route("r", 1), sel(ml("region", "eu")), sel(nil, req("region", routing.Exists)))}, cluster("c", ml("region", "eu")), "r", "cluster_selectors[0]"},
		{"no selector matches", []routing.Route{withSelectors(route("r", 1), sel(ml("region", "us")), sel(ml("tier", "core")))}, cluster("c", ml("region", "eu", "tier", "edge")), "", ""},
		{"third selector unanchored matches", []routing.Route{withSelectors(route("r", 1), sel(ml("a", "1")), sel(nil, req("b", routing.Exists)), sel(nil, req("c", routing.DoesNotExist)))}, cluster("x", ml("a", "2")), "r", "cluster_selectors[2]"},
		// names and groups
		{"names: listed", []routing.Route{named}, cluster("c2", nil), "named", "cluster_names"},
		{"names: last listed", []routing.Route{named}, cluster("c3", ml("a", "b")), "named", "cluster_names"},
		{"names: not listed", []routing.Route{named}, cluster("c4", nil), "", ""},
		{"names: prefix is not a match", []routing.Route{named}, cluster("c", nil), "", ""},
		{"groups: member", []routing.Route{grouped}, cluster("c", nil, "labs"), "grouped", "cluster_groups"},
		{"groups: one of several memberships", []routing.Route{grouped}, cluster("c", nil, "other", "stores"), "grouped", "cluster_groups"},
		{"groups: not a member", []routing.Route{grouped}, cluster("c", nil, "other"), "", ""},
		{"groups: no memberships", []routing.Route{grouped}, cluster("c", nil), "", ""},
		{"groups: name equal to a group is not membership", []routing.Route{grouped}, cluster("stores", nil), "", ""},
		// criteria mixed in one route
		{"mixed: name wins over selector", []routing.Route{mixed}, cluster("c1", ml("tier", "edge"), "stores"), "mixed", "cluster_names"},
		{"mixed: group before selector", []routing.Route{mixed}, cluster("c9", ml("tier", "edge"), "stores"), "mixed", "cluster_groups"},
		{"mixed: selector only", []routing.Route{mixed}, cluster("c9", ml("tier", "edge")), "mixed", "cluster_selectors[0]"},
		{"mixed: nothing", []routing.Route{mixed}, cluster("c9", ml("tier", "core"), "labs"), "", ""},
		// priority
		{"lower priority wins", []routing.Route{withSelectors(route("late", 20), sel(nil)), withSelectors(route("early", 10), sel(ml("region", "eu")))}, cluster("c", ml("region", "eu")), "early", "cluster_selectors[0]"},
		{"input order does not matter", []routing.Route{withSelectors(route("early", 10), sel(ml("region", "eu"))), withSelectors(route("late", 20), sel(nil))}, cluster("c", ml("region", "eu")), "early", "cluster_selectors[0]"},
		{"earlier route misses, later matches", []routing.Route{withSelectors(route("early", 10), sel(ml("region", "us"))), withSelectors(route("late", 20), sel(nil))}, cluster("c", ml("region", "eu")), "late", "cluster_selectors[0]"},
		{"negative priority first", []routing.Route{withNames(route("zero", 0), "c"), withNames(route("neg", -5), "c")}, cluster("c", nil), "neg", "cluster_names"},
		{"selector route before name route", []routing.Route{withNames(route("pin", 50), "c"), withSelectors(route("eu", 5), sel(ml("region", "eu")))}, cluster("c", ml("region", "eu")), "eu", "cluster_selectors[0]"},
		{"name route before selector route", []routing.Route{withNames(route("pin", 5), "c"), withSelectors(route("eu", 50), sel(ml("region", "eu")))}, cluster("c", ml("region", "eu")), "pin", "cluster_names"},
		{"group route before name route", []routing.Route{withNames(route("pin", 9), "c"), withGroups(route("grp", 8), "g")}, cluster("c", nil, "g"), "grp", "cluster_groups"},
		{"middle of three matches", []routing.Route{withSelectors(route("a", 1), sel(ml("k", "1"))), withSelectors(route("b", 2), sel(ml("k", "2"))), withSelectors(route("c", 3), sel(nil))}, cluster("x", ml("k", "2")), "b", "cluster_selectors[0]"},
		{"extreme priorities", []routing.Route{withSelectors(route("max", 1<<63-1), sel(nil)), withSelectors(route("min", -1<<63), sel(nil))}, cluster("x", nil), "min", "cluster_selectors[0]"},
		{"unanchored earlier beats anchored later", []routing.Route{withSelectors(route("anch", 2), sel(ml("k", "1"))), withSelectors(route("neg", 1), sel(nil, req("gpu", routing.DoesNotExist)))}, cluster("x", ml("k", "1")), "neg", "cluster_selectors[0]"},
		{"anchored earlier beats unanchored later", []routing.Route{withSelectors(route("anch", 1), sel(ml("k", "1"))), withSelectors(route("neg", 2), sel(nil, req("gpu", routing.DoesNotExist)))}, cluster("x", ml("k", "1")), "anch", "cluster_selectors[0]"},
		{"exists anchor earlier than value anchor", []routing.Route{withSelectors(route("val", 2), sel(ml("k", "1"))), withSelectors(route("ex", 1), sel(nil, req("k", routing.Exists)))}, cluster("x", ml("k", "1")), "ex", "cluster_selectors[0]"},
		{"cluster with fewer labels than indexed keys", []routing.Route{withSelectors(route("a", 1), sel(ml("k1", "v"))), withSelectors(route("b", 2), sel(ml("k2", "v"))), withSelectors(route("c", 3), sel(ml("k3", "v")))}, cluster("x", ml("k3", "v")), "c", "cluster_selectors[0]"},
		{"cluster with more labels than indexed keys", []routing.Route{withSelectors(route("a", 1), sel(ml("k1", "v")))}, cluster("x", ml("k0", "v", "k1", "v", "k2", "v")), "a", "cluster_selectors[0]"},
		{"anchor on short in list still checks the rest", []routing.Route{withSelectors(route("a", 1), sel(nil, req("k", routing.In, "1", "2", "3"), req("j", routing.In, "x")))}, cluster("x", ml("j", "x", "k", "4")), "", ""},
		{"twenty label keys: last selector", []routing.Route{manyKeys}, cluster("x", ml("k19", "v", "other", "v")), "many", "cluster_selectors[19]"},
		{"twenty label keys: none", []routing.Route{manyKeys}, cluster("x", ml("k19", "w")), "", ""},
		// default route
		{"default catches the unmatched", []routing.Route{eu, def}, cluster("c", ml("region", "us")), "def", "default"},
		{"default with lowest priority loses to a match", []routing.Route{eu, asDefault(route("def", -100))}, cluster("c", ml("region", "eu")), "eu", "cluster_selectors[0]"},
		{"default with highest priority", []routing.Route{eu, asDefault(route("def", 1000))}, cluster("c", nil), "def", "default"},
		{"default sharing a priority with a route", []routing.Route{eu, asDefault(route("def", 10))}, cluster("c", ml("region", "eu")), "eu", "cluster_selectors[0]"},
		{"only a default route", []routing.Route{def}, cluster("c", ml("a", "b"), "g"), "def", "default"},
		// no match
		{"no routes", nil, cluster("c", ml("a", "b")), "", ""},
		{"no route matches and no default", []routing.Route{eu, named, grouped}, cluster("c9", ml("region", "us"), "g"), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCompile(t, tt.routes...).Resolve(tt.cluster)
			if got.Route != tt.want || got.MatchedBy.String() != tt.by || got.Cluster != tt.cluster.Name {
				t.Fatalf("Resolve = route %q by %q (cluster %q), want %q by %q", got.Route, got.MatchedBy, got.Cluster, tt.want, tt.by)
			}
			if ref := newReference(t, tt.routes).resolve(tt.cluster); !sameResolution(got, ref) {
				t.Fatalf("Resolve = %+v, reference %+v", got, ref)
			}
		})
	}
}

func TestResolveCarriesTheRoute(t *testing.T) {
	r := withSelectors(route("eu", 7), sel(ml("region", "eu")))
	r.Registries = []string{"harbor-eu", "harbor-central"}
	r.ReplicationWait = 10 * time.Minute
	d := asDefault(route("rest", 3))
	d.Registries = []string{"harbor-central"}
	d.ReplicationWait = time.Minute
	router := mustCompile(t, r, d)
	r.Registries[0] = "changed-after-compile"

	tests := []struct {
		name    string
		cluster routing.Cluster
		want    routing.Resolution
	}{
		{"matched route", cluster("eu-1", ml("region", "eu")), routing.Resolution{
			Cluster: "eu-1", Route: "eu", Priority: 7, Registries: []string{"harbor-eu", "harbor-central"},
			ReplicationWait: 10 * time.Minute, MatchedBy: routing.MatchedBy{Criterion: routing.BySelector},
		}},
		{"default route", cluster("us-1", ml("region", "us")), routing.Resolution{
			Cluster: "us-1", Route: "rest", Priority: 3, Registries: []string{"harbor-central"},
			ReplicationWait: time.Minute, MatchedBy: routing.MatchedBy{Criterion: routing.ByDefault},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := router.Resolve(tt.cluster); !sameResolution(got, tt.want) || !got.Matched() {
				t.Fatalf("Resolve = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("unmatched", func(t *testing.T) {
		got := mustCompile(t, r).Resolve(cluster("us-1", nil))
		if got.Matched() || !sameResolution(got, routing.Resolution{Cluster: "us-1"}) || got.Registries != nil {
			t.Fatalf("Resolve = %+v, want unmatched", got)
		}
	})
	t.Run("chain is clipped", func(t *testing.T) {
		got := router.Resolve(cluster("eu-1", ml("region", "eu")))
		_ = append(got.Registries, "appended")
		if again := router.Resolve(cluster("eu-1", ml("region", "eu"))); !slices.Equal(again.Registries, []string{"harbor-eu", "harbor-central"}) {
			t.Fatalf("chain changed by a caller's append: %v", again.Registries)
		}
	})
}

func TestMatchedByString(t *testing.T) {
	tests := []struct {
		name string
		by   routing.MatchedBy
		want string
	}{
		{"unmatched", routing.MatchedBy{}, ""},
		{"names", routing.MatchedBy{Criterion: routing.ByName}, "cluster_names"},
		{"groups", routing.MatchedBy{Criterion: routing.ByGroup}, "cluster_groups"},
		{"selector index", routing.MatchedBy{Criterion: routing.BySelector, Selector: 3}, "cluster_selectors[3]"},
		{"default", routing.MatchedBy{Criterion: routing.ByDefault}, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.by.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
