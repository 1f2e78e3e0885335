package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

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
