package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// TestAccPlanWarnsChainNearWorkBudget: two registries of 140 KiB CA bundles each, under the
// 256 KiB a single bundle is warned of, together take a route's work near the 450 KiB budget.
// The route's plan warns once, naming the route, both registries and their sizes, with the hub's
// values, or the planned ones of registries created in the same plan; the registry's plan warns
// with its planned value when it grows under a route on the hub.
func TestAccPlanWarnsChainNearWorkBudget(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	cluster := f.Cluster("eu-01", "", nil)
	ca, err := testbed.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]string{} // each file's size as the warning gives it
	for name, kib := range map[string]int{"a.pem": 140, "b.pem": 140, "small.pem": 4} {
		bundle := strings.Repeat(ca.PEM, kib<<10/len(ca.PEM)) // whole certificates, just under kib KiB
		size[name] = work.KiB(len(bundle))
		if err := os.WriteFile(filepath.Join(w.dir, name), []byte(bundle), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	registries := func(bFile string) string {
		return fmt.Sprintf(`
resource "fleet_oci_registry" "a" {
  name      = "ca-a"
  workspace = %[1]q
  role      = "source"
  reference = "a.example.com/fleet"
  ca_certs  = file("a.pem")
}
resource "fleet_oci_registry" "b" {
  name      = "ca-b"
  workspace = %[1]q
  role      = "mirror"
  reference = "b.example.com/fleet"
  ca_certs  = file(%[2]q)
}
`, ws, bFile)
	}
	route := fmt.Sprintf(`
resource "fleet_oci_route" "r" {
  name          = "chain"
  workspace     = %q
  priority      = 10
  cluster_names = [%q]
  registries    = [fleet_oci_registry.a.name, fleet_oci_registry.b.name]
}
`, ws, cluster)
	const summary = "Chain's CA bundles near the work budget"
	want := func(step string, d []cliDiag, sizes ...string) {
		t.Helper()
		got := only(d, summary)
		if len(got) != 1 {
			t.Fatalf("%s: %d %q warnings, want 1: %v", step, len(got), summary, d)
		}
		g := got[0]
		for _, s := range append(sizes, `Route "chain"'s chain`, "450 KiB", "WorkTooLarge", "Keep only the CAs") {
			if !strings.Contains(g.Detail, s) {
				t.Errorf("%s: %s %q does not say %q:\n%s", step, g.Severity, g.Summary, s, g.Detail)
			}
		}
		if g.Severity != "warning" {
			t.Errorf("%s: severity %s, want warning", step, g.Severity)
		}
	}

	// Registries and the route in one plan: the route, planned after the registries it refers
	// to, counts their planned bundles.
	d, failed := w.plan(registries("b.pem") + route)
	if failed {
		t.Fatalf("plan failed: %v", d)
	}
	want("route and registries created together", d, `"ca-a" (`+size["a.pem"]+`)`, `"ca-b" (`+size["b.pem"]+`)`, "KiB together")

	// Registries alone: no route lists them, nothing to warn of; each is under 256 KiB.
	if d := w.apply(registries("b.pem")); len(only(d, summary, "Large CA bundle")) != 0 {
		t.Errorf("registries alone: %v", only(d, summary, "Large CA bundle"))
	}
	// A route over both, on the hub: the route warns.
	d, failed = w.plan(registries("b.pem") + route)
	if failed {
		t.Fatalf("plan failed: %v", d)
	}
	want("route over two 140 KiB bundles", d, `"ca-a" (`+size["a.pem"]+`)`, `"ca-b" (`+size["b.pem"]+`)`, "KiB together")

	// The route on the hub with a small b; b grows in the plan: b's planned value counts.
	w.apply(registries("small.pem") + route)
	d, failed = w.plan(registries("b.pem") + route)
	if failed {
		t.Fatalf("plan failed: %v", d)
	}
	want("registry b grows under the route", d, `"ca-a" (`+size["a.pem"]+`)`, `"ca-b" (`+size["b.pem"]+`)`, "KiB together")

	// Small enough together: no warning.
	if d, failed := w.plan(registries("small.pem") + route); failed || len(only(d, summary)) != 0 {
		t.Errorf("144 KiB together: failed %v, warnings %v; want none", failed, only(d, summary))
	}
	w.destroy()
}
