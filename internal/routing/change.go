package routing

import (
	"cmp"
	"slices"
)

// Change is one route's planned change to a workspace: the routes it takes the place of (its
// version on the hub; on a rename also its prior name) and its next version (nil when removed).
type Change struct {
	Removed []string
	Next    *Route
}

// Effect is what a Change does to the clusters of an inventory.
type Effect struct {
	Moves  []Move        // clusters whose route changes, sorted by cluster
	Shadow *Shadow       // Next selects clusters but wins none of them
	Static *StaticShadow // Next can never win a cluster, on any inventory
}

// Effect computes what a Change does to clusters, which rep resolved with r (rep =
// r.ResolveAll(clusters)). It equals comparing r with a router compiled from the changed routes,
// but it resolves anew only the clusters the removed routes won and those the next version
// matches, against r's index: its cost grows with the clusters, not with the routes, so that a
// plan checking every route of a large workspace stays linear in them.
func (r *Router) Effect(clusters []Cluster, rep *Report, ch Change) (Effect, error) {
	var eff Effect
	removed := map[string]bool{}
	for _, name := range ch.Removed {
		removed[name] = true
	}
	skip := func(pos int) bool { return removed[r.routes[pos].Name] }

	var next *Router
	if ch.Next != nil {
		var err error
		if next, err = Compile([]Route{*ch.Next}); err != nil {
			return eff, err
		}
	}
	nextDefault := next != nil && next.def != nil
	// The default after the change: the first by name of the remaining and the new defaults.
	var def *compiledRoute
	for _, d := range append([]*compiledRoute{r.def}, r.idle...) {
		if d != nil && !removed[d.Name] && (def == nil || d.Name < def.Name) {
			def = d
		}
	}
	if nextDefault && (def == nil || next.def.Name < def.Name) {
		def = next.def
	}
	defaultChanged := (def == nil) != (r.def == nil) || def != nil && def.Name != r.def.Name || nextDefault && def == next.def

	var claims []Claim
	selected := 0
	for _, c := range clusters {
		was, _ := rep.Resolution(c.Name)
		var mine Resolution // the next version's match, when it is not the default
		if next != nil && !nextDefault {
			mine = next.Resolve(c)
		}
		byDefault := was.Route == "" || was.MatchedBy.Criterion == ByDefault // no non-default route matches
		if !removed[was.Route] && !mine.Matched() && !(defaultChanged && byDefault) {
			continue // untouched by the change
		}
		now := was
		switch {
		case byDefault:
			now = Resolution{Cluster: c.Name}
		case removed[was.Route]:
			now = Resolution{Cluster: c.Name}
			if best := r.index.firstExcept(c, skip); best != r.index.none() {
				now = r.routes[position(best)].resolution(c.Name, matchedBy(best))
			}
		}
		if mine.Matched() {
			selected++
			if !now.Matched() || cmp.Or(cmp.Compare(mine.Priority, now.Priority), cmp.Compare(mine.Route, now.Route)) < 0 {
				now = mine
			} else {
				claims = append(claims, Claim{Cluster: c.Name, Route: now.Route, Priority: now.Priority})
			}
		}
		if !now.Matched() && def != nil {
			now = def.resolution(c.Name, MatchedBy{Criterion: ByDefault})
		}
		if now.Route != was.Route {
			eff.Moves = append(eff.Moves, Move{Cluster: c.Name, From: was.Route, To: now.Route})
		}
	}
	slices.SortFunc(eff.Moves, func(a, b Move) int { return cmp.Compare(a.Cluster, b.Cluster) })
	if selected > 0 && len(claims) == selected {
		slices.SortFunc(claims, func(a, b Claim) int { return cmp.Compare(a.Cluster, b.Cluster) })
		eff.Shadow = &Shadow{Route: ch.Next.Name, Priority: ch.Next.Priority, Claims: claims}
	}
	if next != nil {
		rt := next.def
		if rt == nil {
			rt = next.routes[0]
		}
		if s, ok := staticShadow(rt, r.earlier(rt, removed)); ok {
			eff.Static = &s
		}
	}
	return eff, nil
}

// earlier returns the remaining routes evaluated before rt: every non-default route for a default
// one, else those before it by priority, then name.
func (r *Router) earlier(rt *compiledRoute, removed map[string]bool) []*compiledRoute {
	var out []*compiledRoute
	for _, e := range r.routes {
		if !rt.Default && cmp.Or(cmp.Compare(e.Priority, rt.Priority), cmp.Compare(e.Name, rt.Name)) >= 0 {
			break
		}
		if !removed[e.Name] {
			out = append(out, e)
		}
	}
	return out
}
