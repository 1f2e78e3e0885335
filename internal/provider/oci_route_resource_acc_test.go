package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// routeConfig renders a fleet_oci_route whose label and name are both name.
func routeConfig(ws, name, body string) string {
	return fmt.Sprintf(`
resource "fleet_oci_route" %[2]q {
  name      = %[2]q
  workspace = %[1]q
%[3]s
}
`, ws, name, body)
}

// mirrorConfig renders a fleet_oci_registry mirror named name.
func mirrorConfig(ws, name string) string {
	return registryConfig(ws, name, fmt.Sprintf(`  role      = "mirror"
  reference = "%s.example.com/fleet"`, name))
}

// checkRouteSpec asserts the spec of the OCIStorageRoute on the hub, field for field.
// clusterNames and clusterGroups are compared as sets.
func checkRouteSpec(f *hubFixtures, name string, want map[string]any) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := f.GetRoute(name)
		if err != nil {
			return err
		}
		if u == nil {
			return fmt.Errorf("OCIStorageRoute %s/%s is not on the hub", f.ws, name)
		}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		for _, k := range []string{"clusterNames", "clusterGroups"} {
			if l, ok := spec[k].([]any); ok {
				sortAny(l)
			}
		}
		if want := fullSpec(want); !reflect.DeepEqual(normalise(spec), normalise(want)) {
			return fmt.Errorf("OCIStorageRoute %s/%s spec =\n  %#v\nwant\n  %#v", f.ws, name, spec, want)
		}
		return nil
	}
}

// checkRoutesOnHub asserts the workspace holds exactly these OCIStorageRoutes.
func checkRoutesOnHub(f *hubFixtures, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := f.RouteNames()
		if err != nil {
			return err
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("workspace %s holds OCIStorageRoutes %v, want %v", f.ws, got, want)
		}
		return nil
	}
}

func TestAccOCIRoute_lifecycle(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	addr := "fleet_oci_route.eu-clusters"

	registries := registryConfig(ws, "harbor-eu", `  role      = "source"
  reference = "harbor-eu.example.com/fleet"`) + mirrorConfig(ws, "harbor-central")
	created := registries + routeConfig(ws, "eu-clusters", `
  priority          = 10
  cluster_selectors = [{ match_labels = { region = "eu" } }]
  registries        = [fleet_oci_registry.harbor-eu.name, fleet_oci_registry.harbor-central.name]
  replication_wait  = "10m"
`)
	updated := registries + routeConfig(ws, "eu-clusters", `
  priority      = 15
  cluster_names = ["lab-sandbox"]
  cluster_selectors = [
    { match_labels = { region = "eu" } },
    { match_expressions = [
      { key = "tier", operator = "In", values = ["edge", "store"] },
      { key = "quarantine", operator = "DoesNotExist" },
    ] },
  ]
  registries       = [fleet_oci_registry.harbor-central.name, fleet_oci_registry.harbor-eu.name]
  replication_wait = "90s" # any spelling: the hub keeps it, so import reads it back
`)
	updatedSpec := map[string]any{
		"priority":        15,
		"clusterNames":    []any{"lab-sandbox"},
		"registries":      []any{"harbor-central", "harbor-eu"},
		"replicationWait": "90s",
		"clusterSelectors": []any{
			map[string]any{"matchLabels": map[string]any{"region": "eu"}},
			map[string]any{"matchExpressions": []any{
				map[string]any{"key": "tier", "operator": "In", "values": []any{"edge", "store"}},
				map[string]any{"key": "quarantine", "operator": "DoesNotExist"},
			}},
		},
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkRoutesOnHub(f)(s); err != nil {
				return fmt.Errorf("after destroy: %w", err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: created,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", ws+"/eu-clusters"),
					resource.TestCheckResourceAttr(addr, "workspace", ws),
					resource.TestCheckResourceAttr(addr, "priority", "10"),
					resource.TestCheckResourceAttr(addr, "default", "false"),
					resource.TestCheckResourceAttr(addr, "cluster_selectors.#", "1"),
					resource.TestCheckResourceAttr(addr, "cluster_selectors.0.match_labels.%", "1"),
					resource.TestCheckResourceAttr(addr, "cluster_selectors.0.match_labels.region", "eu"),
					resource.TestCheckNoResourceAttr(addr, "cluster_selectors.0.match_expressions"),
					resource.TestCheckNoResourceAttr(addr, "cluster_names"),
					resource.TestCheckNoResourceAttr(addr, "cluster_groups"),
					resource.TestCheckResourceAttr(addr, "registries.#", "2"),
					resource.TestCheckResourceAttr(addr, "registries.0", "harbor-eu"),
					resource.TestCheckResourceAttr(addr, "registries.1", "harbor-central"),
					resource.TestCheckResourceAttr(addr, "replication_wait", "10m"),
					checkRouteSpec(f, "eu-clusters", map[string]any{
						"priority":         10,
						"clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"region": "eu"}}},
						"registries":       []any{"harbor-eu", "harbor-central"},
						"replicationWait":  "10m",
					}),
					checkRoutesOnHub(f, "eu-clusters"),
				),
			},
			{
				Config: updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "priority", "15"),
					resource.TestCheckResourceAttr(addr, "cluster_names.#", "1"),
					resource.TestCheckTypeSetElemAttr(addr, "cluster_names.*", "lab-sandbox"),
					resource.TestCheckResourceAttr(addr, "cluster_selectors.#", "2"),
					resource.TestCheckResourceAttr(addr, "cluster_selectors.1.match_expressions.#", "2"),
					resource.TestCheckResourceAttr(addr, "cluster_selectors.1.match_expressions.0.values.#", "2"),
					resource.TestCheckNoResourceAttr(addr, "cluster_selectors.1.match_expressions.1.values"),
					resource.TestCheckResourceAttr(addr, "registries.0", "harbor-central"),
					resource.TestCheckResourceAttr(addr, "replication_wait", "90s"),
					checkRouteSpec(f, "eu-clusters", updatedSpec),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ws + "/eu-clusters",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// Drift: the priority changes out of band; the plan puts it back.
				PreConfig: func() { f.PatchRoute("eu-clusters", `{"spec":{"priority":99}}`) },
				Config:    updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("priority"), knownvalue.Int64Exact(15)),
				}},
				Check: checkRouteSpec(f, "eu-clusters", updatedSpec),
			},
			{
				// Another field manager adds criteria: apply removes them, so the hub equals the
				// configuration, and the next plan is empty.
				PreConfig: func() {
					f.PatchRoute("eu-clusters", `{"spec":{"clusterGroups":["extra"],"clusterNames":["lab-sandbox","us-02"]}}`)
				},
				Config: updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: checkRouteSpec(f, "eu-clusters", updatedSpec),
			},
			{
				Config: updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{
				// Drift: the route is deleted out of band; the plan creates it again.
				PreConfig: func() { f.DeleteRoute("eu-clusters") },
				Config:    updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkRouteSpec(f, "eu-clusters", updatedSpec),
			},
		},
	})
}

// TestAccOCIRoute_emptyCollections applies configuration with empty collections, which the hub
// object does not carry: the state must keep them empty (no "inconsistent result" error, no diff).
func TestAccOCIRoute_emptyCollections(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	addr := "fleet_oci_route.empty"
	config := mirrorConfig(ws, "harbor-central") + routeConfig(ws, "empty", `
  priority          = 1
  cluster_names     = []
  cluster_groups    = ["stores"]
  cluster_selectors = []
  registries        = [fleet_oci_registry.harbor-central.name]
`) + routeConfig(ws, "exprs", `
  priority          = 2
  cluster_selectors = [{ match_labels = {}, match_expressions = [{ key = "gpu", operator = "Exists", values = [] }] }]
  registries        = [fleet_oci_registry.harbor-central.name]
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(addr, "cluster_names.#", "0"),
				resource.TestCheckResourceAttr(addr, "cluster_selectors.#", "0"),
				resource.TestCheckResourceAttr("fleet_oci_route.exprs", "cluster_selectors.0.match_labels.%", "0"),
				resource.TestCheckResourceAttr("fleet_oci_route.exprs", "cluster_selectors.0.match_expressions.0.values.#", "0"),
				checkRouteSpec(f, "empty", map[string]any{
					"priority": 1, "clusterGroups": []any{"stores"}, "registries": []any{"harbor-central"}, "replicationWait": "0s",
				}),
				checkRouteSpec(f, "exprs", map[string]any{
					"priority": 2, "registries": []any{"harbor-central"}, "replicationWait": "0s",
					"clusterSelectors": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "gpu", "operator": "Exists"}}}},
				}),
			),
		}},
	})
}

// scenario is the issue's example: EU clusters by label, air-gapped stores by cluster set, one
// lab cluster by name, and a default route for the rest.
type scenario struct {
	f  *hubFixtures
	ws string
}

func newScenario(t *testing.T) *scenario {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("general")
	f.ClusterSet("airgap-stores")
	f.Cluster("eu-01", "general", map[string]string{"region": "eu"})
	f.Cluster("eu-02", "general", map[string]string{"region": "eu"})
	f.Cluster("eu-staging-01", "general", map[string]string{"region": "eu", "stage": "staging"})
	// An EU store: the EU label route catches it before the store route, until the store
	// route's priority goes below the EU route's.
	f.Cluster("store-0201", "airgap-stores", map[string]string{"region": "eu", "tier": "store"})
	f.Cluster("store-0203", "airgap-stores", map[string]string{"tier": "store"})
	f.Cluster("lab-sandbox", "general", map[string]string{"region": "eu", "purpose": "lab"})
	f.Cluster("us-01", "general", map[string]string{"region": "us"})
	// In no set bound to the workspace: never routed by it.
	f.Cluster("other-01", "", map[string]string{"region": "eu"})
	return &scenario{f: f, ws: ws}
}

var scenarioClusters = []string{"eu-01", "eu-02", "eu-staging-01", "store-0201", "store-0203", "lab-sandbox", "us-01"}

func (s *scenario) config(storesPriority int, dataSources bool) string {
	ws, f := s.ws, s.f
	cfg := registryConfig(ws, "harbor-eu", `  role      = "source"
  reference = "harbor-eu.example.com/fleet"`) +
		mirrorConfig(ws, "harbor-central") + mirrorConfig(ws, "zot-stores") + mirrorConfig(ws, "harbor-lab") +
		routeConfig(ws, "eu-clusters", `
  priority          = 10
  cluster_selectors = [{ match_labels = { region = "eu" } }]
  registries        = [fleet_oci_registry.harbor-eu.name, fleet_oci_registry.harbor-central.name]
  replication_wait  = "10m"
`) + routeConfig(ws, "airgap-stores", fmt.Sprintf(`
  priority       = %d
  cluster_groups = [%q]
  registries     = [fleet_oci_registry.zot-stores.name]
`, storesPriority, f.Name("airgap-stores"))) + routeConfig(ws, "lab-override", fmt.Sprintf(`
  priority      = 5
  cluster_names = [%q]
  registries    = [fleet_oci_registry.harbor-lab.name]
`, f.Name("lab-sandbox"))) + routeConfig(ws, "fallback", `
  priority   = 1000
  default    = true
  registries = [fleet_oci_registry.harbor-central.name]
`)
	if !dataSources {
		return cfg
	}
	const deps = `[fleet_oci_route.eu-clusters, fleet_oci_route.airgap-stores, fleet_oci_route.lab-override, fleet_oci_route.fallback]`
	for _, c := range scenarioClusters {
		cfg += fmt.Sprintf(`
data "fleet_oci_chain" %q {
  workspace  = %q
  cluster    = %q
  depends_on = %s
}
`, c, ws, f.Name(c), deps)
	}
	cfg += fmt.Sprintf(`
data "fleet_oci_routing" "ws" {
  workspace  = %q
  depends_on = %s
}
`, ws, deps)
	return cfg
}

// chain is the expected data.fleet_oci_chain of one cluster.
type chain struct {
	route, matchedBy, wait string
	registries             []string
}

var scenarioRegistries = map[string][2]string{ // name → reference, role
	"harbor-eu":      {"harbor-eu.example.com/fleet", "source"},
	"harbor-central": {"harbor-central.example.com/fleet", "mirror"},
	"zot-stores":     {"zot-stores.example.com/fleet", "mirror"},
	"harbor-lab":     {"harbor-lab.example.com/fleet", "mirror"},
}

func (s *scenario) chainChecks(want map[string]chain) []statecheck.StateCheck {
	var checks []statecheck.StateCheck
	for _, c := range scenarioClusters {
		w := want[c]
		addr := "data.fleet_oci_chain." + c
		var regs []knownvalue.Check
		for _, r := range w.registries {
			regs = append(regs, knownvalue.ObjectExact(map[string]knownvalue.Check{
				"name":      knownvalue.StringExact(r),
				"reference": knownvalue.StringExact(scenarioRegistries[r][0]),
				"role":      knownvalue.StringExact(scenarioRegistries[r][1]),
				// no agent probes in this test bed
				"reachability": knownvalue.Null(), "probed_at": knownvalue.Null(),
			}))
		}
		checks = append(checks,
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("workspace"), knownvalue.StringExact(s.ws)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("cluster"), knownvalue.StringExact(s.f.Name(c))),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("route"), knownvalue.StringExact(w.route)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("matched_by"), knownvalue.StringExact(w.matchedBy)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("replication_wait"), knownvalue.StringExact(w.wait)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("registries"), knownvalue.ListExact(regs)),
		)
	}
	return checks
}

// routingCheck asserts data.fleet_oci_routing: routes in evaluation order with their clusters
// (short names), shadowed flags, and no unmatched clusters.
func (s *scenario) routingCheck(routes []routingWant) statecheck.StateCheck {
	var rs []knownvalue.Check
	for _, r := range routes {
		var cs []knownvalue.Check
		for _, c := range r.clusters {
			cs = append(cs, knownvalue.StringExact(s.f.Name(c)))
		}
		rs = append(rs, knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name":     knownvalue.StringExact(r.name),
			"priority": knownvalue.Int64Exact(r.priority),
			"default":  knownvalue.Bool(r.def),
			"clusters": knownvalue.ListExact(cs),
			"shadowed": knownvalue.Bool(false),
			"conflict": knownvalue.Null(),
			// No controller runs in this test: no route status, and the provider's count.
			"ready":            knownvalue.Null(),
			"status":           knownvalue.Null(),
			"matched_clusters": knownvalue.Int64Exact(int64(len(r.clusters))),
		}))
	}
	return statecheck.ExpectKnownValue("data.fleet_oci_routing.ws", tfjsonpath.New("routes"), knownvalue.ListExact(rs))
}

type routingWant struct {
	name     string
	priority int64
	def      bool
	clusters []string
}

func TestAccOCIRoute_issueScenario(t *testing.T) {
	s := newScenario(t)
	f, ws := s.f, s.ws
	names := func(shorts ...string) []any {
		out := []any{}
		for _, n := range f.Names(shorts...) {
			out = append(out, n)
		}
		return out
	}
	euChain := chain{"eu-clusters", "cluster_selectors[0]", "10m", []string{"harbor-eu", "harbor-central"}}
	storeChain := chain{"airgap-stores", "cluster_groups", "0s", []string{"zot-stores"}}
	before := map[string]chain{
		"eu-01": euChain, "eu-02": euChain, "eu-staging-01": euChain,
		"store-0201":  euChain, // region=eu, and the EU route (10) comes before the store route (20)
		"store-0203":  storeChain,
		"lab-sandbox": {"lab-override", "cluster_names", "0s", []string{"harbor-lab"}},
		"us-01":       {"fallback", "default", "0s", []string{"harbor-central"}},
	}
	after := maps2(before)
	after["store-0201"] = storeChain

	hubChecks := resource.ComposeAggregateTestCheckFunc(
		checkRoutesOnHub(f, "eu-clusters", "airgap-stores", "lab-override", "fallback"),
		checkRouteSpec(f, "eu-clusters", map[string]any{
			"priority": 10, "clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"region": "eu"}}},
			"registries": []any{"harbor-eu", "harbor-central"}, "replicationWait": "10m",
		}),
		checkRouteSpec(f, "lab-override", map[string]any{
			"priority": 5, "clusterNames": names("lab-sandbox"), "registries": []any{"harbor-lab"}, "replicationWait": "0s",
		}),
		checkRouteSpec(f, "fallback", map[string]any{
			"priority": 1000, "default": true, "registries": []any{"harbor-central"}, "replicationWait": "0s",
		}),
	)
	storeSpec := func(priority int) resource.TestCheckFunc {
		return checkRouteSpec(f, "airgap-stores", map[string]any{
			"priority": priority, "clusterGroups": names("airgap-stores"), "registries": []any{"zot-stores"}, "replicationWait": "0s",
		})
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkRoutesOnHub(f),
		Steps: []resource.TestStep{
			{
				Config: s.config(20, false),
				Check:  resource.ComposeAggregateTestCheckFunc(hubChecks, storeSpec(20)),
			},
			{
				// A cluster outside the workspace's bound sets has no chain in it.
				Config: s.config(20, false) + fmt.Sprintf(`
data "fleet_oci_chain" "outsider" {
  workspace = %q
  cluster   = %q
}
`, ws, f.Name("other-01")),
				ExpectError: expectError("Cluster not in workspace", fmt.Sprintf("%q is not a member of the ManagedClusterSets bound to workspace %s (%s, %s)",
					f.Name("other-01"), ws, f.Name("airgap-stores"), f.Name("general"))),
			},
			{
				Config: s.config(20, true),
				ConfigStateChecks: append(s.chainChecks(before),
					s.routingCheck([]routingWant{
						{"lab-override", 5, false, []string{"lab-sandbox"}},
						{"eu-clusters", 10, false, []string{"eu-01", "eu-02", "eu-staging-01", "store-0201"}},
						{"airgap-stores", 20, false, []string{"store-0203"}},
						{"fallback", 1000, true, []string{"us-01"}},
					}),
					statecheck.ExpectKnownValue("data.fleet_oci_routing.ws", tfjsonpath.New("unmatched_clusters"), knownvalue.ListExact([]knownvalue.Check{})),
				),
			},
			{
				// The store route now comes before the EU route: the EU store moves to it.
				Config: s.config(8, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("fleet_oci_route.airgap-stores", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("fleet_oci_route.eu-clusters", plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(hubChecks, storeSpec(8)),
				ConfigStateChecks: append(s.chainChecks(after),
					s.routingCheck([]routingWant{
						{"lab-override", 5, false, []string{"lab-sandbox"}},
						{"airgap-stores", 8, false, []string{"store-0201", "store-0203"}},
						{"eu-clusters", 10, false, []string{"eu-01", "eu-02", "eu-staging-01"}},
						{"fallback", 1000, true, []string{"us-01"}},
					}),
					statecheck.ExpectKnownValue("data.fleet_oci_routing.ws", tfjsonpath.New("unmatched_clusters"), knownvalue.ListExact([]knownvalue.Check{})),
				),
			},
		},
	})
}

func maps2(m map[string]chain) map[string]chain {
	out := make(map[string]chain, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestAccOCIRoute_planErrorsWriteNothing: conflicts with routes that no Terraform configuration
// manages (made with kubectl, here by the fixtures) stop the plan, naming what conflicts, and
// nothing reaches the hub.
func TestAccOCIRoute_planErrorsWriteNothing(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.Route("kubectl-eu", map[string]any{"priority": 10, "clusterNames": []any{"eu-01"}, "registries": []any{"harbor-central"}})
	f.Route("kubectl-fallback", map[string]any{"priority": 1000, "default": true, "registries": []any{"harbor-central"}})
	base := mirrorConfig(ws, "harbor-central")
	unchanged := resource.TestStep{
		Config: base,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectEmptyPlan(),
		}},
		Check: checkRoutesOnHub(f, "kubectl-eu", "kubectl-fallback"),
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{Config: base, Check: checkRoutesOnHub(f, "kubectl-eu", "kubectl-fallback")},
			{
				Config: base + routeConfig(ws, "stores", `
  priority       = 10
  cluster_names  = ["store-0201"]
  registries     = [fleet_oci_registry.harbor-central.name]
`),
				ExpectError: expectError("Priority already taken", fmt.Sprintf(`On the hub, route "kubectl-eu" of workspace %s has priority 10; priorities must be unique.`, ws),
					`No Terraform configuration manages route "kubectl-eu"`),
			},
			unchanged,
			{
				Config: base + routeConfig(ws, "catch-all", `
  priority   = 2000
  default    = true
  registries = [fleet_oci_registry.harbor-central.name]
`),
				ExpectError: expectError("Second default route", fmt.Sprintf(`On the hub, route "kubectl-fallback" is the default route of workspace %s`, ws)),
			},
			unchanged,
			{
				Config: base + routeConfig(ws, "kubectl-eu", `
  priority      = 20
  cluster_names = ["eu-01"]
  registries    = [fleet_oci_registry.harbor-central.name]
`),
				ExpectError: expectError("OCIStorageRoute already exists", fmt.Sprintf("OCIStorageRoute %s/kubectl-eu is already on the hub", ws),
					"terraform import fleet_oci_route.<label> "+ws+"/kubectl-eu"),
			},
			unchanged,
			{ // bounds: a wait over a day, more than 16 registries
				Config: base + routeConfig(ws, "slow", `
  priority         = 30
  cluster_names    = ["eu-01"]
  registries       = [fleet_oci_registry.harbor-central.name]
  replication_wait = "25h"
`),
				ExpectError: expectError("Invalid route", `replication_wait: must be at most 24h0m0s (a day), got 25h0m0s`),
			},
			unchanged,
			{
				Config: base + routeConfig(ws, "slow", `
  priority         = 30
  cluster_names    = ["eu-01"]
  registries       = [fleet_oci_registry.harbor-central.name]
  replication_wait = "3000000h"
`),
				ExpectError: expectError("Duration too long", `"3000000h" is longer than any duration can be`),
			},
			unchanged,
			{
				Config: base + routeConfig(ws, "long", `
  priority      = 30
  cluster_names = ["eu-01"]
  registries    = [for i in range(17) : "r-${i}"]
`),
				ExpectError: expectError("Invalid route", `registries: holds 17 registries; at most 16 are allowed`),
			},
			unchanged,
		},
	})
}

// TestAccOCIRoute_siblingsInOneApply applies, from scratch and at -parallelism=1 and the default,
// changes whose checks would depend on the order Terraform plans in if they looked at siblings:
// routes naming by literal the registries created next to them, then a rename that keeps the
// priority, swapped priorities, a new default replacing the old, and a new source replacing the
// old — with the resources declared in either order. Every apply succeeds and the hub ends as
// configured.
func TestAccOCIRoute_siblingsInOneApply(t *testing.T) {
	for _, tc := range []struct {
		parallelism string
		reversed    bool
	}{{"1", false}, {"10", false}, {"1", true}, {"10", true}} {
		parallelism := tc.parallelism
		t.Run(fmt.Sprintf("parallelism=%s reversed=%t", parallelism, tc.reversed), func(t *testing.T) {
			t.Setenv("TF_CLI_ARGS_plan", "-parallelism="+parallelism)
			t.Setenv("TF_CLI_ARGS_apply", "-parallelism="+parallelism)
			kube := testHub(t)
			ws := testWorkspace(t, kube)
			f := newHubFixtures(t, ws)
			source := func(name string) string {
				return registryConfig(ws, name, fmt.Sprintf("  role      = \"source\"\n  reference = \"%s.example.com/fleet\"", name))
			}
			routes := func(src string, specs ...string) string {
				blocks := []string{source(src), mirrorConfig(ws, "mirror")}
				for _, spec := range specs {
					name, rest, _ := strings.Cut(spec, " ")
					priority, extra, _ := strings.Cut(rest, " ")
					blocks = append(blocks, routeConfig(ws, name, fmt.Sprintf("  priority   = %s\n  registries = [%q, \"mirror\"]\n  %s", priority, src, extra)))
				}
				if tc.reversed {
					slices.Reverse(blocks)
				}
				return strings.Join(blocks, "")
			}
			step1 := routes("src-a", `a 10 cluster_names = ["eu-01"]`, `b 20 cluster_names = ["eu-02"]`, `old 30 cluster_names = ["us-01"]`, `d1 1000 default = true`)
			step2 := routes("src-a", `a 20 cluster_names = ["eu-01"]`, `b 10 cluster_names = ["eu-02"]`, `renamed 30 cluster_names = ["us-01"]`, `d2 1000 default = true`)
			step3 := routes("src-b", `a 20 cluster_names = ["eu-01"]`, `b 10 cluster_names = ["eu-02"]`, `renamed 30 cluster_names = ["us-01"]`, `d2 1000 default = true`)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Providers,
				Steps: []resource.TestStep{
					{Config: step1, Check: checkRoutesOnHub(f, "a", "b", "d1", "old")},
					{Config: step2, Check: resource.ComposeAggregateTestCheckFunc(
						checkRoutesOnHub(f, "a", "b", "d2", "renamed"),
						checkRouteSpec(f, "a", map[string]any{"priority": 20, "clusterNames": []any{"eu-01"}, "registries": []any{"src-a", "mirror"}, "replicationWait": "0s"}),
						checkRouteSpec(f, "b", map[string]any{"priority": 10, "clusterNames": []any{"eu-02"}, "registries": []any{"src-a", "mirror"}, "replicationWait": "0s"}),
					)},
					{Config: step3, Check: func(*terraform.State) error {
						s := getSecret(t, kube, ws, "src-b")
						if s.Labels[OCIRegistryRoleLabel] != "source" {
							return fmt.Errorf("src-b role = %q", s.Labels[OCIRegistryRoleLabel])
						}
						if _, err := kube.CoreV1().Secrets(ws).Get(context.Background(), "src-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
							return fmt.Errorf("src-a still on the hub (err=%v)", err)
						}
						return nil
					}},
					{Config: step3, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				},
			})
		})
	}
}
