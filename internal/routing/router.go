package routing

import (
	"cmp"
	"maps"
	"slices"
)

// Router resolves clusters against a compiled, validated set of routes. It is immutable and safe
// for concurrent use.
type Router struct {
	routes    []*compiledRoute // non-default routes in ascending priority, then name
	def       *compiledRoute   // the default route, or nil
	idle      []*compiledRoute // further default routes, sorted by name: they catch nothing
	conflicts []Conflict
	labels    *labelKeys // the label keys selectors test
	index     index      // over routes
}

type compiledRoute struct {
	Route
	selectors [][]requirement
}

// requirement is a Requirement with sorted, de-duplicated values; a MatchLabels pair becomes In
// with one value.
type requirement struct {
	key    string
	slot   int // position of key in the Router's labelKeys
	op     Operator
	values []string
	set    map[string]bool // values as a set, for long lists
}

// longValues is the length from which a requirement looks values up in a map.
const longValues = 8

// Compile validates routes and builds a Router. The error is Problems when validation fails.
// Conflicts do not fail it: routes are ordered by priority, then name, and of several default
// routes the one whose name sorts first is the default (see Conflicts). Compile copies what it
// keeps, so routes may be modified afterwards.
func Compile(routes []Route) (*Router, error) {
	if err := Validate(routes).Err(); err != nil {
		return nil, err
	}
	r := &Router{conflicts: Conflicts(routes)}
	var defs []*compiledRoute
	for _, rt := range routes {
		c := compileRoute(rt)
		if rt.Default {
			defs = append(defs, c)
		} else {
			r.routes = append(r.routes, c)
		}
	}
	slices.SortFunc(r.routes, func(a, b *compiledRoute) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(defs, func(a, b *compiledRoute) int { return cmp.Compare(a.Name, b.Name) })
	if len(defs) > 0 {
		r.def, r.idle = defs[0], defs[1:]
	}
	r.labels = newLabelKeys(r.routes)
	r.index = newIndex(r.routes, r.labels)
	return r, nil
}

func compileRoute(rt Route) *compiledRoute {
	c := &compiledRoute{Route: rt}
	c.ClusterNames = slices.Clone(rt.ClusterNames)
	c.ClusterGroups = slices.Clone(rt.ClusterGroups)
	c.Registries = slices.Clip(slices.Clone(rt.Registries))
	c.ClusterSelectors = nil // kept compiled, in selectors
	for _, s := range rt.ClusterSelectors {
		c.selectors = append(c.selectors, compileSelector(s))
	}
	return c
}

func set(items []string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, it := range items {
		m[it] = true
	}
	return m
}

func compileSelector(s Selector) []requirement {
	var reqs []requirement
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		reqs = append(reqs, newRequirement(k, In, []string{s.MatchLabels[k]}))
	}
	for _, e := range s.MatchExpressions {
		reqs = append(reqs, newRequirement(e.Key, e.Operator, e.Values))
	}
	return reqs
}

func newRequirement(key string, op Operator, values []string) requirement {
	q := requirement{key: key, op: op, values: slices.Compact(slices.Sorted(slices.Values(values)))}
	if len(q.values) >= longValues {
		q.set = set(q.values)
	}
	return q
}

func (q *requirement) has(v string) bool {
	if q.set != nil {
		return q.set[v]
	}
	for _, w := range q.values {
		if w == v {
			return true
		}
	}
	return false
}

func (q *requirement) matches(labels *labelReader) bool {
	l := labels.get(q.slot)
	switch q.op {
	case In:
		return l.ok && q.has(l.value)
	case NotIn:
		return !l.ok || !q.has(l.value)
	case Exists:
		return l.ok
	default: // DoesNotExist
		return !l.ok
	}
}

func matchesAll(reqs []requirement, labels *labelReader) bool {
	for i := range reqs {
		if !reqs[i].matches(labels) {
			return false
		}
	}
	return true
}

func (c *compiledRoute) resolution(cluster string, by MatchedBy) Resolution {
	return Resolution{
		Cluster:         cluster,
		Route:           c.Name,
		Priority:        c.Priority,
		Registries:      c.Registries,
		ReplicationWait: c.ReplicationWait,
		MatchedBy:       by,
	}
}

// Resolve returns the route and chain cluster c uses.
func (r *Router) Resolve(c Cluster) Resolution {
	if best := r.index.first(c); best != r.index.none() {
		return r.routes[position(best)].resolution(c.Name, matchedBy(best))
	}
	if r.def != nil {
		return r.def.resolution(c.Name, MatchedBy{Criterion: ByDefault})
	}
	return Resolution{Cluster: c.Name}
}
