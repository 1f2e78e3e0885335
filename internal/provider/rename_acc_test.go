package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
)

// TestAccRenameInPlace changes `name` inside the same resource blocks, which Terraform and
// OpenTofu plan as a replacement and ask the provider to plan twice (the update that becomes a
// replace, then the create): for the source registry, a mirror, a route that keeps its priority
// and names the renamed registries, a chart, a site, an app and its route, a cluster join and a
// storage deployment: every resource on the engine. The rename applies
// (no "Duplicate" error from the resource meeting its own first call), the hub then holds only the
// new names, the next plan is empty, and a later update of the renamed resources applies. At the
// default parallelism and at -parallelism=1.
func TestAccRenameInPlace(t *testing.T) {
	for _, parallelism := range []string{"10", "1"} {
		t.Run("parallelism="+parallelism, func(t *testing.T) {
			t.Setenv("TF_CLI_ARGS_plan", "-parallelism="+parallelism)
			t.Setenv("TF_CLI_ARGS_apply", "-parallelism="+parallelism)
			kube := testHub(t)
			ws := testWorkspace(t, kube)
			f := newHubFixtures(t, ws)
			cluster := f.Cluster("eu-01", "", nil)
			config := func(suffix string, priority int) string {
				n := func(base string) string { return base + suffix }
				return fmt.Sprintf(`
resource "fleet_oci_registry" "src" {
  name      = %[2]q
  workspace = %[1]q
  role      = "source"
  reference = "src.example.com/fleet"
}
resource "fleet_oci_registry" "mirror" {
  name      = %[3]q
  workspace = %[1]q
  role      = "mirror"
  reference = "mirror.example.com/fleet"
}
resource "fleet_oci_route" "r" {
  name          = %[4]q
  workspace     = %[1]q
  priority      = %[5]d
  cluster_names = [%[6]q]
  registries    = [fleet_oci_registry.src.name, fleet_oci_registry.mirror.name]
}
resource "fleet_chart" "c" {
  name       = %[7]q
  workspace  = %[1]q
  repository = "charts/hello"
  version    = "0.1.0"
}
resource "fleet_site" "s" {
  name      = %[8]q
  workspace = %[1]q
}
resource "fleet_app" "a" {
  name      = %[9]q
  workspace = %[1]q
  chart     = fleet_chart.c.name
  cluster   = %[6]q
  namespace = "web"
}
resource "fleet_app_route" "ar" {
  name      = %[10]q
  workspace = %[1]q
  app       = fleet_app.a.name
  mode      = "none"
  service   = { name = "hello", port = 80 }
}
resource "fleet_cluster_join" "j" {
  name      = %[11]q
  workspace = %[1]q
  cluster   = %[6]q
  site      = fleet_site.s.name
}
resource "fleet_storage_site_deployment" "sd" {
  name      = %[12]q
  workspace = %[1]q
  cluster   = %[6]q
}
`, ws, n("src"), n("mirror"), n("route-a"), priority, cluster, n("hello"), n("berlin"), n("app"), n("app-route"), n("join"), n("storage"))
			}
			names := func(suffix string) map[hub.Kind][]string {
				n := func(bases ...string) []string {
					out := make([]string, len(bases))
					for i, b := range bases {
						out[i] = b + suffix
					}
					return out
				}
				return map[hub.Kind][]string{
					inventory.SecretKind: n("mirror", "src"), inventory.RouteKind: n("route-a"), fleetChartKind: n("hello"),
					fleetSiteKind: n("berlin"), fleetAppKind: n("app"), fleetAppRouteKind: n("app-route"),
					fleetClusterJoinKind: n("join"), storageSiteDeploymentKind: n("storage"),
				}
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Providers,
				Steps: []resource.TestStep{
					{Config: config("", 10), Check: checkHubNames(f, names(""))},
					{
						Config: config("2", 10),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("fleet_oci_registry.src", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_oci_registry.mirror", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_oci_route.r", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_chart.c", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_site.s", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_app.a", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_app_route.ar", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_cluster_join.j", plancheck.ResourceActionDestroyBeforeCreate),
							plancheck.ExpectResourceAction("fleet_storage_site_deployment.sd", plancheck.ResourceActionDestroyBeforeCreate),
						}},
						Check: resource.ComposeAggregateTestCheckFunc(
							checkHubNames(f, names("2")),
							checkRouteSpec(f, "route-a2", map[string]any{"priority": 10, "clusterNames": []any{cluster}, "registries": []any{"src2", "mirror2"}, "replicationWait": "0s"}),
						),
					},
					{Config: config("2", 10), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
					// Renamed back, the old names are free again; then a plain update of the renamed route.
					{Config: config("", 10), Check: checkHubNames(f, names(""))},
					{
						Config: config("", 11),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("fleet_oci_route.r", plancheck.ResourceActionUpdate),
						}},
						Check: checkRouteSpec(f, "route-a", map[string]any{"priority": 11, "clusterNames": []any{cluster}, "registries": []any{"src", "mirror"}, "replicationWait": "0s"}),
					},
				},
			})
		})
	}
}

// checkHubNames asserts the names of the objects of each kind in the fixtures' workspace
// (Secrets: the OCI registries only).
func checkHubNames(f *hubFixtures, want map[hub.Kind][]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var problems []string
		for kind, names := range want {
			opts := metav1.ListOptions{}
			if kind == inventory.SecretKind {
				opts.LabelSelector = OCIRegistryRoleLabel
			}
			list, err := f.dyn.Resource(kind.GroupVersionResource).Namespace(f.ws).List(context.Background(), opts)
			if err != nil {
				return fmt.Errorf("list %ss: %w", kind.Kind, err)
			}
			var got []string
			for _, o := range list.Items {
				got = append(got, o.GetName())
			}
			slices.Sort(got)
			w := slices.Sorted(slices.Values(names))
			if !slices.Equal(got, w) {
				problems = append(problems, fmt.Sprintf("%ss %v, want %v", kind.Kind, got, w))
			}
		}
		if len(problems) > 0 {
			slices.Sort(problems)
			return fmt.Errorf("workspace %s holds %s", f.ws, strings.Join(problems, "; "))
		}
		return nil
	}
}
