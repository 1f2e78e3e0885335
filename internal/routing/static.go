package routing

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
	names := map[string]Coverage{} // first route naming a cluster
	groups := map[string]Coverage{}
	var everything *Coverage // first empty selector
	for j, rt := range r.routes {
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
			if c, ok := r.coveringSelector(j, reqs); ok {
				c.Field = Path{Attr("cluster_selectors"), Index(s)}
				cov = append(cov, c)
			}
		}
		if len(cov) == len(rt.ClusterNames)+len(rt.ClusterGroups)+len(rt.selectors) {
			out = append(out, StaticShadow{Route: rt.Name, Priority: rt.Priority, Coverage: cov})
		}

		for i, n := range rt.ClusterNames {
			if _, ok := names[n]; !ok {
				names[n] = Coverage{By: rt.Name, ByPriority: rt.Priority, ByField: Path{Attr("cluster_names"), Index(i)}}
			}
		}
		for i, g := range rt.ClusterGroups {
			if _, ok := groups[g]; !ok {
				groups[g] = Coverage{By: rt.Name, ByPriority: rt.Priority, ByField: Path{Attr("cluster_groups"), Index(i)}}
			}
		}
		for s, reqs := range rt.selectors {
			if len(reqs) == 0 && everything == nil {
				everything = &Coverage{By: rt.Name, ByPriority: rt.Priority, ByField: Path{Attr("cluster_selectors"), Index(s)}}
			}
		}
	}
	if r.def != nil && everything != nil {
		c := *everything
		c.Field = Path{Attr("default")}
		out = append(out, StaticShadow{Route: r.def.Name, Priority: r.def.Priority, Coverage: []Coverage{c}})
	}
	return out
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

// coveringSelector finds the first selector of a route before position j that every cluster
// matching reqs also matches.
func (r *Router) coveringSelector(j int, reqs []requirement) (Coverage, bool) {
	for _, rt := range r.routes[:j] {
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
