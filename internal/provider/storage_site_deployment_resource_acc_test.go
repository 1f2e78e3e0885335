package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim"
)

const ssdAddr = "fleet_storage_site_deployment.s"

// ssdHub reads and writes the StorageSiteDeployments of one workspace behind Terraform's back.
type ssdHub struct {
	t  *testing.T
	ri dynamic.ResourceInterface
	ws string
}

func newSSDHub(t *testing.T, ws string) *ssdHub {
	dyn, err := dynamic.NewForConfig(testRESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return &ssdHub{t: t, ri: dyn.Resource(storageSiteDeploymentKind.GroupVersionResource).Namespace(ws), ws: ws}
}

func (h *ssdHub) get(name string) (*unstructured.Unstructured, error) {
	return h.ri.Get(context.Background(), name, metav1.GetOptions{})
}

func (h *ssdHub) mustGet(name string) *unstructured.Unstructured {
	h.t.Helper()
	u, err := h.get(name)
	if err != nil {
		h.t.Fatalf("get StorageSiteDeployment %s/%s: %v", h.ws, name, err)
	}
	return u
}

// setStatus writes status on the object, as a controller would, for its current generation.
func (h *ssdHub) setStatus(name string, status map[string]any) error {
	u, err := h.get(name)
	if err != nil {
		return err
	}
	status = jsonCopy(status)
	status["observedGeneration"] = u.GetGeneration()
	u.Object["status"] = status
	_, err = h.ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{FieldManager: "test-controller"})
	return err
}

func (h *ssdHub) mustSetStatus(name string, status map[string]any) {
	h.t.Helper()
	if err := h.setStatus(name, status); err != nil {
		h.t.Fatalf("write status of %s/%s: %v", h.ws, name, err)
	}
}

func (h *ssdHub) patchSpec(name, patch string) {
	h.t.Helper()
	if _, err := h.ri.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		h.t.Fatalf("patch %s/%s: %v", h.ws, name, err)
	}
}

// checkSpec asserts the hub object's whole spec.
func (h *ssdHub) checkSpec(name string, want map[string]any) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := h.get(name)
		if err != nil {
			return err
		}
		got := jsonCopy(u.Object["spec"].(map[string]any))
		if want := jsonCopy(want); !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			return fmt.Errorf("spec on the hub =\n  %s\nwant\n  %s", g, w)
		}
		return nil
	}
}

// checkGone is a CheckDestroy: the workspace has no StorageSiteDeployment left.
func (h *ssdHub) checkGone(*terraform.State) error {
	l, err := h.ri.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(l.Items) > 0 {
		return fmt.Errorf("%d StorageSiteDeployments left in %s, e.g. %s", len(l.Items), h.ws, l.Items[0].GetName())
	}
	return nil
}

// jsonCopy normalises a JSON-like value (numbers become float64).
func jsonCopy(m map[string]any) map[string]any {
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func ssdConfig(ws, cluster, body string) string {
	return fmt.Sprintf(`
resource "fleet_storage_site_deployment" "s" {
  name      = "site-a"
  workspace = %q
  cluster   = %q
%s
}
`, ws, cluster, body)
}

func ssdValue(path ...any) tfjsonpath.Path {
	p := tfjsonpath.New(path[0].(string))
	for _, step := range path[1:] {
		switch s := step.(type) {
		case string:
			p = p.AtMapKey(s)
		case int:
			p = p.AtSliceIndex(s)
		}
	}
	return p
}

var onlineStatus = map[string]any{
	"phase": "Online", "message": "The storage cluster is online.", "workName": "sbsd.storage.site-a",
	"draft": map[string]any{"name": "site-draft", "phase": "Expanded", "approved": true, "nodeRefs": []any{"w1", "w2"},
		"omitted":  []any{"nodeSets[1].groups[0].workers"},
		"cluster":  map[string]any{"name": "a", "vcpuCount": 4, "minHugePagesSize": "8G"},
		"nodeSets": []any{map[string]any{"name": "set-0", "groups": []any{map[string]any{"name": "g0", "workers": []any{"w1", "w2"}, "devices": map[string]any{"nvme": []any{"0000:00:04.0"}}}}}}},
	"storageCluster": map[string]any{"name": "a", "uuid": "3f2b7c1e-uuid", "phase": "Online", "pool": "pool-a",
		"nodes": []any{map[string]any{"name": "sn-w1", "phase": "Online", "hostname": "w1"}, map[string]any{"name": "sn-w2", "phase": "Online", "hostname": "w2"}}},
}

// TestAccStorageSiteDeployment_lifecycle: create, update, import, the site's status read back,
// uuid and pool known at plan across an update, drift corrected, destroy.
func TestAccStorageSiteDeployment_lifecycle(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	site := newHubFixtures(t, ws).Usable("site")
	h := newSSDHub(t, ws)

	created := ssdConfig(ws, site, `
  discover = { workers = ["w1", "w2"] }
  sizing   = { vcpu_count = 4, min_huge_pages_size = "8G", stripe = { data_chunks = 2, parity_chunks = 1 } }
`)
	approved := func(vcpus int) string {
		return ssdConfig(ws, site, fmt.Sprintf(`
  site_namespace = "sb-system"
  discover = { workers = ["w1", "w2"], enable_control_plane_nodes = false }
  sizing   = { name = "a", vcpu_count = %d, min_huge_pages_size = "8G", enable_drive_format = false }
  approved = true
`, vcpus))
	}
	approvedSpec := func(vcpus int) map[string]any {
		return map[string]any{"cluster": site, "siteNamespace": "sb-system", "draftName": "site-draft", "approved": true,
			"discover": map[string]any{"workers": []any{"w1", "w2"}, "enableControlPlaneNodes": false},
			"sizing":   map[string]any{"name": "a", "vcpuCount": vcpus, "minHugePagesSize": "8G", "enableDriveFormat": false}}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config: created,
				Check: h.checkSpec("site-a", map[string]any{"cluster": site, "siteNamespace": "simplyblock", "draftName": "site-draft", "approved": false,
					"discover": map[string]any{"workers": []any{"w1", "w2"}},
					"sizing":   map[string]any{"vcpuCount": 4, "minHugePagesSize": "8G", "stripe": map[string]any{"dataChunks": 2, "parityChunks": 1}}}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("id"), knownvalue.StringExact(ws+"/site-a")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("site_namespace"), knownvalue.StringExact("simplyblock")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("draft_name"), knownvalue.StringExact("site-draft")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("approved"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("sizing", "max_subsystem_count"), knownvalue.Null()),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("discover", "enable_control_plane_nodes"), knownvalue.Null()),
					// No controller on this hub: no status.
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("phase"), knownvalue.Null()),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster"), knownvalue.Null()),
				},
			},
			{
				Config: approved(4),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(ssdAddr, plancheck.ResourceActionUpdate),
				}},
				Check: h.checkSpec("site-a", approvedSpec(4)),
			},
			{ResourceName: ssdAddr, ImportState: true, ImportStateVerify: true, ImportStateId: ws + "/site-a"},
			{
				// The site answers: the hub's status is read back, and an unchanged configuration plans nothing.
				PreConfig:        func() { h.mustSetStatus("site-a", onlineStatus) },
				Config:           approved(4),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("phase"), knownvalue.StringExact("Online")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster", "uuid"), knownvalue.StringExact("3f2b7c1e-uuid")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster", "nodes", 1, "hostname"), knownvalue.StringExact("w2")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("draft", "node_sets", 0, "groups", 0, "devices", "nvme", 0), knownvalue.StringExact("0000:00:04.0")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("draft", "cluster", "vcpu_count"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("draft", "node_refs"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("w1"), knownvalue.StringExact("w2")})),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("draft", "omitted"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("nodeSets[1].groups[0].workers")})),
				},
			},
			{
				// An update keeps the storage cluster's identity known at plan, so a StorageClass
				// that names it is not planned anew; its phase and nodes may change.
				Config: approved(8),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(ssdAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster", "uuid"), knownvalue.StringExact("3f2b7c1e-uuid")),
					plancheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster", "pool"), knownvalue.StringExact("pool-a")),
					plancheck.ExpectUnknownValue(ssdAddr, ssdValue("storage_cluster", "phase")),
					plancheck.ExpectUnknownValue(ssdAddr, ssdValue("phase")),
				}},
				Check: h.checkSpec("site-a", approvedSpec(8)),
			},
			{
				// Drift: kubectl changes the sizing and the discovery and adds a field; the plan
				// shows it and apply restores the configuration.
				PreConfig: func() {
					h.patchSpec("site-a", `{"spec":{"sizing":{"vcpuCount":16,"maxSubsystemCount":32},"discover":{"workers":["w1","w2","w3"]}}}`)
				},
				Config: approved(8),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(ssdAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(ssdAddr, ssdValue("sizing", "vcpu_count"), knownvalue.Int64Exact(8)),
					plancheck.ExpectKnownValue(ssdAddr, ssdValue("sizing", "max_subsystem_count"), knownvalue.Null()),
				}},
				Check: h.checkSpec("site-a", approvedSpec(8)),
			},
		},
	})
}

// TestAccStorageSiteDeployment_unapproveFailsAtPlan: un-approving is an error at plan, whether
// approved is set to false or removed, and nothing is written to the hub.
func TestAccStorageSiteDeployment_unapproveFailsAtPlan(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	site := newHubFixtures(t, ws).Usable("site")
	h := newSSDHub(t, ws)
	var before *unstructured.Unstructured
	unchanged := func() {
		after := h.mustGet("site-a")
		if after.GetResourceVersion() != before.GetResourceVersion() {
			t.Errorf("the hub object changed (resourceVersion %s → %s): the failed plan wrote to the hub", before.GetResourceVersion(), after.GetResourceVersion())
		}
		if v, _, _ := unstructured.NestedBool(after.Object, "spec", "approved"); !v {
			t.Error("spec.approved is no longer true on the hub")
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{Config: ssdConfig(ws, site, "  approved = true\n")},
			{
				PreConfig:   func() { before = h.mustGet("site-a") },
				Config:      ssdConfig(ws, site, "  approved = false\n"),
				ExpectError: expectError("Approval is one-way", "is approved, and approval is one-way: it cannot be set back to false", "Nothing was written to the hub"),
			},
			{
				PreConfig:   unchanged,
				Config:      ssdConfig(ws, site, ""), // removed: the default is false
				ExpectError: expectError("Approval is one-way"),
			},
			{
				PreConfig:        unchanged,
				Config:           ssdConfig(ws, site, "  approved = true\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccStorageSiteDeployment_clusterChangeReplaces: a new cluster or draft name replaces the
// deployment (a new, unapproved one may follow an approved one). The warning is checked in
// TestAccStorageSiteDeploymentPlanWarnings.
func TestAccStorageSiteDeployment_clusterChangeReplaces(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	siteA, siteB := f.Usable("site-a"), f.Usable("site-b")
	h := newSSDHub(t, ws)
	var uid types.UID
	replaced := func(*terraform.State) error {
		u, err := h.get("site-a")
		if err != nil {
			return err
		}
		if u.GetUID() == uid {
			return fmt.Errorf("the hub object was updated in place (uid %s), not replaced", uid)
		}
		uid = u.GetUID()
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{Config: ssdConfig(ws, siteA, "  approved = true\n"), Check: replaced},
			{
				Config: ssdConfig(ws, siteB, "  approved = false\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(ssdAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(replaced,
					h.checkSpec("site-a", map[string]any{"cluster": siteB, "siteNamespace": "simplyblock", "draftName": "site-draft", "approved": false})),
			},
			{
				Config: ssdConfig(ws, siteB, "  draft_name = \"second-draft\"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(ssdAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: replaced,
			},
		},
	})
}

// TestAccStorageSiteDeployment_badQuantity: a huge-page size that is not a Kubernetes quantity
// fails the plan, naming the attribute, and nothing reaches the hub.
func TestAccStorageSiteDeployment_badQuantity(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	h := newSSDHub(t, ws)
	var steps []resource.TestStep
	for _, bad := range []string{"8 gigs", "-8G", "8GB", ""} {
		steps = append(steps, resource.TestStep{
			Config:      ssdConfig(ws, "site", fmt.Sprintf("  sizing = { min_huge_pages_size = %q }\n", bad)),
			ExpectError: expectError("Invalid sizing.min_huge_pages_size", fmt.Sprintf("sizing.min_huge_pages_size = %q is not a Kubernetes quantity", bad)),
		})
	}
	steps = append(steps, resource.TestStep{
		PreConfig: func() {
			if err := h.checkGone(nil); err != nil {
				t.Error(err)
			}
		},
		Config: ssdConfig(ws, "site", "  sizing = { min_huge_pages_size = \"16Gi\" }\n"),
		Check:  h.checkSpec("site-a", map[string]any{"cluster": "site", "siteNamespace": "simplyblock", "draftName": "site-draft", "approved": false, "sizing": map[string]any{"minHugePagesSize": "16Gi"}}),
	})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, CheckDestroy: h.checkGone, Steps: steps})
}

// fakeSite stands in for the hub controller in the wait_for tests: whenever the object's
// generation is ahead of its status it writes status for the new generation.
func fakeSite(t *testing.T, h *ssdHub, name string, status map[string]any) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if u, err := h.get(name); err == nil {
				if g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); g != u.GetGeneration() {
					time.Sleep(time.Second) // the apply is already waiting
					_ = h.setStatus(name, status)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// TestAccStorageSiteDeployment_waitForDrafted: apply returns once the hub reports the draft, with
// its nodes in state; a failed site fails the apply with the hub's message; no controller at all
// fails with what to run.
func TestAccStorageSiteDeployment_waitForDrafted(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	site := newHubFixtures(t, ws).Usable("site")
	h := newSSDHub(t, ws)
	fakeSite(t, h, "site-a", map[string]any{"phase": "Drafted", "message": "Review the draft and approve.",
		"draft": map[string]any{"name": "site-draft", "phase": "Draft", "nodeRefs": []any{"w1", "w2"}}})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config: ssdConfig(ws, site, "  wait_for = \"drafted\"\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("phase"), knownvalue.StringExact("Drafted")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("draft", "node_refs"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("w1"), knownvalue.StringExact("w2")})),
				},
			},
			{
				// An update waits for the status of the new generation.
				Config: ssdConfig(ws, site, "  wait_for = \"drafted\"\n  sizing = { vcpu_count = 6 }\n"),
				Check: func(*terraform.State) error {
					u := h.mustGet("site-a")
					if g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); g != u.GetGeneration() {
						return fmt.Errorf("apply returned before the status of generation %d (status has %d)", u.GetGeneration(), g)
					}
					return nil
				},
			},
		},
	})

	t.Run("failed", func(t *testing.T) {
		ws := testWorkspace(t, kube)
		h := newSSDHub(t, ws)
		fakeSite(t, h, "site-a", map[string]any{"phase": "Failed", "message": "Worker w2 has no NVMe device."})
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6Providers,
			CheckDestroy:             h.checkGone,
			Steps: []resource.TestStep{{
				Config:      ssdConfig(ws, site, "  wait_for = \"online\"\n"),
				ExpectError: expectError("StorageSiteDeployment failed", "is Failed on site", "Worker w2 has no NVMe device."),
			}},
		})
	})

	t.Run("no controller", func(t *testing.T) {
		ws := testWorkspace(t, kube)
		h := newSSDHub(t, ws)
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6Providers,
			CheckDestroy:             h.checkGone,
			Steps: []resource.TestStep{{
				Config:      ssdConfig(ws, site, "  wait_for = \"drafted\"\n  timeouts {\n    create = \"3s\"\n  }\n"),
				ExpectError: expectError("No status from the hub", "fleet-controller hub"),
			}},
		})
	})
}

// TestAccStorageSiteDeployment_uuidFeedsAReference: with wait_for = "online" (the site stood in
// for by fakeSite), another resource of the same configuration gets the storage cluster's uuid
// and pool at apply, and a later update of the deployment does not re-plan it.
func TestAccStorageSiteDeployment_uuidFeedsAReference(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	site := newHubFixtures(t, ws).Usable("site")
	h := newSSDHub(t, ws)
	fakeSite(t, h, "site-a", onlineStatus)
	config := func(vcpus int) string {
		return ssdConfig(ws, site, fmt.Sprintf("  approved = true\n  wait_for = \"online\"\n  sizing = { vcpu_count = %d }\n", vcpus)) + `
resource "terraform_data" "storage_class" {
  input = {
    cluster_id = fleet_storage_site_deployment.s.storage_cluster.uuid
    pool_name  = fleet_storage_site_deployment.s.storage_cluster.pool
  }
}
`
	}
	sc := "terraform_data.storage_class"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				Config: config(4),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(sc, tfjsonpath.New("input").AtMapKey("cluster_id")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sc, tfjsonpath.New("output"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"cluster_id": knownvalue.StringExact("3f2b7c1e-uuid"), "pool_name": knownvalue.StringExact("pool-a")})),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("phase"), knownvalue.StringExact("Online")),
				},
			},
			{
				Config: config(8),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(ssdAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(sc, plancheck.ResourceActionNoop),
				}},
			},
		},
	})
}

// TestAccStorageSiteDeployment_waitForOnline runs the real path: a workload cluster joined to
// the suite's hub with OCM's real work agent, the hub controller's storage-site reconciler
// (in-process, limited to the test's namespaces) and the site simulator on the cluster, whose
// workers are w1 and w2. An approved deployment with wait_for = "online" applies once the site's
// storage cluster is Online, its uuid and pool in state and in the input of another resource of
// the configuration; a plan of the same configuration afterwards is empty.
func TestAccStorageSiteDeployment_waitForOnline(t *testing.T) {
	begin := time.Now()
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	fx := newHubFixtures(t, ws)
	fx.ClusterSet("sites") // the workspace may use its site (else the request is NotBound)
	cluster := fx.Cluster("site", "sites", nil)
	hc := accHubClient(t)
	site := joinAccFleet(t, hc, cluster)
	spoke, err := client.New(site.Config, client.Options{Scheme: sitesim.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	simLogs := &syncBuffer{}
	stopSim, err := sitesim.Start(t.Context(), site.Config, sitesim.Options{StepDelay: 200 * time.Millisecond, Logger: zap.New(zap.WriteTo(simLogs))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopSim() })
	if err := sitesim.CreateNodes(t.Context(), spoke, sitesim.Node{Name: "w1"}, sitesim.Node{Name: "w2"}); err != nil {
		t.Fatal(err)
	}
	runHubReconcilers(t, []string{ws, cluster}, "storage-site")
	h := newSSDHub(t, ws)
	t.Cleanup(func() {
		if t.Failed() {
			if u, err := h.get("site-a"); err == nil {
				t.Logf("StorageSiteDeployment status: %v", u.Object["status"])
			}
			t.Logf("work agent log:\n%s\nsite simulator log:\n%s", site.AgentLog(), simLogs.String())
		}
	})
	t.Logf("workload cluster %s, simulator and storage-site reconciler up in %v", cluster, time.Since(begin).Round(time.Millisecond))

	config := ssdConfig(ws, cluster, "  approved = true\n  wait_for = \"online\"\n  sizing = { name = \"sc-acc\", vcpu_count = 4 }\n") + `
resource "terraform_data" "storage_class" {
  input = {
    cluster_id = fleet_storage_site_deployment.s.storage_cluster.uuid
    pool_name  = fleet_storage_site_deployment.s.storage_cluster.pool
  }
}
`
	sc := "terraform_data.storage_class"
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	var applied time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { applied = time.Now() },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("phase"), knownvalue.StringExact("Online")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster", "uuid"), knownvalue.StringRegexp(uuid)),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster", "pool"), knownvalue.StringExact("pool-sc-acc")),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("storage_cluster", "nodes"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue(ssdAddr, ssdValue("draft", "node_refs"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("w1"), knownvalue.StringExact("w2")})),
					statecheck.ExpectKnownValue(sc, tfjsonpath.New("output").AtMapKey("pool_name"), knownvalue.StringExact("pool-sc-acc")),
					statecheck.CompareValuePairs(sc, tfjsonpath.New("output").AtMapKey("cluster_id"), ssdAddr, ssdValue("storage_cluster", "uuid"), compare.ValuesSame()),
				},
				Check: func(*terraform.State) error {
					t.Logf("the step's plan and apply (which waits for Online) took %v", time.Since(applied).Round(time.Millisecond))
					return nil
				},
			},
			{
				// Nothing drifts once Online.
				Config:   config,
				PlanOnly: true,
			},
		},
	})
	t.Logf("TestAccStorageSiteDeployment_waitForOnline: %v in all", time.Since(begin).Round(time.Millisecond))
}

// TestAccStorageSiteDeploymentDataSource reads a deployment nobody manages with Terraform, with
// the status a site reported.
func TestAccStorageSiteDeploymentDataSource(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	h := newSSDHub(t, ws)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": storageSiteDeploymentKind.APIVersion(), "kind": storageSiteDeploymentKind.Kind,
		"metadata": map[string]any{"name": "console-made", "namespace": ws},
		"spec": map[string]any{"cluster": "edge-9", "approved": true, "discover": map[string]any{"enableControlPlaneNodes": true},
			"sizing": map[string]any{"maxSubsystemCount": 64, "enableJournalDevice": true}},
	}}
	if _, err := h.ri.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.mustSetStatus("console-made", onlineStatus)
	ds := "data.fleet_storage_site_deployment.x"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf("data \"fleet_storage_site_deployment\" \"x\" {\n  name      = \"console-made\"\n  workspace = %q\n}\n", ws),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ds, ssdValue("id"), knownvalue.StringExact(ws+"/console-made")),
					statecheck.ExpectKnownValue(ds, ssdValue("cluster"), knownvalue.StringExact("edge-9")),
					statecheck.ExpectKnownValue(ds, ssdValue("site_namespace"), knownvalue.StringExact("simplyblock")),
					statecheck.ExpectKnownValue(ds, ssdValue("approved"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(ds, ssdValue("discover", "enable_control_plane_nodes"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(ds, ssdValue("sizing", "max_subsystem_count"), knownvalue.Int64Exact(64)),
					statecheck.ExpectKnownValue(ds, ssdValue("sizing", "vcpu_count"), knownvalue.Null()),
					statecheck.ExpectKnownValue(ds, ssdValue("phase"), knownvalue.StringExact("Online")),
					statecheck.ExpectKnownValue(ds, ssdValue("storage_cluster", "uuid"), knownvalue.StringExact("3f2b7c1e-uuid")),
					statecheck.ExpectKnownValue(ds, ssdValue("storage_cluster", "pool"), knownvalue.StringExact("pool-a")),
					statecheck.ExpectKnownValue(ds, ssdValue("storage_cluster", "nodes", 0, "name"), knownvalue.StringExact("sn-w1")),
					statecheck.ExpectKnownValue(ds, ssdValue("draft", "phase"), knownvalue.StringExact("Expanded")),
				},
			},
			{
				Config:      fmt.Sprintf("data \"fleet_storage_site_deployment\" \"x\" {\n  name      = \"nowhere\"\n  workspace = %q\n}\n", ws),
				ExpectError: expectError("StorageSiteDeployment not found", ws+"/nowhere"),
			},
		},
	})
}

// TestAccStorageSiteDeploymentPlanWarnings checks the warnings the CLI shows: the orphaning
// replacement, approving before the hub reports Drafted (naming the phase), a cluster that is
// not on the hub, and destroying.
func TestAccStorageSiteDeploymentPlanWarnings(t *testing.T) {
	w := newCLIWorkdir(t)
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	siteA, siteB := f.Usable("site-a"), f.Usable("site-b")
	h := newSSDHub(t, ws)
	const (
		replaced    = "StorageSiteDeployment replaced: the site's storage is orphaned"
		notDrafted  = "Approving a deployment that is not Drafted"
		notOnHub    = "Site not on the hub"
		destroyWarn = "The site's storage stays"
	)
	all := []string{replaced, notDrafted, notOnHub, destroyWarn}
	expect := func(step string, got []cliDiag, failed bool, want map[string][]string) {
		t.Helper()
		expectWarnings(t, step, got, failed, all, want)
	}
	config := func(cluster, body string) string { return ssdConfig(ws, cluster, body) }

	d, failed := w.plan(config(siteA, "  approved = true\n"))
	expect("create approved", d, failed, map[string][]string{notDrafted: {ws + "/site-a", "not on the hub yet", "wait_for = \"drafted\""}})

	w.apply(config(siteA, ""))
	d, failed = w.plan(config(siteB, ""))
	expect("cluster changed", d, failed, map[string][]string{replaced: {"Changing cluster from \"" + siteA + "\" to \"" + siteB + "\"", ws + "/site-a", "orphaned"}})
	d, failed = w.plan(config(siteA, "  draft_name = \"other\"\n"))
	expect("draft_name changed", d, failed, map[string][]string{replaced: {"Changing draft_name from \"site-draft\" to \"other\"", "site " + "\"" + siteA + "\""}})
	d, failed = w.plan(config("not-registered", ""))
	expect("cluster not on the hub", d, failed, map[string][]string{replaced: {"orphaned"}, notOnHub: {"\"not-registered\", which is not a ManagedCluster"}})

	h.mustSetStatus("site-a", map[string]any{"phase": "Discovering"})
	d, failed = w.plan(config(siteA, "  approved = true\n"))
	expect("approve while Discovering", d, failed, map[string][]string{notDrafted: {"reports it phase Discovering, not Drafted"}})

	h.mustSetStatus("site-a", map[string]any{"phase": "Drafted"})
	d, failed = w.plan(config(siteA, "  approved = true\n"))
	expect("approve while Drafted", d, failed, nil)
	w.apply(config(siteA, "  approved = true\n"))

	// Once approved, an unchanged plan warns of nothing.
	d, failed = w.plan(config(siteA, "  approved = true\n"))
	expect("approved, unchanged", d, failed, nil)

	w.write(config(siteA, "  approved = true\n"))
	d, failed = w.diags("plan", "-destroy")
	expect("destroy", d, failed, map[string][]string{destroyWarn: {ws + "/site-a", "orphaned"}})
	w.destroy()
	if _, err := h.get("site-a"); !apierrors.IsNotFound(err) {
		t.Errorf("after destroy: %v, want NotFound", err)
	}
}

// TestAccStorageSiteDeployment_planUnknowns: an update plans unknown only what it can alter.
// With a draft waiting for review, a change of the timeouts alone keeps the whole draft known and
// the storage cluster null (no approval, none to come); a sizing change leaves the template, the
// draft's phase and message unknown and the discovery's nodes known; a template that does not
// show the sizing yet stays unknown; approving leaves the draft's approval and phase and the
// storage cluster unknown, its nodes and template known; a new discovery leaves the draft unknown.
func TestAccStorageSiteDeployment_planUnknowns(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	site := newHubFixtures(t, ws).Usable("site")
	h := newSSDHub(t, ws)
	config := func(vcpus int, extra string) string {
		return ssdConfig(ws, site, fmt.Sprintf("  discover = { workers = [\"w1\", \"w2\"] }\n  sizing = { vcpu_count = %d, min_huge_pages_size = \"8G\" }\n%s", vcpus, extra))
	}
	drafted := func(vcpus int, approved bool) map[string]any {
		return map[string]any{"phase": "Drafted", "message": "Review the draft and approve.",
			"draft": map[string]any{"name": "site-draft", "phase": "Draft", "message": "valid", "approved": approved, "nodeRefs": []any{"w1", "w2"},
				"cluster":  map[string]any{"name": "a", "vcpuCount": vcpus, "minHugePagesSize": "8G", "maxSubsystemCount": 32},
				"nodeSets": []any{map[string]any{"name": "set-0", "groups": []any{map[string]any{"name": "g0", "workers": []any{"w1", "w2"}, "devices": map[string]any{"nvme": []any{"0000:00:04.0"}}}}}}}}
	}
	nodeRefs := knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("w1"), knownvalue.StringExact("w2")})
	known := func(v knownvalue.Check, path ...any) plancheck.PlanCheck {
		return plancheck.ExpectKnownValue(ssdAddr, ssdValue(path...), v)
	}
	unknown := func(path ...any) plancheck.PlanCheck { return plancheck.ExpectUnknownValue(ssdAddr, ssdValue(path...)) }
	update := func(checks ...plancheck.PlanCheck) resource.ConfigPlanChecks {
		return resource.ConfigPlanChecks{PreApply: append([]plancheck.PlanCheck{plancheck.ExpectResourceAction(ssdAddr, plancheck.ResourceActionUpdate)}, checks...)}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             h.checkGone,
		Steps: []resource.TestStep{
			{Config: config(4, "")},
			{
				PreConfig: func() { h.mustSetStatus("site-a", drafted(4, false)) },
				Config:    config(4, "  timeouts {\n    update = \"1m\"\n  }\n"),
				ConfigPlanChecks: update(
					known(knownvalue.StringExact("site-draft"), "draft", "name"),
					known(knownvalue.StringExact("Draft"), "draft", "phase"),
					known(knownvalue.StringExact("valid"), "draft", "message"),
					known(knownvalue.Bool(false), "draft", "approved"),
					known(knownvalue.Int64Exact(4), "draft", "cluster", "vcpu_count"),
					known(knownvalue.Int64Exact(32), "draft", "cluster", "max_subsystem_count"),
					known(nodeRefs, "draft", "node_refs"),
					known(knownvalue.StringExact("0000:00:04.0"), "draft", "node_sets", 0, "groups", 0, "devices", "nvme", 0),
					known(knownvalue.Null(), "storage_cluster"),
				),
			},
			{
				Config: config(8, ""),
				ConfigPlanChecks: update(
					unknown("draft", "cluster"), unknown("draft", "phase"), unknown("draft", "message"),
					known(nodeRefs, "draft", "node_refs"),
					known(knownvalue.Bool(false), "draft", "approved"),
					known(knownvalue.Null(), "storage_cluster"),
				),
			},
			{
				// The draft does not show the new sizing yet: its template stays unknown.
				Config:           config(8, "  timeouts {\n    update = \"2m\"\n  }\n"),
				ConfigPlanChecks: update(unknown("draft", "cluster"), known(nodeRefs, "draft", "node_refs"), known(knownvalue.StringExact("Draft"), "draft", "phase")),
			},
			{
				PreConfig: func() { h.mustSetStatus("site-a", drafted(8, false)) },
				Config:    config(8, "  approved = true\n"),
				ConfigPlanChecks: update(
					unknown("draft", "approved"), unknown("draft", "phase"), unknown("storage_cluster"),
					known(knownvalue.Int64Exact(8), "draft", "cluster", "vcpu_count"),
					known(nodeRefs, "draft", "node_refs"),
				),
			},
			{
				Config:           ssdConfig(ws, site, "  discover = { workers = [\"w1\", \"w2\", \"w3\"] }\n  sizing = { vcpu_count = 8, min_huge_pages_size = \"8G\" }\n  approved = true\n"),
				ConfigPlanChecks: update(unknown("draft"), unknown("storage_cluster")),
			},
		},
	})
}
