package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// TestAccUnapproveFailsThePlan runs `plan` itself (not plan and apply, as a test step does) to
// show that withdrawing an approval fails the plan, not the apply: set to false or removed, with
// the workspace configured or the provider's default, the plan fails with an error on approved,
// and the hub object is untouched. (With the provider's workspace, the planned workspace was
// unknown to the check, which let the plan through to fail at apply on the hub's CEL rule.)
func TestAccUnapproveFailsThePlan(t *testing.T) {
	for _, workspaceFrom := range []string{"resource", "provider"} {
		t.Run("workspace from "+workspaceFrom, func(t *testing.T) {
			w := newCLIWorkdir(t)
			ws := testWorkspace(t, testHub(t))
			site := newHubFixtures(t, ws).Cluster("site", "", nil)
			h := newSSDHub(t, ws)
			config := func(body string) string {
				if workspaceFrom == "resource" {
					return ssdConfig(ws, site, body)
				}
				return fmt.Sprintf("provider \"fleet\" {\n  workspace = %q\n}\nresource \"fleet_storage_site_deployment\" \"s\" {\n  name = \"site-a\"\n  cluster = %q\n%s}\n", ws, site, body)
			}
			approved := config("  approved = true\n")
			w.apply(approved)
			defer func() { w.write(approved); w.destroy() }()
			before := h.mustGet("site-a")
			for _, step := range []struct{ name, body string }{{"set to false", "  approved = false\n"}, {"removed", ""}} {
				diags, failed := w.plan(config(step.body))
				errs := only(diags, "Approval is one-way")
				if !failed || len(errs) != 1 || errs[0].Severity != "error" || !strings.Contains(errs[0].Detail, "it cannot be set back to false") {
					t.Errorf("%s: plan failed=%t with %v, want it to fail with \"Approval is one-way\"", step.name, failed, diags)
				}
			}
			after := h.mustGet("site-a")
			if after.GetResourceVersion() != before.GetResourceVersion() {
				t.Errorf("the hub object changed (resourceVersion %s → %s)", before.GetResourceVersion(), after.GetResourceVersion())
			}
			if v, _, _ := unstructured.NestedBool(after.Object, "spec", "approved"); !v {
				t.Error("spec.approved is no longer true on the hub")
			}
		})
	}
}

// TestAccPlanRefusesWhatTheSitesRefuse: what the hub accepts but the site's operator, Helm or
// Kubernetes refuse fails the plan with an error naming the field, and nothing reaches the hub.
func TestAccPlanRefusesWhatTheSitesRefuse(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	site := newHubFixtures(t, ws).Cluster("site", "", nil)
	ssd := func(name, body string) string {
		return fmt.Sprintf("resource \"fleet_storage_site_deployment\" \"s\" {\n  name = %q\n  workspace = %q\n  cluster = %q\n%s}\n", name, ws, site, body)
	}
	workers := make([]string, 129)
	for i := range workers {
		workers[i] = fmt.Sprintf("%q", fmt.Sprintf("w-%03d", i))
	}
	app := fmt.Sprintf("resource \"fleet_app\" \"a\" {\n  name = %q\n  workspace = %q\n  chart = \"hello\"\n  cluster = %q\n  namespace = \"web\"\n}\n",
		strings.Repeat("a", 54), ws, site)
	appRoute := fmt.Sprintf("resource \"fleet_app_route\" \"r\" {\n  name = \"r\"\n  workspace = %q\n  app = \"a\"\n  host = \"a.example.com\"\n  service = { name = \"a\", port = 80 }\n  tls = { secret_name = \"Bad_Secret\" }\n}\n", ws)
	var steps []resource.TestStep
	for _, tc := range []struct {
		config string
		want   []string
	}{
		{ssd("site-a", "  sizing = { stripe = { data_chunks = 8 } }\n"), []string{"Invalid sizing.stripe", "8+1", "1+0, 1+1, 2+1, 4+1, 1+2, 2+2, 4+2", "The site refuses this"}},
		{ssd("site-a", "  sizing = { stripe = { data_chunks = 2, parity_chunks = 0 } }\n"), []string{"Invalid sizing.stripe", "2+0"}},
		{ssd("site-a", "  discover = { workers = [\"w1\"], node_selector = { nvme = \"true\" } }\n"), []string{"Invalid discover.workers", "exclusive"}},
		{ssd("site-a", "  discover = { workers = ["+strings.Join(workers, ", ")+"] }\n"), []string{"Invalid discover.workers", "129 workers", "at most 128"}},
		{ssd("site-a", "  sizing = { vcpu_count = 3 }\n"), []string{"Invalid sizing.vcpu_count", "at least 4"}},
		{ssd("site-a", "  sizing = { max_subsystem_count = 76 }\n"), []string{"Invalid sizing.max_subsystem_count", "10 to 75"}},
		{ssd("site-a", "  sizing = { min_huge_pages_size = \""+strings.Repeat("1", 33)+"\" }\n"), []string{"Invalid sizing.min_huge_pages_size", "33 characters", "at most 32"}},
		{ssd(strings.Repeat("s", 64), ""), []string{"Invalid name", "64 characters", "label value has at most 63"}},
		{app, []string{"Release name too long", "54 characters", "over 53", "Set release_name"}},
		{appRoute, []string{"Invalid tls.secret_name", `"Bad_Secret" is not a valid Kubernetes name`}},
	} {
		steps = append(steps, resource.TestStep{Config: tc.config, PlanOnly: true, ExpectError: expectError(tc.want...)})
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: steps})

	dyn := newHubFixtures(t, ws).dyn
	for _, kind := range []hub.Kind{storageSiteDeploymentKind, fleetAppKind, fleetAppRouteKind} {
		list, err := dyn.Resource(kind.GroupVersionResource).Namespace(ws).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			t.Errorf("the refused plans wrote %d %s(s) to the hub", len(list.Items), kind.Kind)
		}
	}
}
