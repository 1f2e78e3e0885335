package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestAccChart_waitForOnTheFleet: on real parts (the hub's routing and apps reconcilers, OCM's
// work agent, fleet-controller agent, Helm, a registry), bumping only the chart's version plans
// the app as no change, and the chart's wait_for = "deployed" makes apply wait until the release
// is upgraded: the chart's state shows the new digest; a version whose template does not parse
// fails the apply with the release's message.
func TestAccChart_waitForOnTheFleet(t *testing.T) {
	fl := startAccFleet(t, []string{"routing", "apps"})
	ws, cluster, reg := fl.ws, fl.cluster, fl.registry
	v1 := reg.PushChartT(t, "fleet/charts/hello", testbed.HelloChart("hello", "0.1.0"))
	v2 := reg.PushChartT(t, "fleet/charts/hello", testbed.HelloChart("hello", "0.2.0"))
	reg.PushChartT(t, "fleet/charts/hello", testbed.PackageChart("hello", "0.3.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }-broken\n"))

	config := func(version string) string {
		return fmt.Sprintf(`
resource "fleet_chart" "c" {
  name       = "hello"
  workspace  = %[1]q
  repository = "charts/hello"
  version    = %[3]q
  wait_for   = "deployed"
  timeouts {
    create = "2m"
    update = "2m"
  }
}

resource "fleet_app" "a" {
  name      = "hello"
  workspace = %[1]q
  chart     = fleet_chart.c.name
  cluster   = %[2]q
  namespace = "hello"
  wait_for  = "deployed"
  timeouts {
    create = "2m"
  }
}
`, ws, cluster, version)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: config("0.1.0"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fleet_app.a", ssdValue("phase"), knownvalue.StringExact("Deployed")),
					statecheck.ExpectKnownValue("fleet_app.a", ssdValue("revision"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue("fleet_app.a", ssdValue("digest"), knownvalue.StringExact(v1.Digest.String())),
				},
			},
			{
				Config: config("0.2.0"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("fleet_chart.c", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("fleet_app.a", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fleet_chart.c", ssdValue("resolved_digest"), knownvalue.StringExact(v2.Digest.String())),
				},
			},
			{
				// The app's next refresh reads the upgrade: revision 2, the new digest.
				Config: config("0.2.0"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fleet_app.a", ssdValue("revision"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue("fleet_app.a", ssdValue("digest"), knownvalue.StringExact(v2.Digest.String())),
				},
			},
			{
				Config:      config("0.3.0"),
				ExpectError: expectError("FleetApp failed", "FleetApp "+ws+"/hello is Failed on cluster", "the release failed"),
			},
		},
	})
}
