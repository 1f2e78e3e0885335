package inventory

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// viewsWorkspace has 60 clusters over 6 zones and 3 tiers, routed by zone, by tier and by a
// default route, so that routes overlap and some win nothing.
func viewsWorkspace() *Workspace {
	w := &Workspace{Name: "ws"}
	for i := range 60 {
		w.Clusters = append(w.Clusters, routing.Cluster{Name: fmt.Sprintf("c%02d", i),
			Labels: map[string]string{"zone": fmt.Sprintf("z%d", i%6), "tier": fmt.Sprintf("t%d", i%3)}})
	}
	w.Routes = []routing.Route{
		{Name: "a-zone0", Priority: 10, Registries: []string{"r"}, ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"zone": "z0"}}}},
		{Name: "b-tier0", Priority: 20, Registries: []string{"r"}, ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"tier": "t0"}}}},
		{Name: "c-zone3", Priority: 30, Registries: []string{"r"}, ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"zone": "z3"}}}}, // z3 is t0: shadowed
		{Name: "d-default", Default: true, Registries: []string{"r"}},
	}
	return w
}

func TestWinsIsTheHubsResolution(t *testing.T) {
	w := viewsWorkspace()
	router, err := routing.Compile(w.Routes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, c := range w.Clusters {
		r := router.Resolve(c).Route
		want[r] = append(want[r], c.Name)
	}
	for _, r := range append(w.Routes, routing.Route{Name: "not-on-the-hub"}) {
		got, err := w.Wins(r.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 && len(want[r.Name]) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want[r.Name]) {
			t.Errorf("Wins(%s) = %v, want %v", r.Name, got, want[r.Name])
		}
	}
	if got, _ := w.Wins("a-zone0"); len(got) != 10 {
		t.Errorf("a-zone0 wins %d clusters, want 10", len(got))
	}
	if got, _ := w.Wins("c-zone3"); len(got) != 0 {
		t.Errorf("c-zone3 is shadowed by b-tier0 but wins %v", got)
	}
}

func TestLabelledIsTheClustersWithTheLabel(t *testing.T) {
	w := viewsWorkspace()
	for _, tc := range []struct{ key, value string }{{"zone", "z1"}, {"tier", "t2"}, {"zone", "z9"}, {"rack", "z1"}} {
		var want, got []string
		for _, c := range w.Clusters {
			if v, ok := c.Labels[tc.key]; ok && v == tc.value {
				want = append(want, c.Name)
			}
		}
		for _, c := range w.Labelled(tc.key, tc.value) {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Labelled(%s, %s) = %v, want %v", tc.key, tc.value, got, want)
		}
	}
	if n := len(w.Labelled("zone", "z1")); n != 10 {
		t.Errorf("zone z1 has %d clusters, want 10", n)
	}
}
