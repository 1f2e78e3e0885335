package provider

import (
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"

	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// wonBy is the clusters of the workspace that route wins once it replaces the hub's routes named
// replaced, sorted. A route the plan leaves as it is on the hub wins what the hub's resolution,
// made once per plan, gives it; only a changed route is routed anew over every cluster.
func wonBy(route routing.Route, replaced []string, inv *inventory.Workspace) ([]string, error) {
	if unchangedOnHub(route, replaced, inv) {
		won, err := inv.Wins(route.Name)
		return slices.Clone(won), err
	}
	return routeWins(route, replaced, inv)
}

// routeWins routes every cluster of the workspace with route in place of the hub's routes named
// replaced, and returns the clusters route wins, sorted.
func routeWins(route routing.Route, replaced []string, inv *inventory.Workspace) ([]string, error) {
	routes := []routing.Route{route}
	for _, r := range inv.Routes {
		if !slices.Contains(replaced, r.Name) {
			routes = append(routes, r)
		}
	}
	router, err := routing.Compile(routes)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, cl := range inv.Clusters {
		if router.Resolve(cl).Route == route.Name {
			names = append(names, cl.Name)
		}
	}
	return names, nil
}

// unchangedOnHub reports whether route replacing the hub's routes named replaced leaves the hub's
// routes as they are: it replaces only itself, and the hub has it with these very values.
func unchangedOnHub(route routing.Route, replaced []string, inv *inventory.Workspace) bool {
	for _, name := range replaced {
		if name != route.Name {
			return false
		}
	}
	i, ok := slices.BinarySearchFunc(inv.Routes, route.Name, func(r routing.Route, name string) int { return strings.Compare(r.Name, name) })
	return ok && sameRoute(inv.Routes[i], route)
}

// sameRoute reports whether a and b route alike: the same values, an empty list or map being no
// list or map (the hub's spec writes every list out, a plan leaves an empty one out).
func sameRoute(a, b routing.Route) bool {
	return reflect.DeepEqual(normalRoute(a), normalRoute(b))
}

func normalRoute(r routing.Route) routing.Route {
	r.ClusterNames, r.ClusterGroups, r.Registries = nilIfEmpty(r.ClusterNames), nilIfEmpty(r.ClusterGroups), nilIfEmpty(r.Registries)
	if len(r.ClusterSelectors) == 0 {
		r.ClusterSelectors = nil
	}
	sels := make([]routing.Selector, len(r.ClusterSelectors))
	for i, s := range r.ClusterSelectors {
		if len(s.MatchLabels) == 0 {
			s.MatchLabels = nil
		}
		var exprs []routing.Requirement
		for _, e := range s.MatchExpressions {
			e.Values = nilIfEmpty(e.Values)
			exprs = append(exprs, e)
		}
		s.MatchExpressions = exprs
		sels[i] = s
	}
	if r.ClusterSelectors != nil {
		r.ClusterSelectors = sels
	}
	return r
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// listAtMost joins names, naming at most limit of them, or says "none yet".
func listAtMost(names []string, limit int) string {
	if len(names) == 0 {
		return "none yet"
	}
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:limit], ", ") + fmt.Sprintf(" and %d more", len(names)-limit)
}

// selectorCandidates is the clusters of the workspace that may match sel: those carrying the
// least common of its matchLabels (every match carries them all), or every cluster when it has
// none.
func selectorCandidates(sel routing.Selector, inv *inventory.Workspace) iter.Seq[*routing.Cluster] {
	var fewest []*routing.Cluster
	labelled := false
	for k, v := range sel.MatchLabels {
		if c := inv.Labelled(k, v); !labelled || len(c) < len(fewest) {
			fewest, labelled = c, true
		}
	}
	if labelled {
		return slices.Values(fewest)
	}
	return func(yield func(*routing.Cluster) bool) {
		for i := range inv.Clusters {
			if !yield(&inv.Clusters[i]) {
				return
			}
		}
	}
}
