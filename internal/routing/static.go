package routing

import "slices"

// StaticShadow is a route that can never win a cluster, on any inventory, because earlier routes
// match everything its criteria could select.
type StaticShadow struct {
	Route    string
	Priority int64
	Coverage []Coverage // one per criterion of the route (the default route: one for "default")
}

// Coverage says which earlier route's criterion covers one criterion of a shadowed route.
type Coverage struct {
	Field      Path // the shadowed route's criterion, e.g. cluster_names[0] or cluster_selectors[1]
	By         string
	ByPriority int64
	ByField    Path // the earlier route's criterion that covers it
}

// StaticShadows finds routes whose criteria are subsumed by earlier routes' regardless of
// inventory: each name is named earlier, each group is listed earlier, and each selector implies
// an earlier selector (an earlier empty selector covers everything). The default route is
// reported when an empty selector leaves it nothing to catch. The check is sound, not complete:
// a reported route never wins a cluster, but a route covered only by several earlier selectors
// together is not reported.
func (r *Router) StaticShadows() []StaticShadow {
	var out []StaticShadow
	for j, rt := range r.routes {
		if s, ok := staticShadow(rt, r.routes[:j]); ok {
			out = append(out, s)
		}
	}
	if r.def != nil {
		if s, ok := staticShadow(r.def, r.routes); ok {
			out = append(out, s)
		}
	}
	return out
}

// staticShadow reports whether the earlier routes cover every criterion of rt (see
// StaticShadows); a default route is covered by an earlier empty selector.
func staticShadow(rt *compiledRoute, earlier []*compiledRoute) (StaticShadow, bool) {
	names := map[string]Coverage{} // first earlier route naming a cluster rt names
	groups := map[string]Coverage{}
	var everything *Coverage // first empty selector
	for _, e := range earlier {
		for i, n := range e.ClusterNames {
			if _, ok := names[n]; !ok && slices.Contains(rt.ClusterNames, n) {
				names[n] = Coverage{By: e.Name, ByPriority: e.Priority, ByField: Path{Attr("cluster_names"), Index(i)}}
			}
		}
		for i, g := range e.ClusterGroups {
			if _, ok := groups[g]; !ok && slices.Contains(rt.ClusterGroups, g) {
				groups[g] = Coverage{By: e.Name, ByPriority: e.Priority, ByField: Path{Attr("cluster_groups"), Index(i)}}
			}
		}
		for s, reqs := range e.selectors {
			if len(reqs) == 0 && everything == nil {
				everything = &Coverage{By: e.Name, ByPriority: e.Priority, ByField: Path{Attr("cluster_selectors"), Index(s)}}
			}
		}
	}
	if rt.Default {
		if everything == nil {
			return StaticShadow{}, false
		}
		c := *everything
		c.Field = Path{Attr("default")}
		return StaticShadow{Route: rt.Name, Priority: rt.Priority, Coverage: []Coverage{c}}, true
	}
	var cov []Coverage
	for i, n := range rt.ClusterNames {
		if c, ok := earliest(names[n], everything); ok {
			c.Field = Path{Attr("cluster_names"), Index(i)}
			cov = append(cov, c)
		}
	}
	for i, g := range rt.ClusterGroups {
		if c, ok := earliest(groups[g], everything); ok {
			c.Field = Path{Attr("cluster_groups"), Index(i)}
			cov = append(cov, c)
		}
	}
	for s, reqs := range rt.selectors {
		if c, ok := coveringSelector(earlier, reqs); ok {
			c.Field = Path{Attr("cluster_selectors"), Index(s)}
			cov = append(cov, c)
		}
	}
	if len(cov) < len(rt.ClusterNames)+len(rt.ClusterGroups)+len(rt.selectors) {
		return StaticShadow{}, false
	}
	return StaticShadow{Route: rt.Name, Priority: rt.Priority, Coverage: cov}, true
}

// earliest returns whichever of a (the zero Coverage when absent) and b (nil when absent) has
// the lower priority.
func earliest(a Coverage, b *Coverage) (Coverage, bool) {
	switch {
	case b != nil && (a.By == "" || b.ByPriority < a.ByPriority):
		return *b, true
	case a.By != "":
		return a, true
	}
	return Coverage{}, false
}

// coveringSelector finds the first selector of the earlier routes that every cluster matching
// reqs also matches.
func coveringSelector(earlier []*compiledRoute, reqs []requirement) (Coverage, bool) {
	for _, rt := range earlier {
		for s, earlier := range rt.selectors {
			if implies(reqs, earlier) {
				return Coverage{By: rt.Name, ByPriority: rt.Priority, ByField: Path{Attr("cluster_selectors"), Index(s)}}, true
			}
		}
	}
	return Coverage{}, false
}

// implies reports whether every label set matching all of s matches all of t: each requirement
// of t must follow from one requirement of s.
func implies(s, t []requirement) bool {
	for i := range t {
		found := false
		for k := range s {
			if requirementImplies(&s[k], &t[i]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func requirementImplies(s, t *requirement) bool {
	if s.key != t.key {
		return false
	}
	switch t.op {
	case Exists:
		return s.op == In || s.op == Exists
	case DoesNotExist:
		return s.op == DoesNotExist
	case In:
		return s.op == In && subset(s.values, t)
	case NotIn:
		switch s.op {
		case In:
			for _, v := range s.values {
				if t.has(v) {
					return false
				}
			}
			return true
		case NotIn:
			return subset(t.values, s)
		case DoesNotExist:
			return true
		}
	}
	return false
}

// subset reports whether every value is among q's values.
func subset(values []string, q *requirement) bool {
	for _, v := range values {
		if !q.has(v) {
			return false
		}
	}
	return true
}
