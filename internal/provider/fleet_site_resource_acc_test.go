package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// siteHub reads and writes the fleet objects (FleetSites, FleetClusterJoins, FleetCharts,
// FleetApps, FleetAppRoutes) of one workspace behind Terraform's back.
type siteHub struct {
	t            *testing.T
	dyn          dynamic.Interface
	sites, joins dynamic.ResourceInterface
	ws           string
}

// fleetKindsByName are the kinds siteHub handles, by Kind.
var fleetKindsByName = map[string]hub.Kind{}

func init() {
	for _, k := range []hub.Kind{fleetSiteKind, fleetClusterJoinKind, fleetChartKind, fleetAppKind, fleetAppRouteKind} {
		fleetKindsByName[k.Kind] = k
	}
}

func newSiteHub(t *testing.T, ws string) *siteHub {
	dyn, err := dynamic.NewForConfig(testRESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return &siteHub{t: t, dyn: dyn, ws: ws, sites: dyn.Resource(fleetSiteKind.GroupVersionResource).Namespace(ws),
		joins: dyn.Resource(fleetClusterJoinKind.GroupVersionResource).Namespace(ws)}
}

func (h *siteHub) ri(kind string) dynamic.ResourceInterface {
	switch kind {
	case "FleetSite":
		return h.sites
	case "FleetClusterJoin":
		return h.joins
	}
	return h.dyn.Resource(fleetKindsByName[kind].GroupVersionResource).Namespace(h.ws)
}

// create writes an object as kubectl would; managed adds the provider's managed-by label, as
// another Terraform configuration's object has.
func (h *siteHub) create(kind, name string, managed bool, spec map[string]any) {
	h.t.Helper()
	meta := map[string]any{"name": name, "namespace": h.ws}
	if managed {
		meta["labels"] = map[string]any{hub.ManagedByLabel: "terraform-provider-fleet"}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleet.umkim.io/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}}
	if _, err := h.ri(kind).Create(context.Background(), u, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		h.t.Fatalf("create %s %s/%s: %v", kind, h.ws, name, err)
	}
}

func (h *siteHub) get(kind, name string) (*unstructured.Unstructured, error) {
	return h.ri(kind).Get(context.Background(), name, metav1.GetOptions{})
}

func (h *siteHub) patch(kind, name, patch string) {
	h.t.Helper()
	if _, err := h.ri(kind).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		h.t.Fatalf("patch %s %s/%s: %v", kind, h.ws, name, err)
	}
}

// setStatus writes status as a controller would, for the object's current generation.
func (h *siteHub) setStatus(kind, name string, status map[string]any) {
	h.t.Helper()
	u, err := h.get(kind, name)
	if err != nil {
		h.t.Fatal(err)
	}
	status = jsonCopy(status)
	status["observedGeneration"] = u.GetGeneration()
	u.Object["status"] = status
	if _, err := h.ri(kind).UpdateStatus(context.Background(), u, metav1.UpdateOptions{FieldManager: "test-controller"}); err != nil {
		h.t.Fatalf("status of %s %s: %v", kind, name, err)
	}
}

func (h *siteHub) checkSpec(kind, name string, want map[string]any) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := h.get(kind, name)
		if err != nil {
			return err
		}
		got := jsonCopy(u.Object["spec"].(map[string]any))
		if want := jsonCopy(want); !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			return fmt.Errorf("%s spec on the hub =\n  %s\nwant\n  %s", kind, g, w)
		}
		return nil
	}
}

// absent fails when the object is on the hub.
func (h *siteHub) absent(kind, name string) {
	h.t.Helper()
	if _, err := h.get(kind, name); !apierrors.IsNotFound(err) {
		h.t.Errorf("%s %s/%s: %v, want NotFound (nothing written)", kind, h.ws, name, err)
	}
}

// checkGone is a CheckDestroy: the workspace has no fleet object written by Terraform left.
func (h *siteHub) checkGone(*terraform.State) error {
	for _, kind := range sortedKeys(fleetKindsByName) {
		l, err := h.ri(kind).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, u := range l.Items {
			for _, f := range u.GetManagedFields() {
				if f.Manager == "terraform-provider-fleet" {
					return fmt.Errorf("%s %s (written by Terraform) left in %s", kind, u.GetName(), h.ws)
				}
			}
		}
	}
	return nil
}

func siteConfig(ws, body string) string {
	return fmt.Sprintf(`
resource "fleet_site" "s" {
  name      = "berlin"
  workspace = %q
%s
}
`, ws, body)
}

const siteAddr = "fleet_site.s"

const fullSite = `
  display_name = "Berlin store"
  ingress = [
    { id = "wan", method = "port_forward", address = "203.0.113.10", ports = { http = 30080, https = 30443 } },
    { id = "proxy", method = "reverse_proxy", address = "edge.berlin.example.com" },
  ]
  hub_gateway = { enabled = true, domain = "berlin.apps.example.com" }
  jumphost = {
    host = "bastion.example.com"
    user = "ops"
    credentials_secret_ref = { name = "bastion", key = "ssh-privatekey" }
  }
`

// TestAccFleetSite_lifecycle: create, update, import, the hub's status read back, drift
// corrected, destroy.
func TestAccFleetSite_lifecycle(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	h := newSiteHub(t, ws)
	updated := `
  display_name = "Berlin flagship"
  ingress = [
    { id = "proxy", method = "reverse_proxy", address = "edge2.berlin.example.com", ports = { https = 443 } },
  ]
  jumphost = { host = "bastion.example.com", port = 2222 }
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config: siteConfig(ws, fullSite),
				Check: h.checkSpec("FleetSite", "berlin", map[string]any{"displayName": "Berlin store",
					"edge": map[string]any{"ingress": []any{
						map[string]any{"id": "wan", "method": "port_forward", "address": "203.0.113.10", "ports": map[string]any{"http": 30080, "https": 30443}},
						map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.berlin.example.com"}}},
					"hubGateway": map[string]any{"enabled": true, "domain": "berlin.apps.example.com"},
					"jumphost":   map[string]any{"host": "bastion.example.com", "user": "ops", "credentialsSecretRef": map[string]any{"name": "bastion", "key": "ssh-privatekey"}}}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(siteAddr, ssdValue("id"), knownvalue.StringExact(ws+"/berlin")),
					statecheck.ExpectKnownValue(siteAddr, ssdValue("ingress", 0, "ports", "https"), knownvalue.Int64Exact(30443)),
					statecheck.ExpectKnownValue(siteAddr, ssdValue("ingress", 1, "ports"), knownvalue.Null()),
					statecheck.ExpectKnownValue(siteAddr, ssdValue("jumphost", "port"), knownvalue.Null()),
					statecheck.ExpectKnownValue(siteAddr, ssdValue("joined_clusters"), knownvalue.Null()), // no controller on this hub
				},
			},
			{ResourceName: siteAddr, ImportState: true, ImportStateVerify: true, ImportStateId: ws + "/berlin"},
			{
				Config: siteConfig(ws, updated),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(siteAddr, plancheck.ResourceActionUpdate),
				}},
				Check: h.checkSpec("FleetSite", "berlin", map[string]any{"displayName": "Berlin flagship",
					"edge":     map[string]any{"ingress": []any{map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge2.berlin.example.com", "ports": map[string]any{"https": 443}}}},
					"jumphost": map[string]any{"host": "bastion.example.com", "port": 2222}}),
			},
			{
				// The controller reports: read back, and an unchanged configuration plans nothing.
				PreConfig: func() {
					h.setStatus("FleetSite", "berlin", map[string]any{"joinedClusters": 2, "edgeConfigMap": "fleet-site-berlin-edge"})
				},
				Config:           siteConfig(ws, updated),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(siteAddr, ssdValue("joined_clusters"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(siteAddr, ssdValue("edge_config_map"), knownvalue.StringExact("fleet-site-berlin-edge")),
				},
			},
			{
				// Drift: kubectl renames the site, adds an entry and a gateway; apply restores.
				PreConfig: func() {
					h.patch("FleetSite", "berlin", `{"spec":{"displayName":"edited","hubGateway":{"enabled":false},"edge":{"ingress":[
						{"id":"proxy","method":"reverse_proxy","address":"edge2.berlin.example.com","ports":{"https":443}},
						{"id":"extra","method":"reverse_proxy","address":"x.example.com"}]}}}`)
				},
				Config: siteConfig(ws, updated),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(siteAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(siteAddr, ssdValue("display_name"), knownvalue.StringExact("Berlin flagship")),
					plancheck.ExpectKnownValue(siteAddr, ssdValue("hub_gateway"), knownvalue.Null()),
				}},
				Check: h.checkSpec("FleetSite", "berlin", map[string]any{"displayName": "Berlin flagship",
					"edge":     map[string]any{"ingress": []any{map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge2.berlin.example.com", "ports": map[string]any{"https": 443}}}},
					"jumphost": map[string]any{"host": "bastion.example.com", "port": 2222}}),
			},
		},
	})
}

// TestAccFleetSite_invalid: what the configuration alone gets wrong fails the plan, and nothing
// is written to the hub.
func TestAccFleetSite_invalid(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	h := newSiteHub(t, ws)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: siteConfig(ws, `
  ingress = [
    { id = "a", method = "reverse_proxy", address = "a.example.com" },
    { id = "a", method = "reverse_proxy", address = "b.example.com" },
  ]`),
				ExpectError: expectError("Duplicate ingress id", `ingress[0] and ingress[1] are both "a"`),
			},
			{
				Config:      siteConfig(ws, `  ingress = [{ id = "wan", method = "port_forward", address = "203.0.113.10" }]`),
				ExpectError: expectError("port_forward entry without ports", "set ports.http or ports.https"),
			},
			{
				Config:      siteConfig(ws, `  ingress = [{ id = "wan", method = "port_forward", address = "203.0.113.10", ports = {} }]`),
				ExpectError: expectError("port_forward entry without ports"),
			},
			{
				Config:      siteConfig(ws, `  ingress = [{ id = "wan", method = "carrier_pigeon", address = "203.0.113.10" }]`),
				ExpectError: expectError("value must be one of"),
			},
			{
				Config:      siteConfig(ws, `  hub_gateway = { enabled = true }`),
				ExpectError: expectError("Hub gateway without a domain"),
			},
			{
				Config:      siteConfig(ws, `  ingress = [{ id = "wan", method = "port_forward", address = "203.0.113.10", ports = { http = 70000 } }]`),
				ExpectError: expectError("value must be between 1 and 65535"),
			},
			{
				PreConfig: func() { h.absent("FleetSite", "berlin") },
				Config:    siteConfig(ws, `  hub_gateway = { enabled = false }`),
			},
		},
	})
}
