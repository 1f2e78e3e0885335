package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const joinAddr = "fleet_cluster_join.j"

// joinConfig is a managed site "berlin" (a port_forward and a reverse_proxy entry) and join "j".
func joinConfig(ws, cluster, body string) string {
	return siteConfig(ws, `
  ingress = [
    { id = "wan", method = "port_forward", address = "203.0.113.10", ports = { http = 30080, https = 30443 } },
    { id = "proxy", method = "reverse_proxy", address = "edge.berlin.example.com" },
  ]`) + fmt.Sprintf(`
resource "fleet_cluster_join" "j" {
  name      = "j"
  workspace = %q
  cluster   = %q
  site      = fleet_site.s.name
%s
}
`, ws, cluster, body)
}

// TestAccClusterJoin_lifecycle: create, update (capabilities, entry), import, the hub's status
// read back, drift corrected, a new cluster replaces, destroy.
func TestAccClusterJoin_lifecycle(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	a, b := f.Usable("a"), f.Usable("b")
	h := newSiteHub(t, ws)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config: joinConfig(ws, a, `  ingress_id = "wan"
  capabilities = ["storage", "gpu"]`),
				Check: h.checkSpec("FleetClusterJoin", "j", map[string]any{"cluster": a, "site": "berlin", "edge": map[string]any{"ingressId": "wan"},
					"capabilities": []any{"gpu", "storage"}}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(joinAddr, ssdValue("id"), knownvalue.StringExact(ws+"/j")),
					statecheck.ExpectKnownValue(joinAddr, ssdValue("ready"), knownvalue.Null()), // no controller on this hub
				},
			},
			{
				Config: joinConfig(ws, a, `  ingress_id = "proxy"
  capabilities = ["gpu"]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(joinAddr, plancheck.ResourceActionUpdate),
				}},
				Check: h.checkSpec("FleetClusterJoin", "j", map[string]any{"cluster": a, "site": "berlin", "edge": map[string]any{"ingressId": "proxy"}, "capabilities": []any{"gpu"}}),
			},
			{ResourceName: joinAddr, ImportState: true, ImportStateVerify: true, ImportStateId: ws + "/j"},
			{
				PreConfig: func() {
					h.setStatus("FleetClusterJoin", "j", map[string]any{"labels": []any{"capability.fleet.umkim.io/gpu", "fleet.site"}, "conditions": []any{
						map[string]any{"type": "Joined", "status": "True", "reason": "Labelled", "message": "labelled", "lastTransitionTime": "2026-01-01T00:00:00Z"},
						map[string]any{"type": "Ready", "status": "False", "reason": "IngressTaken", "message": "FleetClusterJoin x holds it", "lastTransitionTime": "2026-01-01T00:00:00Z"}}})
				},
				Config: joinConfig(ws, a, `  ingress_id = "proxy"
  capabilities = ["gpu"]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(joinAddr, ssdValue("joined"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(joinAddr, ssdValue("ready"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(joinAddr, ssdValue("reason"), knownvalue.StringExact("IngressTaken")),
					statecheck.ExpectKnownValue(joinAddr, ssdValue("labels", 1), knownvalue.StringExact("fleet.site")),
				},
			},
			{
				// Drift: kubectl drops the entry and adds a capability; apply restores.
				PreConfig: func() { h.patch("FleetClusterJoin", "j", `{"spec":{"edge":null,"capabilities":["gpu","extra"]}}`) },
				Config: joinConfig(ws, a, `  ingress_id = "proxy"
  capabilities = ["gpu"]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(joinAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(joinAddr, ssdValue("ingress_id"), knownvalue.StringExact("proxy")),
				}},
				Check: h.checkSpec("FleetClusterJoin", "j", map[string]any{"cluster": a, "site": "berlin", "edge": map[string]any{"ingressId": "proxy"}, "capabilities": []any{"gpu"}}),
			},
			{
				// The cluster is immutable on the hub: a new one replaces the join.
				Config: joinConfig(ws, b, `  ingress_id = "proxy"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(joinAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: h.checkSpec("FleetClusterJoin", "j", map[string]any{"cluster": b, "site": "berlin", "edge": map[string]any{"ingressId": "proxy"}}),
			},
		},
	})
}

// TestAccClusterJoin_planErrors: what no resource of the plan can change fails the plan, naming
// the other object, and nothing is written to the hub: an entry missing from a site no Terraform
// configuration manages, and a port_forward entry of such a site held by a join no configuration
// manages.
func TestAccClusterJoin_planErrors(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	a, first := f.Usable("a"), f.Usable("first")
	h := newSiteHub(t, ws)
	h.create("FleetSite", "kubectl-site", false, map[string]any{"edge": map[string]any{"ingress": []any{
		map[string]any{"id": "wan", "method": "port_forward", "address": "203.0.113.10", "ports": map[string]any{"https": 30443}},
		map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.example.com"}}}})
	h.create("FleetClusterJoin", "first", false, map[string]any{"cluster": first, "site": "kubectl-site", "edge": map[string]any{"ingressId": "wan"}})
	config := func(entry string) string {
		return fmt.Sprintf(`
resource "fleet_cluster_join" "j" {
  name       = "j"
  workspace  = %q
  cluster    = %q
  site       = "kubectl-site"
  ingress_id = %q
}
`, ws, a, entry)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config:      config("nope"),
				ExpectError: expectError("Ingress entry not on the site", `FleetSite `+ws+`/kubectl-site has no ingress entry "nope" (it has: wan, proxy)`, "Nothing was written to the hub"),
			},
			{
				PreConfig: func() { h.absent("FleetClusterJoin", "j") },
				Config:    config("wan"),
				ExpectError: expectError("port_forward entry already taken", `Ingress entry "wan" of FleetSite `+ws+`/kubectl-site is a port_forward entry`,
					"FleetClusterJoin "+ws+"/first (cluster "+first+") on the hub holds it", "Nothing was written to the hub"),
			},
			{
				// A reverse_proxy entry is shared: no diagnostic, and the join is written.
				PreConfig: func() { h.absent("FleetClusterJoin", "j") },
				Config:    config("proxy"),
				Check:     h.checkSpec("FleetClusterJoin", "j", map[string]any{"cluster": a, "site": "kubectl-site", "edge": map[string]any{"ingressId": "proxy"}}),
			},
			{
				// Moving the existing join onto the taken entry is refused too; the hub keeps "proxy".
				Config:      config("wan"),
				ExpectError: expectError("port_forward entry already taken", "FleetClusterJoin "+ws+"/first"),
			},
			{
				PreConfig: func() {
					u, err := h.get("FleetClusterJoin", "j")
					if err != nil {
						t.Fatal(err)
					}
					if e := u.Object["spec"].(map[string]any)["edge"].(map[string]any)["ingressId"]; e != "proxy" {
						t.Errorf("after the failed plan the hub's join is bound to %v, want proxy", e)
					}
				},
				Config:           config("proxy"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccClusterJoinPlanWarnings checks the warnings the CLI shows where another resource of the
// plan could resolve the problem: a cluster that is not on the hub, a site that is not on the hub,
// an entry missing from a site Terraform manages, and a port_forward entry held by a join that
// Terraform manages (or on a site it manages); a shared reverse_proxy entry warns of nothing; a
// site without a WAN path, and an entry removed while joins on the hub use it.
func TestAccClusterJoinPlanWarnings(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	a, first, other := f.Usable("a"), f.Usable("first"), f.Usable("other")
	h := newSiteHub(t, ws)
	h.create("FleetSite", "kubectl-site", false, map[string]any{"edge": map[string]any{"ingress": []any{
		map[string]any{"id": "wan", "method": "port_forward", "address": "203.0.113.10", "ports": map[string]any{"https": 30443}}}}})
	h.create("FleetClusterJoin", "managed-first", true, map[string]any{"cluster": first, "site": "kubectl-site", "edge": map[string]any{"ingressId": "wan"}})
	const (
		clusterMissing = "Cluster not on the hub"
		siteMissing    = "Site not on the hub"
		entryMissing   = "Ingress entry not on the site"
		taken          = "port_forward entry already taken"
		noWAN          = "Site has no WAN path"
		entryRemoved   = "Ingress entry removed while joins use it"
		shared         = "port_forward entry shared by joins"
	)
	all := []string{clusterMissing, siteMissing, entryMissing, taken, noWAN, entryRemoved, shared}
	expect := func(step string, got []cliDiag, failed bool, want map[string][]string) {
		t.Helper()
		expectWarnings(t, step, got, failed, all, want)
	}
	join := func(name, cluster, site, entry string) string {
		e := ""
		if entry != "" {
			e = fmt.Sprintf("  ingress_id = %q\n", entry)
		}
		return fmt.Sprintf("resource \"fleet_cluster_join\" %q {\n  name = %q\n  workspace = %q\n  cluster = %q\n  site = %q\n%s}\n", name, name, ws, cluster, site, e)
	}
	site := func(body string) string { return siteConfig(ws, body) }
	managedSite := `  ingress = [{ id = "proxy", method = "reverse_proxy", address = "edge.example.com" }]`

	d, failed := w.plan(join("j", "not-registered", "kubectl-site", ""))
	expect("cluster missing", d, failed, map[string][]string{clusterMissing: {ws + "/j", `"not-registered", which is not a ManagedCluster`}})

	d, failed = w.plan(join("j", a, "nowhere", "wan"))
	expect("site missing", d, failed, map[string][]string{siteMissing: {`site "nowhere"`, `ingress_id "wan" could not be checked`}})

	// The site of the same configuration, not on the hub yet, referred to as the docs recommend:
	// Terraform plans it first, so the join's check knows this plan creates it. No warning,
	// whichever order the blocks are declared in.
	joinRef := strings.Replace(join("j", a, "berlin", "proxy"), `site = "berlin"`, "site = fleet_site.s.name", 1)
	d, failed = w.plan(site(managedSite) + joinRef)
	expect("site in the same plan", d, failed, nil)
	d, failed = w.plan(joinRef + site(managedSite))
	expect("site in the same plan, reversed", d, failed, nil)

	d, failed = w.plan(join("j", a, "kubectl-site", "wan"))
	expect("entry held by a managed join", d, failed, map[string][]string{taken: {"FleetClusterJoin " + ws + "/managed-first (cluster " + first + ") on the hub holds it",
		"this plan may free the entry", "not Ready (IngressTaken)"}})

	// The site on the hub, managed by Terraform: an entry it lacks is a warning.
	w.apply(site(managedSite))
	d, failed = w.plan(site(managedSite) + join("j", a, "berlin", "wan"))
	expect("entry missing on a managed site", d, failed, map[string][]string{entryMissing: {`has no ingress entry "wan" (it has: proxy)`, "The site is managed by Terraform"}})
	// Shared reverse_proxy: nothing to say.
	w.apply(site(managedSite) + join("j", a, "berlin", "proxy") + join("k", other, "berlin", "proxy"))
	d, failed = w.plan(site(managedSite) + join("j", a, "berlin", "proxy") + join("k", other, "berlin", "proxy"))
	expect("shared reverse_proxy", d, failed, nil)

	// The site: the entry turned port_forward while two joins use it; then removed; then no WAN path.
	pf := `  ingress = [{ id = "proxy", method = "port_forward", address = "203.0.113.10", ports = { https = 30443 } }]`
	d, failed = w.plan(site(pf) + join("j", a, "berlin", "proxy") + join("k", other, "berlin", "proxy"))
	expect("entry turned port_forward", d, failed, map[string][]string{shared: {`Ingress entry "proxy" of FleetSite ` + ws + `/berlin is port_forward`, "j, k"}})
	// The same answer whatever order Terraform plans in: blocks reversed, one at a time, and with
	// a sibling join renamed (replaced) in the same plan.
	for _, v := range []struct {
		name   string
		blocks []string
		args   []string
	}{
		{"declared in reverse", []string{join("k", other, "berlin", "proxy"), join("j", a, "berlin", "proxy"), site(pf)}, nil},
		{"-parallelism=1", []string{site(pf), join("j", a, "berlin", "proxy"), join("k", other, "berlin", "proxy")}, []string{"-parallelism=1"}},
		{"reversed, -parallelism=1", []string{join("k", other, "berlin", "proxy"), join("j", a, "berlin", "proxy"), site(pf)}, []string{"-parallelism=1"}},
		{"sibling renamed", []string{site(pf), join("j", a, "berlin", "proxy"), join("k2", other, "berlin", "proxy")}, nil},
	} {
		w.write(strings.Join(v.blocks, ""))
		got, failed := w.diags(append([]string{"plan"}, v.args...)...)
		expect("entry turned port_forward, "+v.name, got, failed, map[string][]string{shared: {`Ingress entry "proxy" of FleetSite ` + ws + `/berlin is port_forward`, "j, k"}})
	}
	d, failed = w.plan(site(`  hub_gateway = { enabled = true, domain = "berlin.example.com" }`) + join("j", a, "berlin", "") + join("k", other, "berlin", ""))
	expect("entry removed", d, failed, map[string][]string{entryRemoved: {`no longer has ingress entry "proxy"`, "j, k"}})
	d, failed = w.plan(site("") + join("j", a, "berlin", "") + join("k", other, "berlin", ""))
	// No WAN path is no warning of the site's (an air-gapped site is meant to have none): the plan
	// of an app route that would need one says so (TestAccAppRoutePlanWarnings).
	expect("no WAN path", d, failed, map[string][]string{entryRemoved: {`"proxy"`}})

	w.destroy()
	for _, name := range []string{"j", "k"} {
		if _, err := h.get("FleetClusterJoin", name); !apierrors.IsNotFound(err) {
			t.Errorf("join %s after destroy: %v, want NotFound", name, err)
		}
	}
	if _, err := h.get("FleetSite", "berlin"); !apierrors.IsNotFound(err) {
		t.Errorf("site after destroy: %v, want NotFound", err)
	}
}

// TestAccClusterJoinPlan_listsEachKindOnce: planning many joins reads each kind the checks need
// once, through the provider's preload, and sends nothing but LISTs.
func TestAccClusterJoinPlan_listsEachKindOnce(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	cluster := newHubFixtures(t, ws).Usable("a")
	h := newSiteHub(t, ws)
	h.create("FleetSite", "kubectl-site", false, map[string]any{"edge": map[string]any{"ingress": []any{
		map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.example.com"}}}})
	if _, err := h.joins.List(t.Context(), metav1.ListOptions{}); err != nil { // the kind is served
		t.Fatal(err)
	}
	kubeconfig, counter := countingKubeconfig(t)
	d := newPlanDriverFor[clusterJoinModel](t, "fleet_cluster_join", map[string]tftypes.Value{"config_path": tftypes.NewValue(tftypes.String, kubeconfig)})
	const n = 50
	for i := range n {
		m := clusterJoinModel{Cluster: types.StringValue(cluster), Site: types.StringValue("kubectl-site"), IngressID: types.StringValue("proxy"),
			Capabilities: types.SetNull(types.StringType), Labels: types.ListUnknown(types.StringType), Joined: types.BoolUnknown(), Ready: types.BoolUnknown(),
			Reason: types.StringUnknown(), Message: types.StringUnknown()}
		m.Name, m.Workspace, m.ID = types.StringValue(fmt.Sprintf("j-%03d", i)), types.StringValue(ws), types.StringUnknown()
		if diags := d.plan(&m, nil); len(diags) > 0 {
			t.Fatalf("plan of join %d: want no diagnostics, got\n%s", i, describeDiags(diags))
		}
	}
	// The workspace's inventory (routes, secrets, sets) is preloaded too: its count is
	// TestAccOCIRoutePlan_listsEachKindOnce's to check.
	counter.mu.Lock()
	defer counter.mu.Unlock()
	for _, kind := range []string{"fleetclusterjoins", "fleetsites", "managedclusters", "managedclustersets", "managedclustersetbindings"} {
		if counter.lists[kind] != 1 {
			t.Errorf("LIST requests of %s over %d join plans = %d, want 1 (all: %v)", kind, n, counter.lists[kind], counter.lists)
		}
	}
	if len(counter.other) > 0 {
		t.Errorf("requests other than LISTs during planning: %v", counter.other)
	}
}
