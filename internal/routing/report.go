package routing

import (
	"cmp"
	"slices"
)

// Report is the routing of a whole inventory of clusters.
type Report struct {
	Clusters  []Resolution    // one per cluster, sorted by cluster name
	Routes    []RouteClusters // every route in evaluation order: ascending priority, default last
	Unmatched []string        // clusters no route matches, sorted
	Shadowed  []Shadow        // routes that select clusters but win none, in evaluation order
	Conflicts []Conflict      // shared priorities and extra default routes, and how they resolve
}

// RouteClusters lists the clusters a route wins.
type RouteClusters struct {
	Route    string
	Priority int64
	Default  bool
	Clusters []string // sorted
	// Conflict describes a conflict the route is part of ("" when none), e.g. a priority it
	// shares with another route.
	Conflict string
}

// Shadow is a route that selects clusters on this inventory, every one of which an earlier route
// matches first.
type Shadow struct {
	Route    string
	Priority int64
	Claims   []Claim // sorted by cluster
}

// Claim says which earlier route wins a cluster that a shadowed route also selects.
type Claim struct {
	Cluster  string
	Route    string
	Priority int64
}

// Resolution returns the resolution of the named cluster.
func (rep *Report) Resolution(cluster string) (Resolution, bool) {
	i, ok := slices.BinarySearchFunc(rep.Clusters, cluster, func(r Resolution, name string) int { return cmp.Compare(r.Cluster, name) })
	if !ok {
		return Resolution{}, false
	}
	return rep.Clusters[i], true
}

// ResolveAll resolves every cluster and reports per-route membership, unmatched clusters and
// shadowed routes. Cluster names are expected to be unique.
func (r *Router) ResolveAll(clusters []Cluster) *Report {
	rep := &Report{Clusters: make([]Resolution, len(clusters)), Conflicts: r.conflicts}
	for i, c := range clusters {
		rep.Clusters[i] = r.Resolve(c)
	}
	slices.SortFunc(rep.Clusters, func(a, b Resolution) int { return cmp.Compare(a.Cluster, b.Cluster) })

	pos := make(map[string]int, len(r.routes)+1) // route name → position in rep.Routes
	for i, rt := range r.routes {
		pos[rt.Name] = i
		rep.Routes = append(rep.Routes, RouteClusters{Route: rt.Name, Priority: rt.Priority})
	}
	if r.def != nil {
		pos[r.def.Name] = len(rep.Routes)
		rep.Routes = append(rep.Routes, RouteClusters{Route: r.def.Name, Priority: r.def.Priority, Default: true})
	}
	for _, d := range r.idle {
		pos[d.Name] = len(rep.Routes)
		rep.Routes = append(rep.Routes, RouteClusters{Route: d.Name, Priority: d.Priority, Default: true})
	}
	for _, c := range r.conflicts {
		for _, name := range c.Routes {
			rep.Routes[pos[name]].Conflict = c.String()
		}
	}
	for _, res := range rep.Clusters {
		if !res.Matched() {
			rep.Unmatched = append(rep.Unmatched, res.Cluster)
			continue
		}
		rc := &rep.Routes[pos[res.Route]]
		rc.Clusters = append(rc.Clusters, res.Cluster)
	}
	rep.Shadowed = r.shadows(clusters, rep)
	return rep
}

// shadows finds the non-default routes that win no cluster yet select some, by matching every
// cluster against an index of just those routes.
func (r *Router) shadows(clusters []Cluster, rep *Report) []Shadow {
	var idle []*compiledRoute
	for i, rt := range r.routes {
		if len(rep.Routes[i].Clusters) == 0 {
			idle = append(idle, rt)
		}
	}
	if len(idle) == 0 {
		return nil
	}
	x := newIndex(idle, r.labels)
	claims := make([][]Claim, len(idle))
	seen := make([]int, len(idle))
	for n, c := range clusters {
		x.each(c, seen, n+1, func(i int) {
			w, _ := rep.Resolution(c.Name)
			claims[i] = append(claims[i], Claim{Cluster: c.Name, Route: w.Route, Priority: w.Priority})
		})
	}
	var out []Shadow
	for i, rt := range idle {
		if len(claims[i]) == 0 {
			continue
		}
		slices.SortFunc(claims[i], func(a, b Claim) int { return cmp.Compare(a.Cluster, b.Cluster) })
		out = append(out, Shadow{Route: rt.Name, Priority: rt.Priority, Claims: claims[i]})
	}
	return out
}

// Move is a cluster whose route changes; "" stands for no route.
type Move struct {
	Cluster  string
	From, To string
}

// Diff lists, sorted by cluster, the clusters whose route differs between two resolutions of an
// inventory. Clusters present on one side only are not moves and are left out.
func Diff(before, after []Resolution) []Move {
	was := make(map[string]string, len(before))
	for _, r := range before {
		was[r.Cluster] = r.Route
	}
	var moves []Move
	for _, r := range after {
		if from, ok := was[r.Cluster]; ok && from != r.Route {
			moves = append(moves, Move{Cluster: r.Cluster, From: from, To: r.Route})
		}
	}
	slices.SortFunc(moves, func(a, b Move) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return moves
}
