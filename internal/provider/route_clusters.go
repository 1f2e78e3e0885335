package provider

import (
	"fmt"
	"slices"
	"strings"

	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// wonBy is the clusters of the workspace that route wins once it replaces the hub's routes named
// replaced, sorted.
func wonBy(route routing.Route, replaced []string, inv *inventory.Workspace) ([]string, error) {
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
