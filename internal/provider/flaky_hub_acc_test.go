package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// chartObject is a FleetChart as fleet_chart writes it for repository charts/<name>.
func chartObject(ws, name, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"repository": "charts/" + name, "version": version}}}
	u.SetNamespace(ws)
	u.SetName(name)
	u.SetLabels(map[string]string{hub.ManagedByLabel: DefaultFieldManager})
	return u
}

func chartConfig(ws, name, version string) string {
	return fmt.Sprintf(`
resource "fleet_chart" %[2]q {
  name       = %[2]q
  workspace  = %[1]q
  repository = "charts/%[2]s"
  version    = %[3]q
}
`, ws, name, version)
}

// TestAccAdoptLostCreate: a FleetChart that this provider's create left on the hub without its
// answer (same label, field manager and spec, written out of band here as the provider writes
// it) is taken over by the next apply, with no write; one with another spec, or written by
// another field manager, stays an "already exists" error.
func TestAccAdoptLostCreate(t *testing.T) {
	cfg := testRESTConfig(t)
	ws := testWorkspace(t, testHub(t))
	ctx := t.Context()
	ours, err := hub.NewClient(cfg, DefaultFieldManager)
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := hub.NewClient(cfg, "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	left, err := ours.Apply(ctx, fleetChartKind, chartObject(ws, "left", "0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ours.Apply(ctx, fleetChartKind, chartObject(ws, "changed", "0.2.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectl.Apply(ctx, fleetChartKind, chartObject(ws, "foreign", "0.1.0")); err != nil {
		t.Fatal(err)
	}

	unchanged := func(*terraform.State) error {
		got, err := ours.Get(context.Background(), fleetChartKind, ws, "left")
		if err != nil {
			return err
		}
		if got.GetResourceVersion() != left.GetResourceVersion() {
			return fmt.Errorf("FleetChart left: resourceVersion %s, want %s: adopting it wrote to the hub", got.GetResourceVersion(), left.GetResourceVersion())
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: chartConfig(ws, "left", "0.1.0"),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("fleet_chart.left", "id", ws+"/left"),
					resource.TestCheckResourceAttr("fleet_chart.left", "version", "0.1.0"),
					unchanged,
				),
			},
			{
				Config: chartConfig(ws, "left", "0.1.0") + chartConfig(ws, "changed", "0.1.0"),
				ExpectError: expectError(fmt.Sprintf("FleetChart %s/changed already exists", ws),
					"The hub already has this object, and it is not what an earlier create of this resource left: its spec differs from this configuration's."),
			},
			{
				Config: chartConfig(ws, "left", "0.1.0") + chartConfig(ws, "foreign", "0.1.0"),
				ExpectError: expectError(fmt.Sprintf("FleetChart %s/foreign already exists", ws),
					`it is not what an earlier create of this resource left: field manager "kubectl" owns its metadata.labels.`),
			},
			{
				Config: chartConfig(ws, "left", "0.1.0"),
				Check:  unchanged,
			},
		},
	})
}

// TestAccAdoptLostCreatePlan: the plan of a create that the hub already holds as an earlier
// create of this resource left it (the object TestAccAdoptLostCreate adopts) shows no "already
// on the hub" warning, since apply takes it over; one whose spec differs keeps the warning, which
// says apply fails unless this plan destroys it first. The CLI shows the diagnostics.
func TestAccAdoptLostCreatePlan(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	ours, err := hub.NewClient(testRESTConfig(t), DefaultFieldManager)
	if err != nil {
		t.Fatal(err)
	}
	for name, version := range map[string]string{"left": "0.1.0", "changed": "0.2.0"} {
		if _, err := ours.Apply(t.Context(), fleetChartKind, chartObject(ws, name, version)); err != nil {
			t.Fatal(err)
		}
	}
	const taken = "FleetChart already on the hub"
	d, failed := w.plan(chartConfig(ws, "left", "0.1.0"))
	expectWarnings(t, "left by a lost create", d, failed, []string{taken}, nil)
	d, failed = w.plan(chartConfig(ws, "changed", "0.1.0"))
	expectWarnings(t, "another spec", d, failed, []string{taken}, map[string][]string{taken: {"FleetChart " + ws + "/changed is on the hub and managed by Terraform"}})
	// The plan is what apply does: left is taken over, with no warning.
	if got := only(w.apply(chartConfig(ws, "left", "0.1.0")), taken); len(got) != 0 {
		t.Errorf("apply: %v, want no %q", got, taken)
	}
}

// TestAccFaultHubRestartDuringApply kills the hub's kube-apiserver and etcd (SIGKILL: answers in
// flight are lost, their writes may be committed) while tofu or terraform applies 30 FleetCharts,
// and starts them again with their data. With a request_timeout longer than the outage the apply
// rides it out; with a shorter one it fails, and the next apply converges with no manual step.
// Either way the hub then holds the 30 charts exactly once, as state does, and the next plan is
// empty. The hub is this test's own: the shared one is not hurt.
func TestAccFaultHubRestartDuringApply(t *testing.T) {
	testRESTConfig(t) // skips without TF_ACC
	h := testbed.StartT(t)
	t.Setenv("TF_CLI_ARGS_apply", "-parallelism=3")
	const n = 30
	cases := []struct {
		name           string
		requestTimeout string
		down           time.Duration
		firstFails     bool
	}{
		{"the apply rides out the restart", "90s", 0, false},
		{"the next apply converges", "2s", 3 * time.Second, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := fmt.Sprintf("restart-%d", i)
			if _, err := kubernetes.NewForConfigOrDie(h.Config).CoreV1().Namespaces().Create(t.Context(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			config := fmt.Sprintf("provider \"fleet\" {\n  config_path     = %q\n  request_timeout = %q\n}\n", h.Kubeconfig, tc.requestTimeout)
			for j := range n {
				config += chartConfig(ws, fmt.Sprintf("c%02d", j), "0.1.0")
			}
			var restarted <-chan string
			start := time.Now()
			first := resource.TestStep{
				PreConfig: func() { start, restarted = time.Now(), restartWhen(t, h, ws, 3, tc.down) },
				Config:    config,
			}
			second := resource.TestStep{
				PreConfig: func() {
					t.Logf("first apply ended after %s; %s", time.Since(start).Round(time.Millisecond), <-restarted)
					if l, err := dynamic.NewForConfigOrDie(h.Config).Resource(fleetChartKind.GroupVersionResource).Namespace(ws).List(t.Context(), metav1.ListOptions{}); err == nil {
						t.Logf("the hub holds %d of the %d charts before the next apply", len(l.Items), n)
					}
					start = time.Now()
				},
				Config: config,
				Check:  chartsMatchState(h.Config, ws, n),
			}
			if tc.firstFails {
				first.ExpectError = expectError("Cannot", "hub unreachable at")
			} else {
				first.Check = chartsMatchState(h.Config, ws, n)
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Providers,
				Steps:                    []resource.TestStep{first, second},
			})
			t.Logf("second apply and its empty plan took %s", time.Since(start).Round(time.Millisecond))
		})
	}
}

// restartWhen restarts h (down for down) as soon as the workspace holds at least `after`
// FleetCharts, and then sends what happened.
func restartWhen(t *testing.T, h *testbed.Hub, ws string, after int, down time.Duration) <-chan string {
	out := make(chan string, 1)
	cfg := rest.CopyConfig(h.Config)
	cfg.Timeout = time.Second
	charts := dynamic.NewForConfigOrDie(cfg).Resource(fleetChartKind.GroupVersionResource).Namespace(ws)
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			l, err := charts.List(context.Background(), metav1.ListOptions{})
			if err == nil && len(l.Items) >= after {
				d, err := h.Restart(context.Background(), down)
				out <- fmt.Sprintf("the hub was killed with %d charts written and unreachable for %s (err %v)", len(l.Items), d.Round(time.Millisecond), err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		out <- "the apply wrote no chart within 2 minutes: the hub was not restarted"
	}()
	t.Cleanup(func() { <-done }) // the hub is up again before the test stops it
	return out
}

// chartsMatchState checks that the workspace holds exactly the n FleetCharts of state, each once
// and managed by this provider.
func chartsMatchState(cfg *rest.Config, ws string, n int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		l, err := dynamic.NewForConfigOrDie(cfg).Resource(fleetChartKind.GroupVersionResource).Namespace(ws).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var onHub, inState []string
		for _, o := range l.Items {
			if o.GetLabels()[hub.ManagedByLabel] != DefaultFieldManager {
				return fmt.Errorf("FleetChart %s is not labelled as this provider's", o.GetName())
			}
			onHub = append(onHub, o.GetName())
		}
		for addr, rs := range s.RootModule().Resources {
			if strings.HasPrefix(addr, "fleet_chart.") {
				inState = append(inState, rs.Primary.Attributes["name"])
			}
		}
		slices.Sort(onHub)
		slices.Sort(inState)
		if len(onHub) != n || !slices.Equal(onHub, inState) {
			return fmt.Errorf("hub holds %d FleetCharts %v, state %d %v: want the same %d", len(onHub), onHub, len(inState), inState, n)
		}
		return nil
	}
}
