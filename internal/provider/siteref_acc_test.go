package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// TestAccSiteReferences: a registry whose reference names the cluster's site label, on a real
// hub and both CLIs. fleet_oci_chain shows it resolved per cluster, and leaves it out for a
// cluster without the label or with a label value that would reach another host; resolve_route
// resolves it offline alike; bad templates are refused at plan with nothing written.
func TestAccSiteReferences(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("fleet")
	f.Cluster("berlin", "fleet", map[string]string{"site": "berlin"})
	f.Cluster("nolabel", "fleet", nil)
	f.Cluster("hostile", "fleet", map[string]string{"site": "evil.com"})
	f.Registry("site", "mirror", "zot.{{ .labels.site }}.stores.internal:5000/fleet")
	f.Registry("central", "source", "harbor.example.com/fleet")
	f.Route("sites", map[string]any{"priority": 1000, "default": true, "registries": []any{"site", "central"}})

	cfg := fmt.Sprintf(`
data "fleet_oci_chain" "berlin" {
  workspace = %[1]q
  cluster   = %[2]q
}

data "fleet_oci_chain" "nolabel" {
  workspace = %[1]q
  cluster   = %[3]q
}

data "fleet_oci_chain" "hostile" {
  workspace = %[1]q
  cluster   = %[4]q
}

locals {
  routes     = [{ name = "sites", priority = 1000, default = true, registries = ["site", "central"] }]
  registries = { site = "zot.{{ .labels.site }}.stores.internal:5000/fleet", central = "harbor.example.com/fleet" }
}

output "offline_berlin" {
  value = provider::fleet::resolve_route(local.routes, { name = "berlin", labels = { site = "berlin" } }, local.registries)
}

output "offline_hostile" {
  value = provider::fleet::resolve_route(local.routes, { name = "hostile", labels = { site = "evil.com:443/x" } }, local.registries)
}
`, ws, f.Name("berlin"), f.Name("nolabel"), f.Name("hostile"))

	reg := func(name, reference, role string) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name": knownvalue.StringExact(name), "reference": knownvalue.StringExact(reference), "role": knownvalue.StringExact(role),
			"reachability": knownvalue.Null(), "probed_at": knownvalue.Null()}) // no agent probes here
	}
	central := reg("central", "harbor.example.com/fleet", "source")
	unresolved := func(cluster, reason, why string) knownvalue.Check {
		return knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name": knownvalue.StringExact("site"), "label": knownvalue.StringExact("site"), "reason": knownvalue.StringExact(reason),
			"message": knownvalue.StringExact(fmt.Sprintf(`cluster %q gets no entry for registry "site": %s`, cluster, why)),
		})})
	}
	entry := func(name, reference string) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{"name": knownvalue.StringExact(name), "reference": knownvalue.StringExact(reference)})
	}
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue("data.fleet_oci_chain.berlin", tfjsonpath.New("registries"),
			knownvalue.ListExact([]knownvalue.Check{reg("site", "zot.berlin.stores.internal:5000/fleet", "mirror"), central})),
		statecheck.ExpectKnownValue("data.fleet_oci_chain.berlin", tfjsonpath.New("unresolved"), knownvalue.ListExact([]knownvalue.Check{})),
		statecheck.ExpectKnownValue("data.fleet_oci_chain.nolabel", tfjsonpath.New("registries"), knownvalue.ListExact([]knownvalue.Check{central})),
		statecheck.ExpectKnownValue("data.fleet_oci_chain.nolabel", tfjsonpath.New("unresolved"),
			unresolved(f.Name("nolabel"), "LabelMissing", `the cluster has no label "site"`)),
		statecheck.ExpectKnownValue("data.fleet_oci_chain.hostile", tfjsonpath.New("registries"), knownvalue.ListExact([]knownvalue.Check{central})),
		statecheck.ExpectKnownValue("data.fleet_oci_chain.hostile", tfjsonpath.New("unresolved"),
			unresolved(f.Name("hostile"), "LabelRefused", `label "site": value "evil.com" may fill only part of one DNS label of the host: letters, digits and '-', no '.', ':', '/' or '@'`)),
		statecheck.ExpectKnownOutputValueAtPath("offline_berlin", tfjsonpath.New("chain"), knownvalue.ListExact([]knownvalue.Check{
			entry("site", "zot.berlin.stores.internal:5000/fleet"), entry("central", "harbor.example.com/fleet")})),
		statecheck.ExpectKnownOutputValueAtPath("offline_hostile", tfjsonpath.New("chain"), knownvalue.ListExact([]knownvalue.Check{
			entry("central", "harbor.example.com/fleet")})),
		statecheck.ExpectKnownOutputValueAtPath("offline_hostile", tfjsonpath.New("unresolved").AtSliceIndex(0).AtMapKey("reason"), knownvalue.StringExact("LabelRefused")),
	}

	bad := func(role, reference string) string {
		return registryConfig(ws, "bad", fmt.Sprintf("  role = %q\n  reference = %q\n", role, reference))
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{
		{Config: cfg, ConfigStateChecks: checks},
		{Config: bad("mirror", "zot.{{ .labels.site }}.internal/fleet"), PlanOnly: true,
			ExpectError: expectError("Invalid registry reference", "fixed domain of at least 2 DNS labels")},
		{Config: bad("mirror", "zot.{{ .labels.site | lower }}.stores.internal"), PlanOnly: true,
			ExpectError: expectError("Invalid registry reference", "the only template syntax is {{ .labels.<key> }}")},
		{Config: bad("mirror", "zot.{{ .labels.-site }}.stores.internal"), PlanOnly: true,
			ExpectError: expectError("Invalid registry reference", `"-site" is not a valid label key`)},
		{Config: bad("mirror", "zot.stores.internal:{{ .labels.port }}"), PlanOnly: true,
			ExpectError: expectError("Invalid registry reference", "a label cannot fill the port")},
		{Config: bad("source", "zot.{{ .labels.site }}.stores.internal"), PlanOnly: true,
			ExpectError: expectError("Source reference names labels", `role = "mirror"`)},
		{Config: cfg + bad("mirror", "zot.{{ .labels.site }}.stores.internal/fleet"), ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("fleet_oci_registry.bad", tfjsonpath.New("reference"), knownvalue.StringExact("zot.{{ .labels.site }}.stores.internal/fleet")),
		}},
	}})
}

// TestAccSiteReferencePlanWarning: a plan that creates a registry whose reference names a label
// warns about the clusters its routes on the hub send to it that it does not resolve for,
// naming cluster, registry and label; one that resolves for all of them, or a plain reference,
// does not.
func TestAccSiteReferencePlanWarning(t *testing.T) {
	w := newCLIWorkdir(t)
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("fleet")
	f.Cluster("berlin", "fleet", map[string]string{"site": "berlin", "region": "eu"})
	f.Cluster("nolabel", "fleet", map[string]string{"region": "eu"})
	f.Route("sites", map[string]any{"priority": 1000, "default": true, "registries": []any{"zot-site"}})
	const summary = "Reference does not resolve for some clusters"
	registry := func(reference string) string {
		return registryConfig(ws, "zot-site", fmt.Sprintf("  role = \"mirror\"\n  reference = %q\n", reference))
	}
	d, failed := w.plan(registry("zot.{{ .labels.site }}.stores.internal/fleet"))
	expectWarnings(t, "label missing on one cluster", d, failed, []string{summary}, map[string][]string{summary: {
		`Registry "zot-site"'s reference "zot.{{ .labels.site }}.stores.internal/fleet"`, "for 1 of the 2 clusters",
		fmt.Sprintf(`cluster %q gets no entry for registry "zot-site": the cluster has no label "site"`, f.Name("nolabel"))}})
	d, failed = w.plan(registry("zot.{{ .labels.region }}.stores.internal/fleet"))
	expectWarnings(t, "resolves for every cluster", d, failed, []string{summary}, nil)
	d, failed = w.plan(registry("zot.stores.internal/fleet"))
	expectWarnings(t, "plain reference", d, failed, []string{summary}, nil)
}
