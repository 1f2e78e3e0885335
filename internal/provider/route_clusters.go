package provider

import (
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// routeWon is what one route's plan check knows of the clusters the route wins once its change
// applies. Whether the change leaves the hub's routes as they are is decided once, as the check
// begins; the clusters are found at most once, on first use: a route the plan leaves as it is
// wins what the hub's resolution, made once per plan, gives it; only a changed route is routed
// anew over every cluster.
type routeWon struct {
	// Unchanged: the route replaces only itself, and the hub has it with these very values.
	Unchanged bool
	clusters  func() ([]string, error)
}

// wonBy is what route wins once it replaces the hub's routes named replaced.
func wonBy(route routing.Route, replaced []string, inv *inventory.Workspace) *routeWon {
	w := &routeWon{Unchanged: unchangedOnHub(route, replaced, inv)}
	w.clusters = sync.OnceValues(func() ([]string, error) {
		if w.Unchanged {
			return inv.Wins(route.Name)
		}
		return routeWins(route, replaced, inv)
	})
	return w
}

// Clusters is the clusters the route wins, sorted by name. Callers must not modify them.
func (w *routeWon) Clusters() ([]string, error) { return w.clusters() }

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
// routes as they are: it replaces only itself, and the hub has it with these very values. The
// plan's model and the hub's spec both read an empty list as none (routeOf, inventory.RouteFrom),
// so a plain comparison serves.
func unchangedOnHub(route routing.Route, replaced []string, inv *inventory.Workspace) bool {
	for _, name := range replaced {
		if name != route.Name {
			return false
		}
	}
	i, ok := slices.BinarySearchFunc(inv.Routes, route.Name, func(r routing.Route, name string) int { return strings.Compare(r.Name, name) })
	return ok && reflect.DeepEqual(inv.Routes[i], route)
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
