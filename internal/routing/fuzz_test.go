package routing_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// gen turns fuzz bytes into small routes and clusters over a tiny vocabulary, so that names,
// groups and labels collide often. Past the end of data it reads zeros.
type gen struct{ data []byte }

func (g *gen) next(n int) int {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return int(b) % n
}

func (g *gen) pick(words ...string) string { return words[g.next(len(words))] }

func (g *gen) some(max int, word func() string) []string {
	out := make([]string, g.next(max+1))
	for i := range out {
		out[i] = word()
	}
	return out
}

var (
	fuzzKeys   = []string{"region", "tier", "gpu", "env"}
	fuzzValues = []string{"a", "b", "c", ""}
	fuzzOps    = []routing.Operator{routing.In, routing.NotIn, routing.Exists, routing.DoesNotExist}
)

func (g *gen) routes() []routing.Route {
	n := g.next(8)
	hasDefault := g.next(3) == 0
	used := map[int64]bool{}
	var routes []routing.Route
	for i := range n {
		p := int64(g.next(16)) - 4
		for used[p] {
			p++
		}
		used[p] = true
		r := routing.Route{Name: fmt.Sprintf("r%d", i), Priority: p, Registries: []string{fmt.Sprintf("reg%d", i)}}
		if hasDefault && i == 0 {
			r.Default = true
			routes = append(routes, r)
			continue
		}
		r.ClusterNames = slices.Compact(slices.Sorted(slices.Values(g.some(2, func() string { return g.pick("c0", "c1", "c2", "c3", "c4", "c5") }))))
		r.ClusterGroups = slices.Compact(slices.Sorted(slices.Values(g.some(2, func() string { return g.pick("g0", "g1", "g2") }))))
		for range g.next(4) {
			r.ClusterSelectors = append(r.ClusterSelectors, g.selector())
		}
		if len(r.ClusterNames)+len(r.ClusterGroups)+len(r.ClusterSelectors) == 0 {
			r.ClusterNames = []string{g.pick("c0", "c1", "c2", "c3", "c4", "c5")}
		}
		routes = append(routes, r)
	}
	return routes
}

func (g *gen) selector() routing.Selector {
	var s routing.Selector
	for range g.next(3) {
		if s.MatchLabels == nil {
			s.MatchLabels = map[string]string{}
		}
		s.MatchLabels[g.pick(fuzzKeys...)] = g.pick(fuzzValues...)
	}
	for range g.next(4) {
		q := routing.Requirement{Key: g.pick(fuzzKeys...), Operator: fuzzOps[g.next(len(fuzzOps))]}
		if q.Operator == routing.In || q.Operator == routing.NotIn {
			q.Values = g.some(2, func() string { return g.pick(fuzzValues...) })
			q.Values = append(q.Values, g.pick(fuzzValues...))
		}
		s.MatchExpressions = append(s.MatchExpressions, q)
	}
	return s
}

func (g *gen) clusters() []routing.Cluster {
	out := make([]routing.Cluster, g.next(9))
	for i := range out {
		c := routing.Cluster{Name: fmt.Sprintf("c%d", i), Labels: map[string]string{}}
		for _, k := range fuzzKeys {
			if g.next(3) > 0 {
				c.Labels[k] = g.pick(fuzzValues...)
			}
		}
		c.Groups = g.some(2, func() string { return g.pick("g0", "g1", "g2") })
		out[i] = c
	}
	return out
}

// FuzzResolve checks the indexed resolver, the inventory shadow report and the soundness of
// static shadowing against the plain reference loop.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("route everything to the default"))
	f.Add([]byte{3, 1, 5, 0, 2, 1, 1, 3, 0, 1, 2, 3, 0, 1, 7, 2, 2, 1, 0, 3, 6, 1, 2, 0, 0, 1, 9, 4, 4, 4, 1})
	f.Add([]byte{7, 0, 9, 1, 1, 2, 0, 2, 3, 1, 2, 1, 0, 2, 3, 2, 1, 1, 3, 8, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 8})
	f.Add([]byte{5, 2, 1, 0, 0, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 3, 3, 3, 3, 8, 8, 8, 8, 8, 8, 8, 8, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		routes := g.routes()
		clusters := g.clusters()
		router, err := routing.Compile(routes)
		if err != nil {
			t.Fatalf("generated routes are invalid: %v", err)
		}
		ref := newReference(t, routes)

		wins := map[string]int{}
		want := map[string]routing.Resolution{}
		for _, c := range clusters {
			got, exp := router.Resolve(c), ref.resolve(c)
			if !sameResolution(got, exp) {
				t.Fatalf("cluster %+v\nroutes %+v\nResolve = %+v\nreference %+v", c, routes, got, exp)
			}
			wins[got.Route]++
			want[c.Name] = exp
		}

		rep := router.ResolveAll(clusters)
		for _, res := range rep.Clusters {
			if !sameResolution(res, want[res.Cluster]) {
				t.Fatalf("ResolveAll %+v, want %+v", res, want[res.Cluster])
			}
		}
		var wantShadows []routing.Shadow
		for _, r := range ref.routes {
			if wins[r.Name] > 0 {
				continue
			}
			var claims []routing.Claim
			for _, c := range clusters {
				if _, ok := r.match(c); ok {
					w := want[c.Name]
					claims = append(claims, routing.Claim{Cluster: c.Name, Route: w.Route, Priority: w.Priority})
				}
			}
			if claims != nil {
				wantShadows = append(wantShadows, routing.Shadow{Route: r.Name, Priority: r.Priority, Claims: claims})
			}
		}
		if !reflect.DeepEqual(rep.Shadowed, wantShadows) {
			t.Fatalf("routes %+v\nclusters %+v\nShadowed = %+v, want %+v", routes, clusters, rep.Shadowed, wantShadows)
		}

		for _, s := range router.StaticShadows() {
			if wins[s.Route] > 0 {
				t.Fatalf("routes %+v\nclusters %+v\nroute %s is statically shadowed %+v but wins %d clusters", routes, clusters, s.Route, s.Coverage, wins[s.Route])
			}
		}
	})
}

// FuzzEffect checks Router.Effect, which resolves only the clusters a change touches, against
// compiling the changed routes and comparing every cluster's route.
func FuzzEffect(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 5, 0, 2, 1, 1, 3, 0, 1, 2, 3, 0, 1, 7, 2, 2, 1, 0, 3, 6, 1, 2, 0, 0, 1, 9, 4, 4, 4, 1, 2, 0, 1, 3})
	f.Add([]byte{7, 0, 9, 1, 1, 2, 0, 2, 3, 1, 2, 1, 0, 2, 3, 2, 1, 1, 3, 8, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 8, 1, 1})
	f.Add([]byte{5, 2, 1, 0, 0, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 3, 3, 3, 3, 8, 8, 8, 8, 8, 8, 8, 8, 8, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		routes := g.routes()
		clusters := g.clusters()
		next := g.routes() // its first route, renamed, is the change's next version
		var ch routing.Change
		if len(routes) > 0 && g.next(2) == 0 {
			ch.Removed = []string{routes[g.next(len(routes))].Name}
		}
		if len(next) > 0 {
			n := next[0]
			n.Name = "n"
			if len(ch.Removed) > 0 && g.next(2) == 0 {
				n.Name = ch.Removed[0] // an update in place
			}
			ch.Next = &n
		}
		before, err := routing.Compile(routes)
		if err != nil {
			t.Fatal(err)
		}
		var afterRoutes []routing.Route
		for _, r := range routes {
			if !slices.Contains(ch.Removed, r.Name) && (ch.Next == nil || r.Name != ch.Next.Name) {
				afterRoutes = append(afterRoutes, r)
			}
		}
		if ch.Next != nil {
			ch.Removed = append(ch.Removed, ch.Next.Name) // its hub version, if any
			afterRoutes = append(afterRoutes, *ch.Next)
		}
		after, err := routing.Compile(afterRoutes)
		if err != nil {
			t.Fatal(err)
		}
		rep := before.ResolveAll(clusters)
		afterRep := after.ResolveAll(clusters)
		got, err := before.Effect(clusters, rep, ch)
		if err != nil {
			t.Fatal(err)
		}
		ctx := fmt.Sprintf("routes %+v\nclusters %+v\nchange removes %v, next %+v", routes, clusters, ch.Removed, ch.Next)
		if want := routing.Diff(rep.Clusters, afterRep.Clusters); !reflect.DeepEqual(got.Moves, want) {
			t.Fatalf("%s\nMoves = %+v, want %+v", ctx, got.Moves, want)
		}
		var wantShadow *routing.Shadow
		var wantStatic *routing.StaticShadow
		if ch.Next != nil {
			for _, s := range afterRep.Shadowed {
				if s.Route == ch.Next.Name {
					wantShadow = &s
				}
			}
			for _, s := range after.StaticShadows() {
				if s.Route == ch.Next.Name {
					wantStatic = &s
				}
			}
		}
		if !reflect.DeepEqual(got.Shadow, wantShadow) {
			t.Fatalf("%s\nShadow = %+v, want %+v", ctx, got.Shadow, wantShadow)
		}
		if ch.Next != nil && !ch.Next.Default && !reflect.DeepEqual(got.Static, wantStatic) {
			t.Fatalf("%s\nStatic = %+v, want %+v", ctx, got.Static, wantStatic)
		}
	})
}
