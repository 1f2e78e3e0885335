package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// identityCase is one resource of TestAccIdentity_import: a configuration (from the resource's
// own acceptance test) that creates it, its address and hub name.
type identityCase struct {
	addr, name string
	setup      func(t *testing.T) (ws, config string)
}

var identityCases = map[string]identityCase{
	"fleet_chart": {chartAddr, "hello", func(t *testing.T) (string, string) {
		ws := testWorkspace(t, testHub(t))
		return ws, fleetChartConfig(ws, `  version = "0.1.0"`)
	}},
	"fleet_app": {appAddr, "hello", func(t *testing.T) (string, string) {
		_, ws, cluster := appHub(t)
		return ws, appConfig(ws, cluster, `  namespace = "web"`)
	}},
	"fleet_app_route": {routeAddr, "r", func(t *testing.T) (string, string) {
		h, ws, cluster := appHub(t)
		h.create("FleetApp", "hello", false, map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web"})
		return ws, appRouteConfig(ws, `  app  = "hello"
  mode = "hub"
  host = "hello.apps.example.com"`)
	}},
	"fleet_site": {siteAddr, "berlin", func(t *testing.T) (string, string) {
		ws := testWorkspace(t, testHub(t))
		return ws, siteConfig(ws, fullSite)
	}},
	"fleet_cluster_join": {joinAddr, "j", func(t *testing.T) (string, string) {
		ws := testWorkspace(t, testHub(t))
		return ws, joinConfig(ws, newHubFixtures(t, ws).Usable("a"), `  ingress_id = "wan"`)
	}},
	"fleet_oci_registry": {"fleet_oci_registry.central", "central", func(t *testing.T) (string, string) {
		ws := testWorkspace(t, testHub(t))
		return ws, mirrorConfig(ws, "central")
	}},
	"fleet_oci_route": {"fleet_oci_route.eu", "eu", func(t *testing.T) (string, string) {
		ws := testWorkspace(t, testHub(t))
		return ws, mirrorConfig(ws, "central") + routeConfig(ws, "eu", `
  priority          = 10
  cluster_selectors = [{ match_labels = { region = "eu" } }]
  registries        = [fleet_oci_registry.central.name]`)
	}},
	"fleet_storage_site_deployment": {ssdAddr, "site-a", func(t *testing.T) (string, string) {
		ws := testWorkspace(t, testHub(t))
		return ws, ssdConfig(ws, newHubFixtures(t, ws).Usable("site"), `  discover = { workers = ["w1"] }`)
	}},
}

// TestAccIdentity_import: every resource has an identity (workspace and name) in state after
// create, and `import { identity = {...} }` imports it with a plan that changes nothing. Resource
// identity needs Terraform or OpenTofu 1.12: older CLIs skip the test (their import by ID is in
// each resource's lifecycle test).
func TestAccIdentity_import(t *testing.T) {
	for typ, c := range identityCases {
		t.Run(typ, func(t *testing.T) {
			ws, config := c.setup(t)
			identity := statecheck.ExpectIdentity(c.addr, map[string]knownvalue.Check{
				"workspace": knownvalue.StringExact(ws),
				"name":      knownvalue.StringExact(c.name),
			})
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Providers,
				TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
				Steps: []resource.TestStep{
					{Config: config, ConfigStateChecks: []statecheck.StateCheck{identity}},
					{Config: config, ResourceName: c.addr, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity},
					// A refresh and an empty plan keep the identity.
					{Config: config, ConfigStateChecks: []statecheck.StateCheck{identity},
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				},
			})
		})
	}
}

// TestAccIdentity_importRefused: an identity that names no object, or is not a Kubernetes name,
// fails the plan with a diagnostic; nothing is imported.
func TestAccIdentity_importRefused(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	h := newSiteHub(t, ws)
	importSite := func(workspace, name string) string {
		return siteConfig(ws, "") + fmt.Sprintf(`
import {
  to       = fleet_site.s
  identity = { workspace = %q, name = %q }
}
`, workspace, name)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{Config: importSite(ws, "berlin"), PlanOnly: true, ExpectError: expectError("Cannot import non-existent remote object")},
			{Config: importSite(ws, "Berlin_1"), PlanOnly: true, ExpectError: expectError("Invalid import identity", `name: "Berlin_1" is not a valid Kubernetes name`)},
			{Config: importSite("Bad.WS", "berlin"), PlanOnly: true, ExpectError: expectError("Invalid import identity", `workspace: "Bad.WS"`)},
			{
				PreConfig: func() { h.create("FleetSite", "berlin", false, map[string]any{}) },
				Config:    importSite(ws, "berlin"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(siteAddr, map[string]knownvalue.Check{"workspace": knownvalue.StringExact(ws), "name": knownvalue.StringExact("berlin")}),
					statecheck.ExpectKnownValue(siteAddr, tfjsonpath.New("id"), knownvalue.StringExact(ws+"/berlin")),
				},
			},
		},
	})
}
