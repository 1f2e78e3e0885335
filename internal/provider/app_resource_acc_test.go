package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	chartAddr = "fleet_chart.c"
	appAddr   = "fleet_app.a"
	routeAddr = "fleet_app_route.r"
)

var testDigest = "sha256:" + strings.Repeat("0f", 32)

func fleetChartConfig(ws, body string) string {
	return fmt.Sprintf(`
resource "fleet_chart" "c" {
  name       = "hello"
  workspace  = %q
  repository = "charts/hello"
%s
}
`, ws, body)
}

// TestAccChart_lifecycle: a chart without version nor digest is refused, then create, update,
// import, the hub's status read back, drift corrected, destroy.
func TestAccChart_lifecycle(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	h := newSiteHub(t, ws)
	updated := fleetChartConfig(ws, fmt.Sprintf("  digest = %q", testDigest))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{Config: fleetChartConfig(ws, ""), ExpectError: expectError("Chart without version or digest", "Set version")},
			{
				PreConfig: func() { h.absent("FleetChart", "hello") },
				Config:    fleetChartConfig(ws, `  version = "0.1.0"`),
				Check:     h.checkSpec("FleetChart", "hello", map[string]any{"repository": "charts/hello", "version": "0.1.0"}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(chartAddr, ssdValue("id"), knownvalue.StringExact(ws+"/hello")),
					statecheck.ExpectKnownValue(chartAddr, ssdValue("digest"), knownvalue.Null()),
					statecheck.ExpectKnownValue(chartAddr, ssdValue("resolved_digest"), knownvalue.Null()), // no controller on this hub
					statecheck.ExpectKnownValue(chartAddr, ssdValue("apps"), knownvalue.Null()),
				},
			},
			{
				Config:           updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(chartAddr, plancheck.ResourceActionUpdate)}},
				Check:            h.checkSpec("FleetChart", "hello", map[string]any{"repository": "charts/hello", "digest": testDigest}),
			},
			{
				// Both version and digest: refused at plan, the hub's chart unchanged.
				Config:      fleetChartConfig(ws, fmt.Sprintf("  version = \"0.2.0\"\n  digest = %q", testDigest)),
				ExpectError: expectError("Chart with both version and digest", "never read the version", "remove the other"),
			},
			{Config: updated, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: h.checkSpec("FleetChart", "hello", map[string]any{"repository": "charts/hello", "digest": testDigest})},
			{ResourceName: chartAddr, ImportState: true, ImportStateVerify: true, ImportStateId: ws + "/hello"},
			{
				PreConfig:        func() { h.setStatus("FleetChart", "hello", map[string]any{"digest": testDigest, "apps": 2}) },
				Config:           updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(chartAddr, ssdValue("resolved_digest"), knownvalue.StringExact(testDigest)),
					statecheck.ExpectKnownValue(chartAddr, ssdValue("apps"), knownvalue.Int64Exact(2)),
				},
			},
			{
				// Drift: kubectl points the chart at another digest; the plan shows it, apply restores.
				PreConfig: func() { h.patch("FleetChart", "hello", `{"spec":{"digest":"sha256:`+strings.Repeat("0", 64)+`"}}`) },
				Config:    updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(chartAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(chartAddr, ssdValue("version"), knownvalue.Null()),
					plancheck.ExpectKnownValue(chartAddr, ssdValue("digest"), knownvalue.StringExact(testDigest)),
				}},
				Check: h.checkSpec("FleetChart", "hello", map[string]any{"repository": "charts/hello", "digest": testDigest}),
			},
		},
	})
}

// appHub is a workspace with a registered cluster joined (Ready) to an unmanaged site and a chart
// on the hub, for app and route tests whose plans should be free of warnings.
func appHub(t *testing.T) (h *siteHub, ws, cluster string) {
	ws = testWorkspace(t, testHub(t))
	cluster = newHubFixtures(t, ws).Usable("a")
	h = newSiteHub(t, ws)
	h.create("FleetSite", "berlin", false, map[string]any{
		"edge":       map[string]any{"ingress": []any{map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.example.com"}}},
		"hubGateway": map[string]any{"enabled": true, "domain": "apps.example.com"}})
	h.create("FleetClusterJoin", "ja", false, map[string]any{"cluster": cluster, "site": "berlin", "edge": map[string]any{"ingressId": "proxy"}})
	h.setStatus("FleetClusterJoin", "ja", map[string]any{"conditions": []any{readyStatus("True", "Ready", "")}})
	h.create("FleetChart", "hello", false, map[string]any{"repository": "charts/hello", "version": "0.1.0"})
	return h, ws, cluster
}

func readyStatus(status, reason, message string) map[string]any {
	return map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}
}

func appConfig(ws, cluster, body string) string {
	return fmt.Sprintf(`
resource "fleet_app" "a" {
  name      = "hello"
  workspace = %q
  chart     = "hello"
  cluster   = %q
%s
}
`, ws, cluster, body)
}

// TestAccApp_lifecycle: values that are not a mapping are refused, then create with YAML values and a values Secret reference, the same values
// as JSON in another order plan nothing, update, import, the hub's status read back, drift in
// values shown and corrected, a new namespace replaces, destroy.
func TestAccApp_lifecycle(t *testing.T) {
	h, ws, cluster := appHub(t)
	const secretRef = `  values_secret = { name = "hello-secrets", key = "values.yaml" }`
	spec := func(replicas int) map[string]any {
		return map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web", "values": map[string]any{"replicaCount": replicas, "image": map[string]any{"tag": "1.2"}},
			"valuesSecretRef": map[string]any{"name": "hello-secrets", "key": "values.yaml"}}
	}
	three := appConfig(ws, cluster, `  namespace = "web"
  values = jsonencode({ replicaCount = 3, image = { tag = "1.2" } })
`+secretRef)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{Config: appConfig(ws, cluster, `  namespace = "web"
  values = jsonencode(["a"])`), ExpectError: expectError("Invalid values", "values must be a mapping")},
			{
				Config: appConfig(ws, cluster, `  namespace = "web"
  values = yamlencode({ replicaCount = 2, image = { tag = "1.2" } })
`+secretRef),
				Check: h.checkSpec("FleetApp", "hello", spec(2)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(appAddr, ssdValue("values_secret", "name"), knownvalue.StringExact("hello-secrets")),
					statecheck.ExpectKnownValue(appAddr, ssdValue("release_name"), knownvalue.Null()),
					statecheck.ExpectKnownValue(appAddr, ssdValue("phase"), knownvalue.Null()), // no controller on this hub
				},
			},
			{
				// The same values, as JSON with the keys the other way round: nothing to do.
				Config: appConfig(ws, cluster, `  namespace = "web"
  values = "{ \"image\": { \"tag\": \"1.2\" }, \"replicaCount\": 2.0 }"
`+secretRef),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config:           three,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(appAddr, plancheck.ResourceActionUpdate)}},
				Check:            h.checkSpec("FleetApp", "hello", spec(3)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(appAddr, ssdValue("values"), knownvalue.StringExact(`{"image":{"tag":"1.2"},"replicaCount":3}`)),
				},
			},
			{ResourceName: appAddr, ImportState: true, ImportStateVerify: true, ImportStateId: ws + "/hello"},
			{
				PreConfig: func() {
					h.setStatus("FleetApp", "hello", map[string]any{"phase": "Deployed", "revision": 2, "digest": testDigest, "registry": "registry.eu.example.com",
						"conditions": []any{readyStatus("True", "Deployed", "")}})
				},
				Config:           three,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(appAddr, ssdValue("phase"), knownvalue.StringExact("Deployed")),
					statecheck.ExpectKnownValue(appAddr, ssdValue("revision"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(appAddr, ssdValue("digest"), knownvalue.StringExact(testDigest)),
					statecheck.ExpectKnownValue(appAddr, ssdValue("registry"), knownvalue.StringExact("registry.eu.example.com")),
				},
			},
			{
				// Drift: kubectl scales the values and drops the Secret reference; the plan shows both, apply restores.
				PreConfig: func() { h.patch("FleetApp", "hello", `{"spec":{"values":{"replicaCount":5},"valuesSecretRef":null}}`) },
				Config:    three,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(appAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(appAddr, ssdValue("values_secret", "key"), knownvalue.StringExact("values.yaml")),
				}},
				Check: h.checkSpec("FleetApp", "hello", spec(3)),
			},
			{
				// The namespace is immutable on the hub: a new one replaces the app.
				Config: appConfig(ws, cluster, `  namespace = "web2"
  release_name = "hi"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(appAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: h.checkSpec("FleetApp", "hello", map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web2", "releaseName": "hi"}),
			},
		},
	})
}

// answerApp plays the hub's apps reconciler once: when the app's status is older than its spec or
// its chart's spec, it reports status for both current generations, a second later (so that an
// apply that does not wait returns before it). It runs until it has answered or the test ends.
func answerApp(t *testing.T, h *siteHub, name string, status map[string]any) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			u, err := h.ri("FleetApp").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // not created yet: poll again
			}
			chartName, _, _ := unstructured.NestedString(u.Object, "spec", "chart")
			chart, err := h.ri("FleetChart").Get(ctx, chartName, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // not created yet: poll again
			}
			observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			chartObserved, _, _ := unstructured.NestedInt64(u.Object, "status", "chartGeneration")
			if observed >= u.GetGeneration() && chartObserved >= chart.GetGeneration() {
				return false, nil
			}
			time.Sleep(time.Second)
			s := jsonCopy(status)
			s["observedGeneration"], s["chartGeneration"] = u.GetGeneration(), chart.GetGeneration()
			u.Object["status"] = s
			_, err = h.ri("FleetApp").UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "test-controller"})
			return err == nil, nil
		})
	}()
}

// TestAccApp_waitFor: with wait_for = "deployed", apply returns once the hub reports the release
// Deployed for the applied spec, with its status in state; a release reported Failed fails the
// apply with the app's message.
func TestAccApp_waitFor(t *testing.T) {
	h, ws, cluster := appHub(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					answerApp(t, h, "hello", map[string]any{"phase": "Deployed", "revision": 1, "message": "installed"})
				},
				Config: appConfig(ws, cluster, `  namespace = "web"
  wait_for = "deployed"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(appAddr, ssdValue("phase"), knownvalue.StringExact("Deployed")),
					statecheck.ExpectKnownValue(appAddr, ssdValue("revision"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(appAddr, ssdValue("message"), knownvalue.StringExact("installed")),
				},
			},
			{
				PreConfig: func() {
					answerApp(t, h, "hello", map[string]any{"phase": "Failed", "revision": 1, "message": "helm upgrade: values don't meet the chart's schema"})
				},
				Config: appConfig(ws, cluster, `  namespace = "web"
  values = jsonencode({ replicaCount = "many" })
  wait_for = "deployed"`),
				ExpectError: expectError("FleetApp failed", "FleetApp "+ws+"/hello is Failed on cluster", "helm upgrade: values don't meet the chart's schema"),
			},
		},
	})
}

// TestAccChart_waitFor: a new chart version changes the FleetChart, not the app, so that no
// fleet_app is applied for it; with wait_for = "deployed" on the chart, apply waits until the
// chart's apps report Deployed for the chart's new generation, and a version whose upgrade fails
// fails the apply with the app's message.
func TestAccChart_waitFor(t *testing.T) {
	h, ws, cluster := appHub(t)
	config := func(version string) string {
		return fmt.Sprintf(`
resource "fleet_chart" "c" {
  name       = "web-chart"
  workspace  = %[1]q
  repository = "charts/web"
  version    = %[3]q
  wait_for   = "deployed"
}

resource "fleet_app" "web" {
  name      = "web"
  workspace = %[1]q
  chart     = fleet_chart.c.name
  cluster   = %[2]q
  namespace = "web"
  wait_for  = "deployed"
}
`, ws, cluster, version)
	}
	// The app's status, on the hub, describes the chart's current generation when apply returns.
	answered := func(revision int64) resource.TestCheckFunc {
		return func(*terraform.State) error {
			app, err := h.get("FleetApp", "web")
			if err != nil {
				return err
			}
			chart, err := h.get("FleetChart", "web-chart")
			if err != nil {
				return err
			}
			got, _, _ := unstructured.NestedInt64(app.Object, "status", "chartGeneration")
			rev, _, _ := unstructured.NestedInt64(app.Object, "status", "revision")
			if got != chart.GetGeneration() || rev != revision {
				return fmt.Errorf("apply returned with the app's status of chart generation %d, revision %d; the chart is at generation %d, want revision %d",
					got, rev, chart.GetGeneration(), revision)
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					answerApp(t, h, "web", map[string]any{"phase": "Deployed", "revision": 1, "digest": testDigest, "message": "installed"})
				},
				Config: config("0.1.0"),
				Check:  answered(1),
			},
			{
				// Only the chart changes: the app is not applied, the chart's apply waits for it.
				PreConfig: func() {
					answerApp(t, h, "web", map[string]any{"phase": "Deployed", "revision": 2, "digest": testDigest, "message": "upgraded"})
				},
				Config: config("0.2.0"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("fleet_chart.c", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("fleet_app.web", plancheck.ResourceActionNoop),
				}},
				Check: answered(2),
			},
			{
				PreConfig: func() {
					answerApp(t, h, "web", map[string]any{"phase": "Failed", "revision": 2, "message": "the release failed: helm upgrade: chart web-0.3.0: template: web/templates/deploy.yaml:3: bad"})
				},
				Config:      config("0.3.0"),
				ExpectError: expectError("FleetApp failed", "FleetApp "+ws+"/web is Failed on cluster", "helm upgrade: chart web-0.3.0"),
			},
		},
	})
}

func appRouteConfig(ws, body string) string {
	return fmt.Sprintf(`
resource "fleet_app_route" "r" {
  name      = "r"
  workspace = %q
  service   = { name = "hello", port = 80 }
%s
}
`, ws, body)
}

// TestAccAppRoute_lifecycle: invalid routes refused, then create (mode and path defaults),
// update to hub mode with TLS, import, the hub's status read back, drift corrected, destroy.
func TestAccAppRoute_lifecycle(t *testing.T) {
	h, ws, cluster := appHub(t)
	h.create("FleetApp", "hello", false, map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web"})
	hubMode := appRouteConfig(ws, `  app  = "hello"
  mode = "hub"
  host = "hello.apps.example.com"
  path = "/api"
  tls  = { acme_issuer = "letsencrypt" }`)
	hubSpec := map[string]any{"app": "hello", "mode": "hub", "host": "hello.apps.example.com", "path": "/api",
		"service": map[string]any{"name": "hello", "port": 80}, "tls": map[string]any{"acmeIssuer": "letsencrypt"}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{Config: appRouteConfig(ws, `  app = "hello"`), ExpectError: expectError("Route without a host", `mode is "site": set host`)},
			{Config: appRouteConfig(ws, `  app = "hello"
  host = "hello.example.com"
  tls = { secret_name = "a", acme_issuer = "b" }`), ExpectError: expectError("Invalid Attribute Combination")},
			{
				Config: appRouteConfig(ws, `  app  = "hello"
  host = "hello.example.com"`),
				Check: h.checkSpec("FleetAppRoute", "r", map[string]any{"app": "hello", "mode": "site", "host": "hello.example.com", "path": "/",
					"service": map[string]any{"name": "hello", "port": 80}}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(routeAddr, ssdValue("mode"), knownvalue.StringExact("site")),
					statecheck.ExpectKnownValue(routeAddr, ssdValue("path"), knownvalue.StringExact("/")),
					statecheck.ExpectKnownValue(routeAddr, ssdValue("ready"), knownvalue.Null()), // no controller on this hub
				},
			},
			{
				Config:           hubMode,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(routeAddr, plancheck.ResourceActionUpdate)}},
				Check:            h.checkSpec("FleetAppRoute", "r", hubSpec),
			},
			{ResourceName: routeAddr, ImportState: true, ImportStateVerify: true, ImportStateId: ws + "/r"},
			{
				PreConfig: func() {
					h.setStatus("FleetAppRoute", "r", map[string]any{"url": "https://hello.apps.example.com/api", "cluster": cluster,
						"conditions": []any{readyStatus("True", "Published", "served by the hub gateway")}})
				},
				Config:           hubMode,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(routeAddr, ssdValue("url"), knownvalue.StringExact("https://hello.apps.example.com/api")),
					statecheck.ExpectKnownValue(routeAddr, ssdValue("ready"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(routeAddr, ssdValue("reason"), knownvalue.StringExact("Published")),
				},
			},
			{
				// Drift: kubectl changes the host and drops TLS; the plan shows it, apply restores.
				PreConfig: func() { h.patch("FleetAppRoute", "r", `{"spec":{"host":"other.example.com","tls":null}}`) },
				Config:    hubMode,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(routeAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(routeAddr, ssdValue("host"), knownvalue.StringExact("hello.apps.example.com")),
				}},
				Check: h.checkSpec("FleetAppRoute", "r", hubSpec),
			},
		},
	})
}

// TestAccAppRoute_planErrors: what no resource of the plan can change fails the plan, naming
// the objects, and nothing is written to the hub: hub mode on a site without a hub gateway, site
// mode for a cluster bound to no ingress entry, and a host and path another route claims, every
// object involved unmanaged by Terraform.
func TestAccAppRoute_planErrors(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	a, b := f.Usable("a"), f.Usable("b")
	h := newSiteHub(t, ws)
	h.create("FleetSite", "kubectl-site", false, map[string]any{"edge": map[string]any{"ingress": []any{
		map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.example.com"}}}})
	h.create("FleetClusterJoin", "ja", false, map[string]any{"cluster": a, "site": "kubectl-site", "edge": map[string]any{"ingressId": "proxy"}})
	h.create("FleetClusterJoin", "jb", false, map[string]any{"cluster": b, "site": "kubectl-site"})
	h.create("FleetApp", "app-a", false, map[string]any{"chart": "hello", "cluster": a, "namespace": "web"})
	h.create("FleetApp", "app-b", false, map[string]any{"chart": "hello", "cluster": b, "namespace": "web"})
	taken := "taken." + ws + ".example.com" // hosts are hub-wide: one of this workspace's own
	h.create("FleetAppRoute", "taken", false, map[string]any{"app": "app-b", "mode": "hub", "host": taken, "service": map[string]any{"name": "x", "port": 80}})
	route := func(app, mode, host string) string {
		return appRouteConfig(ws, fmt.Sprintf("  app = %q\n  mode = %q\n  host = %q", app, mode, host))
	}
	onlyTaken := func() {
		l, err := h.ri("FleetAppRoute").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range l.Items {
			names = append(names, u.GetName())
		}
		if strings.Join(names, ",") != "taken" {
			t.Errorf("FleetAppRoutes on the hub after the failed plans: %v, want only taken (nothing written)", names)
		}
	}
	chainA := "app app-a runs on cluster " + a + ", which FleetClusterJoin " + ws + "/ja joins to FleetSite " + ws + "/kubectl-site"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config:      route("app-a", "hub", "a.example.com"),
				ExpectError: expectError("Site has no hub gateway", chainA, "needs the site's hub_gateway enabled", "Of the app, no Terraform configuration manages it; of its join, no Terraform configuration manages it; of the site, no Terraform configuration manages it", "Nothing was written to the hub"),
			},
			{
				PreConfig:   onlyTaken,
				Config:      route("app-b", "site", "b.example.com"),
				ExpectError: expectError("Cluster not bound to an ingress entry", "FleetClusterJoin "+ws+"/jb joins", "the join binds it to none", "Nothing was written to the hub"),
			},
			{
				PreConfig:   onlyTaken,
				Config:      route("app-a", "site", taken),
				ExpectError: expectError("Host and path already routed", "publishes "+taken+"/", "is held by FleetAppRoute "+ws+"/taken", "Of FleetAppRoute "+ws+"/taken, no Terraform configuration manages it", "Nothing was written to the hub"),
			},
			{
				// The same host under another path is free, and site mode through the join's entry is served: written.
				PreConfig: onlyTaken,
				Config:    appRouteConfig(ws, "  app = \"app-a\"\n  host = \""+taken+"\"\n  path = \"/a\""),
				Check: h.checkSpec("FleetAppRoute", "r", map[string]any{"app": "app-a", "mode": "site", "host": taken, "path": "/a",
					"service": map[string]any{"name": "hello", "port": 80}}),
			},
		},
	})
}

// TestAccAppPlan_listsEachKindOnce: planning many apps, and many routes, reads each kind their
// checks need once per provider instance, through the preload, and sends nothing but LISTs.
func TestAccAppPlan_listsEachKindOnce(t *testing.T) {
	h, ws, cluster := appHub(t)
	h.create("FleetApp", "hello", false, map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web"})
	const n = 50
	config := func(kubeconfig string) map[string]tftypes.Value {
		return map[string]tftypes.Value{"config_path": tftypes.NewValue(tftypes.String, kubeconfig)}
	}
	appKubeconfig, appCounter := countingKubeconfig(t)
	apps := newPlanDriverFor[appModel](t, "fleet_app", config(appKubeconfig))
	routeKubeconfig, routeCounter := countingKubeconfig(t)
	routes := newPlanDriverFor[appRouteModel](t, "fleet_app_route", config(routeKubeconfig))
	for i := range n {
		a := appModel{Chart: types.StringValue("hello"), Cluster: types.StringValue(cluster), ReleaseName: types.StringNull(), Namespace: types.StringValue("web"),
			Values: valuesNull(), ValuesSecret: types.ObjectNull(siteSecretTypes), WaitFor: types.StringNull(), Phase: types.StringUnknown(), Revision: types.Int64Unknown(),
			Digest: types.StringUnknown(), Registry: types.StringUnknown(), Reason: types.StringUnknown(), Message: types.StringUnknown(),
			RepairDrift: types.BoolNull(), Repairs: types.Int64Unknown(), Drift: types.ObjectUnknown(driftTypes)}
		a.Name, a.Workspace, a.ID = types.StringValue(fmt.Sprintf("app-%03d", i)), types.StringValue(ws), types.StringUnknown()
		if diags := apps.plan(&a, nil); len(diags) > 0 {
			t.Fatalf("plan of app %d: want no diagnostics, got\n%s", i, describeDiags(diags))
		}
		r := appRouteModel{App: types.StringValue("hello"), Mode: types.StringValue("hub"), Host: types.StringValue(fmt.Sprintf("r%03d.apps.example.com", i)), Path: types.StringValue("/"),
			Service: types.ObjectValueMust(routeServiceTypes, map[string]attr.Value{"name": types.StringValue("hello"), "port": types.Int64Value(80)}), TLS: types.ObjectNull(routeTLSTypes),
			URL: types.StringUnknown(), Ready: types.BoolUnknown(), Reason: types.StringUnknown(), Message: types.StringUnknown()}
		r.Name, r.Workspace, r.ID = types.StringValue(fmt.Sprintf("route-%03d", i)), types.StringValue(ws), types.StringUnknown()
		if diags := routes.plan(&r, nil); len(diags) > 0 {
			t.Fatalf("plan of route %d: want no diagnostics, got\n%s", i, describeDiags(diags))
		}
	}
	// The workspace's inventory (routes, secrets, sets) is preloaded too; the cluster-binding
	// check reads its bindings and sets from it, once for every plan. FleetAppRoutes are listed
	// in the workspace (the engine's check of a new name) and hub-wide (hosts).
	want := map[string]int{"fleetcharts": 1, "fleetapps": 1, "fleetapproutes": 2, "fleetclusterjoins": 1, "fleetsites": 1, "managedclusters": 1,
		"managedclustersets": 1, "managedclustersetbindings": 1}
	for name, counter := range map[string]*listCounter{"app": appCounter, "route": routeCounter} {
		counter.mu.Lock()
		for kind, count := range want {
			if counter.lists[kind] != count {
				t.Errorf("LIST requests of %s over %d %s plans = %d, want %d (all: %v)", kind, n, name, counter.lists[kind], count, counter.lists)
			}
		}
		if len(counter.other) > 0 {
			t.Errorf("requests other than LISTs during %s planning: %v", name, counter.other)
		}
		counter.mu.Unlock()
	}
}

// TestAccAppRoutePlan_unknownSkips: a route whose app and host are known only at apply is not
// checked (no diagnostic), where the same route with them known fails on both checks.
func TestAccAppRoutePlan_unknownSkips(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	a := newHubFixtures(t, ws).Usable("a")
	h := newSiteHub(t, ws)
	h.create("FleetSite", "kubectl-site", false, map[string]any{"edge": map[string]any{"ingress": []any{
		map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.example.com"}}}})
	h.create("FleetClusterJoin", "ja", false, map[string]any{"cluster": a, "site": "kubectl-site", "edge": map[string]any{"ingressId": "proxy"}})
	h.create("FleetApp", "app-a", false, map[string]any{"chart": "hello", "cluster": a, "namespace": "web"})
	taken := "taken." + ws + ".example.com"
	h.create("FleetAppRoute", "taken", false, map[string]any{"app": "app-a", "mode": "hub", "host": taken, "service": map[string]any{"name": "x", "port": 80}})
	d := newPlanDriverFor[appRouteModel](t, "fleet_app_route", nil)
	route := func(name string, app, host types.String) *appRouteModel {
		r := appRouteModel{App: app, Mode: types.StringValue("hub"), Host: host, Path: types.StringValue("/"),
			Service: types.ObjectValueMust(routeServiceTypes, map[string]attr.Value{"name": types.StringValue("hello"), "port": types.Int64Value(80)}), TLS: types.ObjectNull(routeTLSTypes),
			URL: types.StringUnknown(), Ready: types.BoolUnknown(), Reason: types.StringUnknown(), Message: types.StringUnknown()}
		r.Name, r.Workspace, r.ID = types.StringValue(name), types.StringValue(ws), types.StringUnknown()
		return &r
	}
	if diags := d.plan(route("unknown", types.StringUnknown(), types.StringUnknown()), nil); len(diags) > 0 {
		t.Errorf("route with unknown app and host: want no diagnostics, got\n%s", describeDiags(diags))
	}
	diags := d.plan(route("known", types.StringValue("app-a"), types.StringValue(taken)), nil)
	var summaries []string
	for _, dg := range diags {
		summaries = append(summaries, dg.Summary())
	}
	if diags.ErrorsCount() != 2 || !slices.Contains(summaries, "Site has no hub gateway") || !slices.Contains(summaries, "Host and path already routed") {
		t.Errorf("route with app-a and the taken host: want the gateway and host errors, got\n%s", describeDiags(diags))
	}
}

// TestAccAppRoute_gatewayRules: the hub gateway's rules at plan time, each an error naming the
// attribute and nothing written: a path with issue 19's rule injection, a dot segment, a
// wildcard host in hub mode, a hub-mode host outside the (unmanaged) site's gateway domain, and
// a host another workspace's unmanaged route holds under another path. A host another
// workspace's route holds that Terraform manages is a warning naming it (this plan may free it),
// and a free host under the domain is written.
func TestAccAppRoute_gatewayRules(t *testing.T) {
	kube := testHub(t)
	ws, other := testWorkspace(t, kube), testWorkspace(t, kube)
	a := newHubFixtures(t, ws).Usable("a")
	h := newSiteHub(t, ws)
	h.create("FleetSite", "gw-site", false, map[string]any{"hubGateway": map[string]any{"enabled": true, "domain": "apps.example.com"}})
	h.create("FleetClusterJoin", "ja", false, map[string]any{"cluster": a, "site": "gw-site"})
	h.create("FleetApp", "app-a", false, map[string]any{"chart": "hello", "cluster": a, "namespace": "web"})
	o := newSiteHub(t, other)
	svc := map[string]any{"name": "x", "port": 80}
	o.create("FleetAppRoute", "holder", false, map[string]any{"app": "x", "mode": "site", "host": "held.apps.example.com", "service": svc})
	o.create("FleetAppRoute", "managed", true, map[string]any{"app": "x", "mode": "site", "host": "soft.apps.example.com", "service": svc})
	route := func(mode, host, urlPath string) string {
		return appRouteConfig(ws, fmt.Sprintf("  app = \"app-a\"\n  mode = %q\n  host = %q\n  path = %q", mode, host, urlPath))
	}
	nothingWritten := func() {
		l, err := h.ri("FleetAppRoute").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 0 {
			t.Errorf("%d FleetAppRoutes in %s after the failed plans, want none (nothing written)", len(l.Items), ws)
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config:      route("hub", "shop.apps.example.com", "/x`) || Host(`held.apps.example.com`) && PathPrefix(`/"),
				ExpectError: expectError("Invalid route path", "with fleet_app_route.r", "path = ", "is not allowed", "Write path as / or /-separated segments"),
			},
			{
				PreConfig:   nothingWritten,
				Config:      route("hub", "shop.apps.example.com", "/a/../b"),
				ExpectError: expectError("Invalid route path", `has a ".." segment`),
			},
			{
				PreConfig:   nothingWritten,
				Config:      route("hub", "*.apps.example.com", "/"),
				ExpectError: expectError("Wildcard host in hub mode", "never matches"),
			},
			{
				PreConfig: nothingWritten,
				Config:    route("hub", "shop.example.com", "/"),
				ExpectError: expectError("Host outside the hub gateway's domain", `domain "apps.example.com"`, `host "shop.example.com" is neither`,
					"Of the app, no Terraform configuration manages it; of its join, no Terraform configuration manages it; of the site, no Terraform configuration manages it", "Nothing was written to the hub"),
			},
			{
				PreConfig: nothingWritten,
				Config:    route("site", "held.apps.example.com", "/other"),
				ExpectError: expectError("Host belongs to another workspace", "belongs to workspace "+other, "FleetAppRoute "+other+"/holder",
					"Of FleetAppRoute "+other+"/holder, no Terraform configuration manages it", "Nothing was written to the hub"),
			},
			{
				PreConfig: nothingWritten,
				Config:    route("hub", "shop.apps.example.com", "/shop/"),
				Check: h.checkSpec("FleetAppRoute", "r", map[string]any{"app": "app-a", "mode": "hub", "host": "shop.apps.example.com", "path": "/shop/",
					"service": map[string]any{"name": "hello", "port": 80}}),
			},
		},
	})

	d := newPlanDriverFor[appRouteModel](t, "fleet_app_route", nil)
	r := appRouteModel{App: types.StringValue("app-a"), Mode: types.StringValue("hub"), Host: types.StringValue("soft.apps.example.com"), Path: types.StringValue("/"),
		Service: types.ObjectValueMust(routeServiceTypes, map[string]attr.Value{"name": types.StringValue("hello"), "port": types.Int64Value(80)}), TLS: types.ObjectNull(routeTLSTypes),
		URL: types.StringUnknown(), Ready: types.BoolUnknown(), Reason: types.StringUnknown(), Message: types.StringUnknown()}
	r.Name, r.Workspace, r.ID = types.StringValue("soft"), types.StringValue(ws), types.StringUnknown()
	diags := d.plan(&r, nil)
	if diags.ErrorsCount() != 0 || diags.WarningsCount() != 1 || diags[0].Summary() != "Host belongs to another workspace" ||
		!strings.Contains(diags[0].Detail(), "FleetAppRoute "+other+"/managed is managed by Terraform") {
		t.Errorf("route on a host a managed route of another workspace holds: want one warning naming it, got\n%s", describeDiags(diags))
	}
}

// TestAccApp_adopt: adopt defaults to false and is then absent from the FleetApp; true writes
// spec.adopt and reads back on import; with wait_for, a release the hub reports OwnedElsewhere
// fails the apply with the app's message.
func TestAccApp_adopt(t *testing.T) {
	h, ws, cluster := appHub(t)
	base := map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web"}
	adopting := map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web", "adopt": true}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					answerApp(t, h, "hello", map[string]any{"phase": "Deployed", "revision": 1, "message": "installed"})
				},
				Config: appConfig(ws, cluster, `  namespace = "web"
  wait_for = "deployed"`),
				Check: h.checkSpec("FleetApp", "hello", base),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(appAddr, ssdValue("adopt"), knownvalue.Bool(false)),
				},
			},
			{
				PreConfig: func() {
					answerApp(t, h, "hello", map[string]any{"phase": "Deployed", "revision": 2, "message": "adopted"})
				},
				Config: appConfig(ws, cluster, `  namespace = "web"
  adopt = true
  wait_for = "deployed"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(appAddr, plancheck.ResourceActionUpdate)}},
				Check:            h.checkSpec("FleetApp", "hello", adopting),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(appAddr, ssdValue("adopt"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(appAddr, ssdValue("phase"), knownvalue.StringExact("Deployed")),
				},
			},
			{ResourceName: appAddr, ImportState: true, ImportStateVerify: true, ImportStateId: ws + "/hello", ImportStateVerifyIgnore: []string{"wait_for"}},
			{
				PreConfig: func() {
					answerApp(t, h, "hello", map[string]any{"phase": "OwnedElsewhere", "message": "the release is left untouched: the Helm release hello in namespace web (revision 1) is not this app's"})
				},
				Config: appConfig(ws, cluster, `  namespace = "web"
  wait_for = "deployed"`),
				ExpectError: expectError("FleetApp failed", "FleetApp "+ws+"/hello is OwnedElsewhere on cluster", "is not this app's"),
			},
		},
	})
}
