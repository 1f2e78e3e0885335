package routing_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// randomFleet builds routes and clusters from a wider vocabulary than the fuzz targets': more
// keys, values of up to 40 bytes that share long prefixes (so that the index's hash reads past
// 16 bytes and strings differ only at their end), In lists long enough for the set lookup,
// selectors with more In requirements than an anchor takes and with several on one key.
func randomFleet(rng *rand.Rand) ([]routing.Route, []routing.Cluster) {
	keys := []string{"region", "zone", "tier", "env", "hw", "gpu", "example.com/site", "rack"}
	values := []string{"", "a", "b", "eu", "us", "prod", "edge-0001", "edge-0002",
		"a-rather-long-label-value-for-site-00001", "a-rather-long-label-value-for-site-00002",
		"sixteen-bytes-00", "sixteen-bytes-01", "seventeen-bytes-0"}
	ops := []routing.Operator{routing.In, routing.In, routing.In, routing.NotIn, routing.Exists, routing.DoesNotExist}
	key := func() string { return keys[rng.IntN(len(keys))] }
	value := func() string { return values[rng.IntN(len(values))] }
	someValues := func() []string {
		out := []string{value()}
		for range rng.IntN(3) * rng.IntN(5) { // mostly short lists, some of up to 8 values
			out = append(out, value())
		}
		return out
	}
	names := func(prefix string, n, of int) []string {
		var out []string
		for range n {
			out = append(out, fmt.Sprintf("%s%d", prefix, rng.IntN(of)))
		}
		return slices.Compact(slices.Sorted(slices.Values(out)))
	}

	var routes []routing.Route
	for i := range 1 + rng.IntN(60) {
		r := routing.Route{Name: fmt.Sprintf("route-%02d", i), Priority: int64(rng.IntN(100)), Registries: []string{"reg"}}
		if rng.IntN(25) == 0 {
			r.Default = true
			routes = append(routes, r)
			continue
		}
		if rng.IntN(6) == 0 {
			r.ClusterNames = names("cluster-", 1+rng.IntN(4), 300)
		}
		if rng.IntN(6) == 0 {
			r.ClusterGroups = names("set-", 1+rng.IntN(2), 8)
		}
		for range rng.IntN(3) {
			var s routing.Selector
			for range rng.IntN(4) {
				if s.MatchLabels == nil {
					s.MatchLabels = map[string]string{}
				}
				s.MatchLabels[key()] = value()
			}
			for range rng.IntN(5) {
				q := routing.Requirement{Key: key(), Operator: ops[rng.IntN(len(ops))]}
				if q.Operator == routing.In || q.Operator == routing.NotIn {
					q.Values = someValues()
				}
				s.MatchExpressions = append(s.MatchExpressions, q)
			}
			r.ClusterSelectors = append(r.ClusterSelectors, s)
		}
		if len(r.ClusterNames)+len(r.ClusterGroups)+len(r.ClusterSelectors) == 0 {
			r.ClusterSelectors = []routing.Selector{{MatchLabels: map[string]string{key(): value()}}}
		}
		routes = append(routes, r)
	}

	clusters := make([]routing.Cluster, 300)
	for i := range clusters {
		c := routing.Cluster{Name: fmt.Sprintf("cluster-%d", i), Labels: map[string]string{}, Groups: names("set-", rng.IntN(3), 8)}
		for _, k := range keys {
			if rng.IntN(3) > 0 {
				c.Labels[k] = value()
			}
		}
		if rng.IntN(4) == 0 {
			c.Labels["unrouted-"+strings.Repeat("x", rng.IntN(30))] = value()
		}
		clusters[i] = c
	}
	return routes, clusters
}

// TestResolveMatchesNaiveEvaluation checks the indexed resolver against evaluating every route in
// priority order, on random fleets: every cluster's resolution, and the clusters of the routes
// that win none (which ResolveAll finds through the index's other walk).
func TestResolveMatchesNaiveEvaluation(t *testing.T) {
	clusters, matched := 0, 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 18))
		routes, fleet := randomFleet(rng)
		router, err := routing.Compile(routes)
		if err != nil {
			t.Fatalf("seed %d: generated routes are invalid: %v", seed, err)
		}
		ref := newReference(t, routes)
		wins := map[string]bool{}
		for _, c := range fleet {
			got, want := router.Resolve(c), ref.resolve(c)
			if !sameResolution(got, want) {
				t.Fatalf("seed %d, cluster %+v:\nResolve = %+v\nnaive   = %+v", seed, c, got, want)
			}
			clusters++
			if got.MatchedBy.Criterion == routing.BySelector {
				matched++
			}
			wins[got.Route] = true
		}
		var wantIdle []string // routes that select clusters but win none
		for _, r := range ref.routes {
			if wins[r.Name] {
				continue
			}
			for _, c := range fleet {
				if _, ok := r.match(c); ok {
					wantIdle = append(wantIdle, r.Name)
					break
				}
			}
		}
		var gotIdle []string
		for _, s := range router.ResolveAll(fleet).Shadowed {
			gotIdle = append(gotIdle, s.Route)
		}
		if !reflect.DeepEqual(gotIdle, wantIdle) {
			t.Fatalf("seed %d: Shadowed routes %v, naive %v", seed, gotIdle, wantIdle)
		}
	}
	// The generator must make selectors that match: a test where every cluster falls through to
	// the default would pass whatever the index does.
	if matched < clusters/4 {
		t.Fatalf("only %d of %d clusters matched by a selector", matched, clusters)
	}
	t.Logf("%d clusters, %d matched by a selector", clusters, matched)
}
