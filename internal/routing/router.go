package routing

import (
	"cmp"
	"maps"
	"slices"
)

// Router resolves clusters against a compiled, validated set of routes. It is immutable and safe
// for concurrent use.
type Router struct {
	routes []*compiledRoute // non-default routes in ascending priority
	def    *compiledRoute   // the default route, or nil
	index  index            // over routes
}

type compiledRoute struct {
	Route
	names, groups map[string]bool
	selectors     [][]requirement
}

// requirement is a Requirement with sorted, de-duplicated values; a MatchLabels pair becomes In
// with one value.
type requirement struct {
	key    string
	op     Operator
	values []string
	set    map[string]bool // values as a set, for long lists
}

// longValues is the length from which a requirement looks values up in a map.
const longValues = 8

// Compile validates routes and builds a Router. The error is Problems when validation fails.
// Compile copies what it keeps, so routes may be modified afterwards.
func Compile(routes []Route) (*Router, error) {
	if err := Validate(routes).Err(); err != nil {
		return nil, err
	}
	r := &Router{}
	for _, rt := range routes {
		c := compileRoute(rt)
		if rt.Default {
			r.def = c
		} else {
			r.routes = append(r.routes, c)
		}
	}
	slices.SortFunc(r.routes, func(a, b *compiledRoute) int { return cmp.Compare(a.Priority, b.Priority) })
	r.index = newIndex(r.routes)
	return r, nil
}

func compileRoute(rt Route) *compiledRoute {
	rt.ClusterNames = slices.Clone(rt.ClusterNames)
	rt.ClusterGroups = slices.Clone(rt.ClusterGroups)
	rt.Registries = slices.Clip(slices.Clone(rt.Registries))
	sels := make([]Selector, len(rt.ClusterSelectors))
	c := &compiledRoute{names: set(rt.ClusterNames), groups: set(rt.ClusterGroups)}
	for i, s := range rt.ClusterSelectors {
		sels[i] = Selector{MatchLabels: maps.Clone(s.MatchLabels), MatchExpressions: slices.Clone(s.MatchExpressions)}
		c.selectors = append(c.selectors, compileSelector(s))
	}
	rt.ClusterSelectors = sels
	c.Route = rt
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

func (q *requirement) matches(labels map[string]string) bool {
	v, ok := labels[q.key]
	switch q.op {
	case In:
		return ok && q.has(v)
	case NotIn:
		return !ok || !q.has(v)
	case Exists:
		return ok
	default: // DoesNotExist
		return !ok
	}
}

func matchesAll(reqs []requirement, labels map[string]string) bool {
	for i := range reqs {
		if !reqs[i].matches(labels) {
			return false
		}
	}
	return true
}

// matchedBy reports the first criterion of the route that matches c, in the order names, groups,
// selectors; the zero MatchedBy when none does.
func (c *compiledRoute) matchedBy(cl Cluster) MatchedBy {
	if c.names[cl.Name] {
		return MatchedBy{Criterion: ByName}
	}
	for _, g := range cl.Groups {
		if c.groups[g] {
			return MatchedBy{Criterion: ByGroup}
		}
	}
	for i, reqs := range c.selectors {
		if matchesAll(reqs, cl.Labels) {
			return MatchedBy{Criterion: BySelector, Selector: i}
		}
	}
	return MatchedBy{}
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
	if i := r.index.first(c); i < len(r.routes) {
		rt := r.routes[i]
		return rt.resolution(c.Name, rt.matchedBy(c))
	}
	if r.def != nil {
		return r.def.resolution(c.Name, MatchedBy{Criterion: ByDefault})
	}
	return Resolution{Cluster: c.Name}
}
