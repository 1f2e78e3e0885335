package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
)

// matrixRow is one resource of TestAccMatrix. Every workflow of the matrix runs on every row; a
// new resource joins the matrix by adding its row to matrixRows.
//
// The HCL strings may hold {{ws}} (the row's workspace), {{n}} (the name suffix: "" at first,
// "2" after the rename in place), {{cluster}} (the cluster hub returned), {{addr}} (the
// resource's address) and {{ca}} (a quoted PEM bundle).
type matrixRow struct {
	typ  string   // resource type
	kind hub.Kind // the hub object it manages, named "m{{n}}"
	// owned is the object's top-level field the resource owns whole: "spec", or "data" for a
	// Secret (compared decoded).
	owned string
	// hub creates, as kubectl would, what the configuration names without managing it (clusters
	// of a bound set, a joined site), and returns the cluster for {{cluster}}; nil for nothing.
	hub func(t *testing.T, f *hubFixtures) string
	// deps are the resources the row's resource refers to; names ending in {{n}} make the rename
	// in place rename them along, in the same plan.
	deps string
	// create is the resource's body besides name and workspace; update changes every attribute
	// that can change without replacing the resource.
	create, update string
	// want is the owned field on the hub after create and after update, as JSON.
	want [2]string
	// drift is a merge patch of managed fields, as `kubectl edit` would write it; drifted are the
	// attributes (flatmap keys) that a refresh then reads into state.
	drift   string
	drifted map[string]string
	// controller, when set, plays the hub's reconciler for the row's objects: what wait_for
	// waits for.
	controller func(t *testing.T, f *hubFixtures)
	// unread are the attributes the hub does not hold (versions of write-only values, what
	// apply waits for): import
	// leaves them null, so an import plans to set them, and nothing else.
	unread []string
	// spelled are the attributes the configuration may spell otherwise than the hub, equal in
	// meaning (values as YAML): import reads the hub's spelling, so ImportStateVerify, which
	// compares strings, skips them, and the import blocks' empty plans show they are equal.
	spelled []string
	// data, when set, are data sources that read what the resource wrote; dataWant are their
	// attributes after create and after update, keyed data.<type>.<name>.<flatmap key>.
	data     string
	dataWant [2]map[string]string
}

// matrixForeign is a field another manager owns (`kubectl annotate` and `kubectl label`): every
// apply of every row leaves it alone.
const matrixForeign = `{"metadata":{"annotations":{"ops.example.com/ticket":"OPS-1"},"labels":{"ops.example.com/team":"storage"}}}`

// joinedCluster is a cluster of a bound set, joined (Ready) to site "berlin", whose hub gateway
// serves apps.example.com, all written as kubectl would: what an app and its route need for a
// plan without warnings.
func joinedCluster(t *testing.T, f *hubFixtures) string {
	cluster := f.Usable("a")
	h := newSiteHub(t, f.ws)
	h.create("FleetSite", "berlin", false, map[string]any{
		"edge":       map[string]any{"ingress": []any{map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.example.com"}}},
		"hubGateway": map[string]any{"enabled": true, "domain": "apps.example.com"}})
	h.create("FleetClusterJoin", "ja", false, map[string]any{"cluster": cluster, "site": "berlin", "edge": map[string]any{"ingressId": "proxy"}})
	h.setStatus("FleetClusterJoin", "ja", map[string]any{"conditions": []any{readyStatus("True", "Ready", "")}})
	return cluster
}

func usableCluster(_ *testing.T, f *hubFixtures) string { return f.Usable("a") }

const matrixCharts = `
resource "fleet_chart" "c" {
  name       = "c{{n}}"
  workspace  = "{{ws}}"
  repository = "charts/hello"
  version    = "0.1.0"
}
resource "fleet_chart" "d" {
  name       = "d{{n}}"
  workspace  = "{{ws}}"
  repository = "charts/hello"
  version    = "0.2.0"
}
`

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

var matrixRows = []matrixRow{
	{
		typ: "fleet_oci_registry", kind: secretKind, owned: "data",
		create: `
  role           = "mirror"
  reference      = "m.example.com/fleet"
  username       = "push"
  agent_username = "pull"`,
		update: `
  role                        = "source"
  reference                   = "m2.example.com:5000/fleet"
  username                    = "push2"
  password_wo                 = "` + testPushPassword + `"
  password_wo_version         = 1
  agent_username              = "pull2"
  agent_password_wo           = "` + testAgentPassword + `"
  agent_password_wo_version   = 1
  agent_uses_push_credentials = true
  insecure_skip_tls           = true
  basic_http                  = true
  ca_certs                    = {{ca}}`,
		want: [2]string{
			`{"reference":"m.example.com/fleet","username":"push","agentUsername":"pull","basicHTTP":"false","insecureSkipTLS":"false"}`,
			`{"reference":"m2.example.com:5000/fleet","username":"push2","password":"` + testPushPassword + `","agentUsername":"pull2","agentPassword":"` + testAgentPassword + `",
			  "agentUsesPushCredentials":"true","basicHTTP":"true","insecureSkipTLS":"true","cacerts":{{ca}}}`,
		},
		drift:   `{"data":{"reference":"` + b64("drift.example.com/fleet") + `","username":"` + b64("intruder") + `"}}`,
		drifted: map[string]string{"reference": "drift.example.com/fleet", "username": "intruder"},
		unread:  []string{"password_wo_version", "agent_password_wo_version"},
	},
	{
		typ: "fleet_oci_route", kind: inventory.RouteKind, owned: "spec", hub: usableCluster,
		deps: `
resource "fleet_oci_registry" "src" {
  name      = "src{{n}}"
  workspace = "{{ws}}"
  role      = "source"
  reference = "src.example.com/fleet"
}
resource "fleet_oci_registry" "mirror" {
  name      = "mirror{{n}}"
  workspace = "{{ws}}"
  role      = "mirror"
  reference = "mirror.example.com/fleet"
}`,
		create: `
  priority          = 10
  cluster_names     = ["{{cluster}}", "zone-b"]
  cluster_groups    = ["edge"]
  cluster_selectors = [{ match_labels = { region = "eu" }, match_expressions = [{ key = "tier", operator = "In", values = ["gold"] }] }]
  registries        = [fleet_oci_registry.src.name]`,
		// A default route has no cluster criteria: the update drops them.
		update: `
  priority         = 20
  default          = true
  registries       = [fleet_oci_registry.mirror.name, fleet_oci_registry.src.name]
  replication_wait = "10m"`,
		want: [2]string{
			`{"priority":10,"default":false,"clusterNames":["{{cluster}}","zone-b"],"clusterGroups":["edge"],
			  "clusterSelectors":[{"matchLabels":{"region":"eu"},"matchExpressions":[{"key":"tier","operator":"In","values":["gold"]}]}],
			  "registries":["src{{n}}"],"replicationWait":"0s"}`,
			`{"priority":20,"default":true,"clusterNames":[],"clusterGroups":[],"clusterSelectors":[],"registries":["mirror{{n}}","src{{n}}"],"replicationWait":"10m"}`,
		},
		drift:   `{"spec":{"priority":30,"replicationWait":"1m"}}`,
		drifted: map[string]string{"priority": "30", "replication_wait": "1m"},
		data: `
data "fleet_oci_chain" "m" {
  workspace  = "{{ws}}"
  cluster    = "{{cluster}}"
  depends_on = [{{addr}}]
}
data "fleet_oci_routing" "m" {
  workspace  = "{{ws}}"
  depends_on = [{{addr}}]
}`,
		dataWant: [2]map[string]string{
			{"data.fleet_oci_chain.m.route": "m", "data.fleet_oci_chain.m.matched_by": "cluster_names", "data.fleet_oci_chain.m.registries.#": "1", "data.fleet_oci_chain.m.registries.0.name": "src",
				"data.fleet_oci_chain.m.replication_wait": "0s", "data.fleet_oci_routing.m.routes.#": "1", "data.fleet_oci_routing.m.routes.0.priority": "10"},
			{"data.fleet_oci_chain.m.route": "m", "data.fleet_oci_chain.m.matched_by": "default", "data.fleet_oci_chain.m.registries.#": "2", "data.fleet_oci_chain.m.registries.0.name": "mirror",
				"data.fleet_oci_chain.m.registries.1.name": "src", "data.fleet_oci_chain.m.replication_wait": "10m",
				"data.fleet_oci_routing.m.routes.#": "1", "data.fleet_oci_routing.m.routes.0.priority": "20"},
		},
	},
	{
		typ: "fleet_site", kind: fleetSiteKind, owned: "spec",
		create: `
  display_name = "Berlin"
  ingress      = [{ id = "wan", method = "port_forward", address = "203.0.113.10", ports = { http = 30080 } }]`,
		update: `
  display_name = "Berlin flagship"
  ingress      = [{ id = "proxy", method = "reverse_proxy", address = "edge.example.com", ports = { https = 30443 } }]
  hub_gateway  = { enabled = true, domain = "berlin.apps.example.com" }
  jumphost     = { host = "bastion.example.com", port = 2222, user = "ops", credentials_secret_ref = { name = "bastion", key = "ssh-privatekey" } }`,
		want: [2]string{
			`{"displayName":"Berlin","edge":{"ingress":[{"id":"wan","method":"port_forward","address":"203.0.113.10","ports":{"http":30080}}]}}`,
			`{"displayName":"Berlin flagship","edge":{"ingress":[{"id":"proxy","method":"reverse_proxy","address":"edge.example.com","ports":{"https":30443}}]},
			  "hubGateway":{"enabled":true,"domain":"berlin.apps.example.com"},
			  "jumphost":{"host":"bastion.example.com","port":2222,"user":"ops","credentialsSecretRef":{"name":"bastion","key":"ssh-privatekey"}}}`,
		},
		drift:   `{"spec":{"displayName":"kubectl was here"}}`,
		drifted: map[string]string{"display_name": "kubectl was here"},
	},
	{
		typ: "fleet_cluster_join", kind: fleetClusterJoinKind, owned: "spec", hub: usableCluster,
		deps: `
resource "fleet_site" "s" {
  name      = "s{{n}}"
  workspace = "{{ws}}"
  ingress   = [{ id = "wan", method = "port_forward", address = "203.0.113.10", ports = { http = 30080 } }]
}
resource "fleet_site" "t" {
  name      = "t{{n}}"
  workspace = "{{ws}}"
  ingress   = [{ id = "proxy", method = "reverse_proxy", address = "edge.example.com" }]
}`,
		create: `
  cluster    = "{{cluster}}"
  site       = fleet_site.s.name
  ingress_id = "wan"`,
		update: `
  cluster      = "{{cluster}}"
  site         = fleet_site.t.name
  ingress_id   = "proxy"
  capabilities = ["storage", "gpu"]`,
		want: [2]string{
			`{"cluster":"{{cluster}}","site":"s{{n}}","edge":{"ingressId":"wan"}}`,
			`{"cluster":"{{cluster}}","site":"t{{n}}","edge":{"ingressId":"proxy"},"capabilities":["gpu","storage"]}`,
		},
		drift:   `{"spec":{"capabilities":["gpu"]}}`,
		drifted: map[string]string{"capabilities.#": "1", "capabilities.0": "gpu"},
	},
	{
		typ: "fleet_chart", kind: fleetChartKind, owned: "spec",
		create: `
  repository = "charts/hello"
  version    = "0.1.0"`,
		update: `
  repository = "charts/hello-web"
  digest     = "` + testDigest + `"`,
		want: [2]string{
			`{"repository":"charts/hello","version":"0.1.0"}`,
			`{"repository":"charts/hello-web","digest":"` + testDigest + `"}`,
		},
		drift:   `{"spec":{"repository":"charts/other"}}`,
		drifted: map[string]string{"repository": "charts/other"},
	},
	{
		typ: "fleet_app", kind: fleetAppKind, owned: "spec", hub: joinedCluster, deps: matrixCharts,
		create: `
  chart     = fleet_chart.c.name
  cluster   = "{{cluster}}"
  namespace = "web"
  values    = jsonencode({ replicaCount = 1 })`,
		update: `
  chart         = fleet_chart.d.name
  cluster       = "{{cluster}}"
  namespace     = "web"
  values        = yamlencode({ replicaCount = 2, image = { tag = "1.2" } })
  values_secret = { name = "web-secrets", key = "values.yaml" }
  adopt         = true
  wait_for      = "deployed"
  force_destroy = true`,
		want: [2]string{
			`{"chart":"c{{n}}","cluster":"{{cluster}}","namespace":"web","values":{"replicaCount":1}}`,
			`{"chart":"d{{n}}","cluster":"{{cluster}}","namespace":"web","values":{"replicaCount":2,"image":{"tag":"1.2"}},
			  "valuesSecretRef":{"name":"web-secrets","key":"values.yaml"},"adopt":true}`,
		},
		drift:   `{"spec":{"values":{"replicaCount":5},"adopt":null}}`,
		drifted: map[string]string{"adopt": "false"},
		unread:  []string{"wait_for", "force_destroy"},
		spelled: []string{"values"},
		controller: func(t *testing.T, f *hubFixtures) {
			for _, name := range []string{"m", "m2"} {
				answerEveryGeneration(t, f, fleetAppKind, name, map[string]any{"phase": "Deployed", "revision": 1, "message": "installed",
					"conditions": []any{readyStatus("True", "Deployed", "")}})
			}
		},
	},
	{
		typ: "fleet_app_route", kind: fleetAppRouteKind, owned: "spec", hub: joinedCluster,
		deps: matrixCharts + `
resource "fleet_app" "a" {
  name      = "a{{n}}"
  workspace = "{{ws}}"
  chart     = fleet_chart.c.name
  cluster   = "{{cluster}}"
  namespace = "web"
}
resource "fleet_app" "b" {
  name      = "b{{n}}"
  workspace = "{{ws}}"
  chart     = fleet_chart.d.name
  cluster   = "{{cluster}}"
  namespace = "api"
}`,
		create: `
  app     = fleet_app.a.name
  mode    = "none"
  service = { name = "hello", port = 80 }`,
		update: `
  app     = fleet_app.b.name
  mode    = "hub"
  host    = "hello{{n}}.apps.example.com"
  path    = "/api"
  service = { name = "hello-api", port = 8080 }
  tls     = { acme_issuer = "letsencrypt" }`,
		want: [2]string{
			`{"app":"a{{n}}","mode":"none","path":"/","service":{"name":"hello","port":80}}`,
			`{"app":"b{{n}}","mode":"hub","host":"hello{{n}}.apps.example.com","path":"/api","service":{"name":"hello-api","port":8080},"tls":{"acmeIssuer":"letsencrypt"}}`,
		},
		drift:   `{"spec":{"path":"/other","service":{"port":9090}}}`,
		drifted: map[string]string{"path": "/other", "service.port": "9090"},
	},
	{
		typ: "fleet_storage_site_deployment", kind: storageSiteDeploymentKind, owned: "spec", hub: usableCluster,
		create: `
  cluster  = "{{cluster}}"
  discover = { workers = ["w1"] }`,
		update: `
  cluster        = "{{cluster}}"
  site_namespace = "sb-system"
  discover       = { workers = ["w1", "w2"], enable_control_plane_nodes = true }
  sizing = {
    name                  = "a"
    vcpu_count            = 8
    min_huge_pages_size   = "8G"
    max_subsystem_count   = 20
    enable_drive_format   = true
    enable_journal_device = true
    stripe                = { data_chunks = 2, parity_chunks = 1 }
  }
  approved      = true
  wait_for      = "drafted"
  force_destroy = true`,
		want: [2]string{
			`{"cluster":"{{cluster}}","siteNamespace":"simplyblock","draftName":"site-draft","approved":false,"discover":{"workers":["w1"]}}`,
			`{"cluster":"{{cluster}}","siteNamespace":"sb-system","draftName":"site-draft","approved":true,
			  "discover":{"workers":["w1","w2"],"enableControlPlaneNodes":true},
			  "sizing":{"name":"a","vcpuCount":8,"minHugePagesSize":"8G","maxSubsystemCount":20,"enableDriveFormat":true,"enableJournalDevice":true,
			            "stripe":{"dataChunks":2,"parityChunks":1}}}`,
		},
		drift:   `{"spec":{"sizing":{"vcpuCount":16},"discover":{"workers":["w1","w2","w3"]}}}`,
		drifted: map[string]string{"sizing.vcpu_count": "16", "discover.workers.#": "3"},
		unread:  []string{"wait_for", "force_destroy"},
		controller: func(t *testing.T, f *hubFixtures) {
			for _, name := range []string{"m", "m2"} {
				answerEveryGeneration(t, f, storageSiteDeploymentKind, name, map[string]any{"phase": "Drafted", "message": "The draft names 2 nodes: review it."})
			}
		},
		data: `
data "fleet_storage_site_deployment" "m" {
  name       = {{addr}}.name
  workspace  = "{{ws}}"
  depends_on = [{{addr}}]
}`,
		dataWant: [2]map[string]string{
			{"data.fleet_storage_site_deployment.m.site_namespace": "simplyblock", "data.fleet_storage_site_deployment.m.approved": "false",
				"data.fleet_storage_site_deployment.m.discover.workers.#": "1"},
			{"data.fleet_storage_site_deployment.m.site_namespace": "sb-system", "data.fleet_storage_site_deployment.m.approved": "true",
				"data.fleet_storage_site_deployment.m.discover.workers.#": "2", "data.fleet_storage_site_deployment.m.sizing.vcpu_count": "8",
				"data.fleet_storage_site_deployment.m.sizing.stripe.data_chunks": "2"},
		},
	},
}

// TestAccMatrix runs every Terraform workflow on every resource (matrixRows), the rows in
// parallel on the one hub of the package, each in a workspace of its own, at the CLI's default
// parallelism, and again at -parallelism=1 for the rows whose configuration holds more than the
// resource (dependencies, data sources):
//
//   - create; update of every attribute that can change in place;
//   - drift: an out-of-band edit of managed fields is shown by plan and repaired by apply, while a
//     label and an annotation another manager set stay; `apply -refresh-only` reads the edit into
//     state and the plan after it proposes the repair, which apply makes;
//   - import by `terraform import`; by an `import` block with `-generate-config-out`, whose
//     generated configuration plans clean; by an `import` block into the configuration, with the
//     resource's identity (Terraform or OpenTofu 1.12 and later) or else its ID, which plans
//     nothing but what the hub cannot hold;
//   - rename by `moved` (nothing written to the hub) and rename in place, which replaces the
//     resource and its dependencies in one plan (no "Duplicate" from the resource meeting itself);
//   - destroy leaves the workspace, and the clusters, as they were before the test.
//
// Along the way: after every apply the hub holds exactly the objects state holds, and no
// credential reaches state.
func TestAccMatrix(t *testing.T) {
	for _, parallelism := range []string{"default", "1"} {
		t.Run("parallelism="+parallelism, func(t *testing.T) {
			if parallelism != "default" {
				// The rows' tests below run in parallel with each other but with no other test: the
				// variables reach only their CLIs.
				t.Setenv("TF_CLI_ARGS_plan", "-parallelism="+parallelism)
				t.Setenv("TF_CLI_ARGS_apply", "-parallelism="+parallelism)
			}
			for _, row := range matrixRows {
				if parallelism == "1" && row.deps == "" && row.data == "" {
					continue // one resource: the CLI walks it the same way at any parallelism
				}
				t.Run(row.typ, func(t *testing.T) {
					t.Parallel()
					runMatrixRow(t, row)
				})
			}
		})
	}
}

func runMatrixRow(t *testing.T, row matrixRow) {
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	cluster := ""
	if row.hub != nil {
		cluster = row.hub(t, f)
	}
	before := matrixSnapshot(t, f)
	if row.controller != nil {
		row.controller(t, f)
	}
	const label, movedLabel = "m", "moved"
	fill := func(s, addr, n string) string {
		return strings.NewReplacer("{{ws}}", ws, "{{n}}", n, "{{cluster}}", cluster, "{{addr}}", addr, "{{ca}}", strconv.Quote(testCA)).Replace(s)
	}
	config := func(label, n string, updated bool) string {
		addr := row.typ + "." + label
		body := row.create
		if updated {
			body = row.update
		}
		cfg := fmt.Sprintf("%s\nresource %q %q {\n  name      = \"m{{n}}\"\n  workspace = \"{{ws}}\"%s\n}\n%s\n", row.deps, row.typ, label, body, row.data)
		if label == movedLabel {
			cfg += fmt.Sprintf("moved {\n  from = %s.%s\n  to   = %s\n}\n", row.typ, "m", addr)
		}
		return fill(cfg, addr, n)
	}
	addr, movedAddr := row.typ+"."+label, row.typ+"."+movedLabel
	created, updated := config(label, "", false), config(label, "", true)
	checkOwned := func(i int) resource.TestCheckFunc {
		return matrixCheckOwned(f, row, "m", fill(row.want[i], addr, ""))
	}
	checkData := func(i int) resource.TestCheckFunc {
		var checks []resource.TestCheckFunc
		for _, k := range slices.Sorted(maps.Keys(row.dataWant[i])) {
			parts := strings.SplitN(k, ".", 4) // data.<type>.<name>.<attribute>
			checks = append(checks, resource.TestCheckResourceAttr(strings.Join(parts[:3], "."), parts[3], row.dataWant[i][k]))
		}
		return resource.ComposeAggregateTestCheckFunc(checks...)
	}
	drift := func() {
		matrixPatch(t, f, row.kind, "m", row.drift, "kubectl-edit")
		matrixPatch(t, f, row.kind, "m", matrixForeign, "kubectl-label")
	}
	update := func(a string) resource.ConfigPlanChecks {
		return resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(a, plancheck.ResourceActionUpdate)}}
	}
	importChecks := resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{expectOnlyChanged(addr, row.unread...)}}
	var rv string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             matrixCheckAsBefore(f, before),
		Steps: []resource.TestStep{
			{Config: created, Check: resource.ComposeAggregateTestCheckFunc(checkOwned(0), checkData(0), matrixCheckHubHoldsState(f)),
				ConfigStateChecks: []statecheck.StateCheck{expectIdentity(addr, ws, "m")}},
			{Config: updated, ConfigPlanChecks: update(addr),
				Check: resource.ComposeAggregateTestCheckFunc(checkOwned(1), checkData(1), checkNoSecretInState(testPushPassword, testAgentPassword))},
			// Drift: plan shows the edit of managed fields, apply repairs it and keeps the other
			// manager's label and annotation.
			{PreConfig: drift, Config: updated, ConfigPlanChecks: update(addr),
				Check: resource.ComposeAggregateTestCheckFunc(checkOwned(1), matrixCheckForeign(f, row.kind, "m"))},
			// plan -refresh-only: the refresh reads the edit into state; the plan after it repairs.
			{PreConfig: func() { matrixPatch(t, f, row.kind, "m", row.drift, "kubectl-edit") }, RefreshState: true, ExpectNonEmptyPlan: true,
				Check:             matrixCheckState(addr, row.drifted),
				RefreshPlanChecks: resource.RefreshPlanChecks{PostRefresh: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)}}},
			{Config: updated, ConfigPlanChecks: update(addr),
				Check: resource.ComposeAggregateTestCheckFunc(checkOwned(1), matrixCheckForeign(f, row.kind, "m"))},
			// Imports, each into a fresh state: they read what the hub holds.
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateVerifyIgnore: slices.Concat([]string{"timeouts"}, row.unread, row.spelled)},
			{ResourceName: addr, ImportState: true, ImportStateKind: resource.ImportBlockWithID, GenerateConfig: true},
			// An import block into the configuration: by identity, or by ID where the CLI has no
			// identities.
			{ResourceName: addr, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity, SkipFunc: cliWithoutIdentity,
				ExpectNonEmptyPlan: len(row.unread) > 0, ImportPlanChecks: importChecks},
			{ResourceName: addr, ImportState: true, ImportStateKind: resource.ImportBlockWithID, SkipFunc: cliWithIdentity,
				ExpectNonEmptyPlan: len(row.unread) > 0, ImportPlanChecks: importChecks},
			// Rename by moved: a new address, nothing written to the hub.
			{
				PreConfig:        func() { rv = matrixResourceVersion(t, f, row.kind, "m") },
				Config:           config(movedLabel, "", true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(movedAddr, plancheck.ResourceActionNoop)}},
				Check: resource.ComposeAggregateTestCheckFunc(matrixCheckHubHoldsState(f), func(*terraform.State) error {
					if now := matrixResourceVersion(t, f, row.kind, "m"); now != rv {
						return fmt.Errorf("%s %s/m written by a moved block: resourceVersion %s, was %s", row.kind.Kind, ws, now, rv)
					}
					return nil
				}),
			},
			// Rename in place: the resource and its dependencies are replaced in one plan.
			{
				Config:            config(movedLabel, "2", true),
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(movedAddr, plancheck.ResourceActionDestroyBeforeCreate)}},
				Check:             resource.ComposeAggregateTestCheckFunc(matrixCheckOwned(f, row, "m2", fill(row.want[1], movedAddr, "2")), matrixCheckHubHoldsState(f)),
				ConfigStateChecks: []statecheck.StateCheck{expectIdentity(movedAddr, ws, "m2")},
			},
		},
	})
}

// answerEveryGeneration plays a hub reconciler until the test ends: whenever the object's
// spec (or, for an app, its chart) is newer than its status, it reports status for the current
// generations.
func answerEveryGeneration(t *testing.T, f *hubFixtures, k hub.Kind, name string, status map[string]any) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ri := f.dyn.Resource(k.GroupVersionResource).Namespace(f.ws)
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			u, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // not there (yet, or any more): poll again
			}
			observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			chartObserved, _, _ := unstructured.NestedInt64(u.Object, "status", "chartGeneration")
			chartGeneration := int64(0)
			if k == fleetAppKind { // the apps reconciler also reports the generation of the chart it deployed
				chart, _, _ := unstructured.NestedString(u.Object, "spec", "chart")
				if c, err := f.dyn.Resource(fleetChartKind.GroupVersionResource).Namespace(f.ws).Get(ctx, chart, metav1.GetOptions{}); err == nil {
					chartGeneration = c.GetGeneration()
				}
			}
			if observed < u.GetGeneration() || chartObserved < chartGeneration {
				s := jsonCopy(status)
				s["observedGeneration"] = u.GetGeneration()
				if chartGeneration > 0 {
					s["chartGeneration"] = chartGeneration
				}
				u.Object["status"] = s
				_, _ = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "test-controller"}) // a conflict: the next poll retries
			}
			return false, nil
		})
	}()
}

// matrixKinds are the hub kinds of the matrix's rows, by resource type.
func matrixKinds() map[string]hub.Kind {
	out := map[string]hub.Kind{}
	for _, r := range matrixRows {
		out[r.typ] = r.kind
	}
	return out
}

func matrixRI(f *hubFixtures, k hub.Kind) interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error)
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
} {
	return f.dyn.Resource(k.GroupVersionResource).Namespace(f.ws)
}

func matrixPatch(t *testing.T, f *hubFixtures, k hub.Kind, name, patch, manager string) {
	t.Helper()
	if _, err := f.dyn.Resource(k.GroupVersionResource).Namespace(f.ws).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}); err != nil {
		t.Fatalf("patch %s %s/%s: %v", k.Kind, f.ws, name, err)
	}
}

func matrixResourceVersion(t *testing.T, f *hubFixtures, k hub.Kind, name string) string {
	t.Helper()
	u, err := matrixRI(f, k).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", k.Kind, f.ws, name, err)
	}
	return u.GetResourceVersion()
}

// matrixOwned is the field the row owns on the hub object, a Secret's data decoded.
func matrixOwned(u *unstructured.Unstructured, field string) (any, error) {
	v := u.Object[field]
	if field != "data" {
		return v, nil
	}
	out := map[string]any{}
	for k, enc := range v.(map[string]any) {
		dec, err := base64.StdEncoding.DecodeString(enc.(string))
		if err != nil {
			return nil, fmt.Errorf("data[%s]: %w", k, err)
		}
		out[k] = string(dec)
	}
	return out, nil
}

// redacted is v for an error message: values of keys that name a password are replaced.
func redacted(v any) string {
	if m, ok := v.(map[string]any); ok {
		c := maps.Clone(m)
		for k := range c {
			if strings.Contains(strings.ToLower(k), "password") {
				c[k] = "(redacted)"
			}
		}
		v = c
	}
	data, _ := json.Marshal(v)
	return string(data)
}

func matrixCheckOwned(f *hubFixtures, row matrixRow, name, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := matrixRI(f, row.kind).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got, err := matrixOwned(u, row.owned)
		if err != nil {
			return err
		}
		var w any
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			return fmt.Errorf("the row's want: %w", err)
		}
		if data, _ := json.Marshal(got); json.Unmarshal(data, &got) != nil || !reflect.DeepEqual(got, w) {
			return fmt.Errorf("%s %s/%s %s on the hub =\n  %s\nwant\n  %s", row.kind.Kind, f.ws, name, row.owned, redacted(got), redacted(w))
		}
		return nil
	}
}

// matrixCheckForeign: the label and annotation of matrixForeign are still on the object.
func matrixCheckForeign(f *hubFixtures, k hub.Kind, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := matrixRI(f, k).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if a, l := u.GetAnnotations()["ops.example.com/ticket"], u.GetLabels()["ops.example.com/team"]; a != "OPS-1" || l != "storage" {
			return fmt.Errorf("%s %s/%s: another manager's annotation %q and label %q, want OPS-1 and storage", k.Kind, f.ws, name, a, l)
		}
		return nil
	}
}

// matrixCheckState asserts flatmap attributes of a resource in state.
func matrixCheckState(addr string, want map[string]string) resource.TestCheckFunc {
	var checks []resource.TestCheckFunc
	for _, k := range slices.Sorted(maps.Keys(want)) {
		checks = append(checks, resource.TestCheckResourceAttr(addr, k, want[k]))
	}
	return resource.ComposeAggregateTestCheckFunc(checks...)
}

// matrixCheckHubHoldsState: the objects the provider manages in the workspace are exactly the
// resources in state, by kind and name.
func matrixCheckHubHoldsState(f *hubFixtures) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		kinds := matrixKinds()
		want, got := []string{}, []string{}
		for key, rs := range s.RootModule().Resources {
			if k, ok := kinds[rs.Type]; ok && !strings.HasPrefix(key, "data.") {
				want = append(want, k.Kind+"/"+rs.Primary.Attributes["name"])
			}
		}
		for _, k := range uniqueKinds(kinds) {
			l, err := matrixRI(f, k).List(context.Background(), metav1.ListOptions{LabelSelector: hub.ManagedByLabel + "=" + DefaultFieldManager})
			if err != nil {
				return err
			}
			for _, u := range l.Items {
				got = append(got, k.Kind+"/"+u.GetName())
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("workspace %s holds %v, state %v", f.ws, got, want)
		}
		return nil
	}
}

func uniqueKinds(kinds map[string]hub.Kind) []hub.Kind {
	var out []hub.Kind
	for _, typ := range slices.Sorted(maps.Keys(kinds)) {
		if !slices.ContainsFunc(out, func(k hub.Kind) bool { return k.GroupVersionResource == kinds[typ].GroupVersionResource }) {
			out = append(out, kinds[typ])
		}
	}
	return out
}

// matrixSnapshot is what the test's part of the hub holds: every object of the matrix's kinds in
// the workspace and the test's clusters, with their resourceVersions.
func matrixSnapshot(t *testing.T, f *hubFixtures) map[string]string {
	t.Helper()
	snap, err := matrixSnapshotErr(f)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func matrixSnapshotErr(f *hubFixtures) (map[string]string, error) {
	snap := map[string]string{}
	for _, k := range uniqueKinds(matrixKinds()) {
		l, err := matrixRI(f, k).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, u := range l.Items {
			snap[k.Kind+"/"+u.GetName()] = u.GetResourceVersion()
		}
	}
	l, err := f.dyn.Resource(managedClustersGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, u := range l.Items {
		if strings.HasPrefix(u.GetName(), f.prefix+"-") {
			snap["ManagedCluster/"+u.GetName()] = u.GetResourceVersion()
		}
	}
	return snap, nil
}

// matrixCheckAsBefore is a CheckDestroy: the workspace and the clusters hold the objects they
// held before the test, unchanged.
func matrixCheckAsBefore(f *hubFixtures, before map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		after, err := matrixSnapshotErr(f)
		if err != nil {
			return err
		}
		if !maps.Equal(after, before) {
			return fmt.Errorf("after destroy the hub holds %v, before the test %v", after, before)
		}
		return nil
	}
}

// expectOnlyChanged is a plan check: the plan changes no attribute of addr but those named.
func expectOnlyChanged(addr string, allowed ...string) plancheck.PlanCheck {
	return onlyChanged{addr, allowed}
}

type onlyChanged struct {
	addr    string
	allowed []string
}

func (c onlyChanged) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.addr || rc.Change == nil {
			continue
		}
		resp.Error = changedOutside(rc.Change, c.allowed)
		return
	}
	resp.Error = fmt.Errorf("%s is not in the plan", c.addr)
}

func changedOutside(ch *tfjson.Change, allowed []string) error {
	before, _ := ch.Before.(map[string]any)
	after, _ := ch.After.(map[string]any)
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if !reflect.DeepEqual(before[k], after[k]) && !slices.Contains(allowed, k) {
			changed = append(changed, k)
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("the import plans to change %v, which the hub holds", changed)
	}
	return nil
}

// expectIdentity is a state check: the resource's identity is its workspace and name. CLIs
// without resource identity (below 1.12) pass it.
func expectIdentity(addr, ws, name string) statecheck.StateCheck {
	return identityCheck{statecheck.ExpectIdentity(addr, map[string]knownvalue.Check{
		"workspace": knownvalue.StringExact(ws),
		"name":      knownvalue.StringExact(name),
	})}
}

type identityCheck struct{ statecheck.StateCheck }

func (c identityCheck) CheckState(ctx context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	if skip, err := cliWithoutIdentity(); skip || err != nil {
		resp.Error = err
		return
	}
	c.StateCheck.CheckState(ctx, req, resp)
}

// cliWithoutIdentity is a SkipFunc: resource identity needs Terraform or OpenTofu 1.12.
func cliWithoutIdentity() (bool, error) {
	v, err := cliVersion()
	if err != nil {
		return false, err
	}
	return v[0] == 1 && v[1] < 12, nil
}

func cliWithIdentity() (bool, error) {
	without, err := cliWithoutIdentity()
	return !without, err
}

var cliVersion = sync.OnceValues(func() ([2]int, error) {
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		bin = "terraform"
	}
	out, err := exec.Command(bin, "version", "-json").Output()
	if err != nil {
		return [2]int{}, fmt.Errorf("%s version: %w", bin, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return [2]int{}, fmt.Errorf("%s version: %w", bin, err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(v.Version, "%d.%d", &major, &minor); err != nil {
		return [2]int{}, fmt.Errorf("%s version %q: %w", bin, v.Version, err)
	}
	return [2]int{major, minor}, nil
})
