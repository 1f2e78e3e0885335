package hubresource

import (
	"fmt"
	"maps"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

type plannedRegistry struct{ ca string }
type plannedRoute struct{}

var (
	testSecretKind = hub.Kind{Kind: "Secret"}
	testRouteKind  = hub.Kind{Kind: "OCIStorageRoute"}
)

// The planned objects of one kind and workspace, and no others; a second claim of one object
// is refused.
func TestPlannedModels(t *testing.T) {
	e := &Env{}
	eu, us := &plannedRegistry{"eu"}, &plannedRegistry{"us"}
	for _, c := range []struct {
		kind, ws, name string
		plan           any
	}{{"Secret", "ws", "eu", eu}, {"Secret", "ws", "us", us}, {"Secret", "other", "cn", &plannedRegistry{"cn"}}, {"OCIStorageRoute", "ws", "eu", &plannedRoute{}}} {
		if !e.claims.claim(c.kind, c.ws, c.name, c.plan) {
			t.Fatalf("claim %s %s/%s refused", c.kind, c.ws, c.name)
		}
	}
	if e.claims.claim("Secret", "ws", "eu", &plannedRegistry{}) {
		t.Error("a second claim of Secret ws/eu was granted")
	}
	if got, want := PlannedModels[plannedRegistry](e, testSecretKind, "ws"), map[string]*plannedRegistry{"eu": eu, "us": us}; !maps.Equal(got, want) {
		t.Errorf("PlannedModels = %v, want %v", got, want)
	}
	if m, ok := PlannedModel[plannedRegistry](e, testSecretKind, "ws", "eu"); !ok || m != eu {
		t.Errorf("PlannedModel(Secret ws/eu) = %v, %v; want the first claim's", m, ok)
	}
	for _, miss := range []struct{ ws, name string }{{"ws", "cn"}, {"other", "eu"}, {"ws", "nope"}} {
		if m, ok := PlannedModel[plannedRegistry](e, testSecretKind, miss.ws, miss.name); ok {
			t.Errorf("PlannedModel(Secret %s/%s) = %v, want none", miss.ws, miss.name, m)
		}
	}
	if m, ok := PlannedModel[plannedRegistry](e, testRouteKind, "ws", "eu"); ok {
		t.Errorf("PlannedModel(OCIStorageRoute ws/eu) as a registry = %v, want none", m)
	}
	if got := PlannedModels[plannedRegistry](e, testRouteKind, "ws"); len(got) != 0 {
		t.Errorf("PlannedModels(OCIStorageRoute) as registries = %v, want none", got)
	}
}

// BenchmarkPlannedChain is a plan that creates n routes, each with a chain of three registries
// the plan creates too: each route claims its name, then its CA check looks up the planned
// registries of its chain. The cost per route must not grow with n: a lookup that scans every
// claim (as PlannedModels did before claims were indexed by kind) makes the plan quadratic.
// ns/route is printed per size; "lookup" is the CA check's way (PlannedModel), "models" the
// whole-kind read (PlannedModels).
func BenchmarkPlannedChain(b *testing.B) {
	chain := []string{"eu", "us", "central"}
	for _, way := range []string{"lookup", "models"} {
		for _, n := range []int{100, 1_000, 10_000} {
			b.Run(fmt.Sprintf("%s/routes=%d", way, n), func(b *testing.B) {
				found := 0
				for range b.N {
					e := &Env{}
					for _, reg := range chain {
						e.claims.claim("Secret", "ws", reg, &plannedRegistry{reg})
					}
					for i := range n {
						e.claims.claim("OCIStorageRoute", "ws", fmt.Sprintf("r%05d", i), &plannedRoute{})
						if way == "models" {
							planned := PlannedModels[plannedRegistry](e, testSecretKind, "ws")
							for _, reg := range chain {
								if _, ok := planned[reg]; ok {
									found++
								}
							}
							continue
						}
						for _, reg := range chain {
							if _, ok := PlannedModel[plannedRegistry](e, testSecretKind, "ws", reg); ok {
								found++
							}
						}
					}
				}
				if found != b.N*n*len(chain) {
					b.Fatalf("found %d planned registries, want %d", found, b.N*n*len(chain))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/route")
			})
		}
	}
}
