package routing_test

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// route starts a valid-chain route; the With helpers add criteria.
func route(name string, priority int64) routing.Route {
	return routing.Route{Name: name, Priority: priority, Registries: []string{strings.TrimSuffix("reg-"+name, "-")}}
}

func withNames(r routing.Route, names ...string) routing.Route {
	r.ClusterNames = names
	return r
}

func withGroups(r routing.Route, groups ...string) routing.Route {
	r.ClusterGroups = groups
	return r
}

func withSelectors(r routing.Route, sels ...routing.Selector) routing.Route {
	r.ClusterSelectors = sels
	return r
}

func asDefault(r routing.Route) routing.Route {
	r.Default = true
	return r
}

func ml(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func sel(matchLabels map[string]string, exprs ...routing.Requirement) routing.Selector {
	return routing.Selector{MatchLabels: matchLabels, MatchExpressions: exprs}
}

func req(key string, op routing.Operator, values ...string) routing.Requirement {
	return routing.Requirement{Key: key, Operator: op, Values: values}
}

func cluster(name string, labels map[string]string, groups ...string) routing.Cluster {
	return routing.Cluster{Name: name, Labels: labels, Groups: groups}
}

func mustCompile(t testing.TB, routes ...routing.Route) *routing.Router {
	t.Helper()
	r, err := routing.Compile(routes)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

// reference resolves the plain way, as Fleet matches targets: every route in priority order
// (ties by name),
// its names, its groups, then each selector compiled to a labels.Selector.
type reference struct {
	routes []refRoute // non-default routes, ascending priority
	def    *routing.Route
}

type refRoute struct {
	routing.Route
	names, groups map[string]bool
	selectors     []labels.Selector
}

func newReference(t testing.TB, routes []routing.Route) *reference {
	t.Helper()
	ref := &reference{}
	for _, r := range routes {
		if r.Default {
			if ref.def == nil || r.Name < ref.def.Name { // of several defaults, the first by name
				ref.def = &r
			}
			continue
		}
		rr := refRoute{Route: r, names: map[string]bool{}, groups: map[string]bool{}}
		for _, n := range r.ClusterNames {
			rr.names[n] = true
		}
		for _, g := range r.ClusterGroups {
			rr.groups[g] = true
		}
		for _, s := range r.ClusterSelectors {
			ls := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
			for _, e := range s.MatchExpressions {
				ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{
					Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values,
				})
			}
			s, err := metav1.LabelSelectorAsSelector(ls)
			if err != nil {
				t.Fatalf("route %s: %v", r.Name, err)
			}
			rr.selectors = append(rr.selectors, s)
		}
		ref.routes = append(ref.routes, rr)
	}
	slices.SortFunc(ref.routes, func(a, b refRoute) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Name, b.Name))
	})
	return ref
}

func (ref *reference) resolve(c routing.Cluster) routing.Resolution {
	for i := range ref.routes {
		r := &ref.routes[i]
		if by, ok := r.match(c); ok {
			return resolution(c.Name, r.Route, by)
		}
	}
	if ref.def != nil {
		return resolution(c.Name, *ref.def, routing.MatchedBy{Criterion: routing.ByDefault})
	}
	return routing.Resolution{Cluster: c.Name}
}

func (r *refRoute) match(c routing.Cluster) (routing.MatchedBy, bool) {
	if r.names[c.Name] {
		return routing.MatchedBy{Criterion: routing.ByName}, true
	}
	for _, g := range c.Groups {
		if r.groups[g] {
			return routing.MatchedBy{Criterion: routing.ByGroup}, true
		}
	}
	for i, s := range r.selectors {
		if s.Matches(labels.Set(c.Labels)) {
			return routing.MatchedBy{Criterion: routing.BySelector, Selector: i}, true
		}
	}
	return routing.MatchedBy{}, false
}

func resolution(cluster string, r routing.Route, by routing.MatchedBy) routing.Resolution {
	return routing.Resolution{
		Cluster: cluster, Route: r.Name, Priority: r.Priority,
		Registries: r.Registries, ReplicationWait: r.ReplicationWait, MatchedBy: by,
	}
}

// sameResolution compares everything but the identity of the Registries slice.
func sameResolution(a, b routing.Resolution) bool {
	return a.Cluster == b.Cluster && a.Route == b.Route && a.Priority == b.Priority &&
		slices.Equal(a.Registries, b.Registries) && a.ReplicationWait == b.ReplicationWait && a.MatchedBy == b.MatchedBy
}
