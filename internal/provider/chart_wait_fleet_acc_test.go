package provider

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAccChart_waitForOnTheFleet: on real parts (the hub's routing and apps reconcilers, OCM's
// work agent, fleet-controller agent, Helm, a registry), bumping only the chart's version plans
// the app as no change, and the chart's wait_for = "deployed" makes apply wait until the release
// is upgraded: the chart's state shows the new digest; a version whose template does not parse
// fails the apply with the release's message.
func TestAccChart_waitForOnTheFleet(t *testing.T) {
	begin := time.Now()
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("fleet")
	cluster := f.Cluster("edge", "fleet", nil)
	hc := accHubClient(t)

	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: "push-s3cret", Users: map[string]string{"puller": "pull-s3cret"}})
	v1 := reg.PushChartT(t, "fleet/charts/hello", testbed.HelloChart("hello", "0.1.0"))
	v2 := reg.PushChartT(t, "fleet/charts/hello", testbed.HelloChart("hello", "0.2.0"))
	reg.PushChartT(t, "fleet/charts/hello", testbed.PackageChart("hello", "0.3.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }-broken\n"))
	secret := testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{
		Reference: reg.Reference("fleet"), BasicHTTP: true, Username: reg.Username, Password: reg.Password,
		AgentUsername: "puller", AgentPassword: "pull-s3cret",
	})
	if err := hc.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	f.Route("edge", map[string]any{"priority": 10, "clusterNames": []any{cluster}, "registries": []any{"source"}})
	newSiteHub(t, ws).create("FleetClusterJoin", "edge", false, map[string]any{"cluster": cluster, "site": "lab"})

	spoke := joinAccFleet(t, hc, cluster)
	logs := runHubReconcilers(t, []string{ws, cluster}, "routing", "apps")
	am, err := agent.NewManager(spoke.Config, agent.Options{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, CacheDir: t.TempDir(),
		AttemptTimeout: 10 * time.Second, RetryFailed: 2 * time.Second, Backoff: puller.Backoff{Initial: 300 * time.Millisecond, Max: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, am)
	t.Logf("registry, workload cluster %s, reconcilers and agent up in %v", cluster, time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hub reconcilers:\n%s\nagent:\n%s", logs.String(), spoke.AgentLog())
		}
	})

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
