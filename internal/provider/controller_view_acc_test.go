package provider

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// TestAccDataSources_controllerView: fleet_oci_chain and fleet_oci_routing show the provider's own
// resolution without `fleet-controller hub`, and what the controller reports once it runs
// (in-process here), including where the two differ: a registry deleted or a route pointed at a
// missing registry out of band, so that the controller keeps the last good chain. It assumes no
// other controller serves the hub.
func TestAccDataSources_controllerView(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("fleet")
	f.Cluster("eu-1", "fleet", map[string]string{"region": "eu"})
	f.Cluster("eu-2", "fleet", map[string]string{"region": "eu"})
	f.Cluster("lab", "fleet", nil)
	f.Cluster("us", "fleet", map[string]string{"region": "us"})
	f.Registry("source", "source", "source.example.com/fleet")
	f.Registry("mirror-eu", "mirror", "mirror-eu.example.com/fleet")
	f.Registry("legacy", "mirror", "legacy.example.com/fleet")
	f.Route("eu", map[string]any{"priority": 10, "clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"region": "eu"}}},
		"registries": []any{"mirror-eu", "source"}, "replicationWait": "10m"})
	f.Route("lab", map[string]any{"priority": 5, "clusterNames": []any{f.Name("lab")}, "registries": []any{"legacy"}})
	f.Route("fallback", map[string]any{"priority": 1000, "default": true, "registries": []any{"source"}})
	hc := newControllerHub(t, kube, f, "eu-1", "eu-2", "lab", "us")

	// The kind check the data sources rely on, on a real API server: a kind it does not serve.
	cl, err := hub.NewClient(testRESTConfig(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	notServed := hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("nosuchkinds"), Kind: "NoSuchKind"}
	if _, served, err := listServed(context.Background(), cl.Live(), notServed, ws); served || err != nil {
		t.Fatalf("listing a kind the hub does not serve: served %v, error %v; want not served and no error", served, err)
	}
	if _, served, err := listServed(context.Background(), cl.Live(), clusterStorageKind, ws); !served || err != nil {
		t.Fatalf("listing ClusterOCIStorages: served %v, error %v", served, err)
	}

	cfg := fmt.Sprintf(`
data "fleet_oci_chain" "eu" {
  workspace = %[1]q
  cluster   = %[2]q
}

data "fleet_oci_chain" "lab" {
  workspace = %[1]q
  cluster   = %[3]q
}

data "fleet_oci_chain" "us" {
  workspace = %[1]q
  cluster   = %[4]q
}

data "fleet_oci_routing" "ws" {
  workspace = %[1]q
}
`, ws, f.Name("eu-1"), f.Name("lab"), f.Name("us"))

	reg := func(name, reference, role string) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name": knownvalue.StringExact(name), "reference": knownvalue.StringExact(reference), "role": knownvalue.StringExact(role),
			"reachability": knownvalue.Null(), "probed_at": knownvalue.Null(), // no agent probes here
		})
	}
	gone := func(name string) knownvalue.Check { // a registry whose Secret is not on the hub
		return knownvalue.ObjectExact(map[string]knownvalue.Check{"name": knownvalue.StringExact(name), "reference": knownvalue.Null(), "role": knownvalue.Null(),
			"reachability": knownvalue.Null(), "probed_at": knownvalue.Null()})
	}
	mirrorEU, source := reg("mirror-eu", "mirror-eu.example.com/fleet", "mirror"), reg("source", "source.example.com/fleet", "source")
	chain := func(ds, resolvedBy, route, matchedBy, wait string, delivery knownvalue.Check, registries ...knownvalue.Check) []statecheck.StateCheck {
		addr := "data.fleet_oci_chain." + ds
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("resolved_by"), knownvalue.StringExact(resolvedBy)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("route"), knownvalue.StringExact(route)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("matched_by"), knownvalue.StringExact(matchedBy)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("replication_wait"), knownvalue.StringExact(wait)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("registries"), knownvalue.ListExact(registries)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("delivery"), delivery),
		}
	}
	// No work agent runs on this hub: the controller writes each chain and says it is not applied.
	delivered := func(_, cluster string) knownvalue.Check {
		return knownvalue.StringExact(fmt.Sprintf(`waiting for the cluster's work agent to apply ManifestWork %s/%s (the work agent has not reported it yet)`, f.Name(cluster), controller.WorkName(ws)))
	}
	kept := func(route, missing, chain string) knownvalue.Check {
		return knownvalue.StringExact(fmt.Sprintf(`route %q names registry %q, which cannot be used; the chain delivered before (%s) stays in place`, route, missing, chain))
	}
	type routeWant struct {
		name     string
		clusters []string
		ready    knownvalue.Check // ready and status: both null, or a bool and "<reason>: <message>"
		status   knownvalue.Check
		matched  int64
	}
	noStatus := []knownvalue.Check{knownvalue.Null(), knownvalue.Null()}
	isReady := func(n int) []knownvalue.Check {
		return []knownvalue.Check{knownvalue.Bool(true), knownvalue.StringExact(fmt.Sprintf("Ready: %d %s to this route", n, map[bool]string{true: "cluster resolves", false: "clusters resolve"}[n == 1]))}
	}
	notFound := func(registry string) []knownvalue.Check {
		return []knownvalue.Check{knownvalue.Bool(false), knownvalue.StringExact(fmt.Sprintf(
			`RegistryNotFound: spec.registries names %q, which is not a registry Secret in this namespace; create it (fleet_oci_registry) or remove it from the chain`, registry))}
	}
	route := func(name string, status []knownvalue.Check, matched int64, clusters ...string) routeWant {
		return routeWant{name, clusters, status[0], status[1], matched}
	}
	routing := func(resolvedBy string, routes ...routeWant) []statecheck.StateCheck {
		var rs []knownvalue.Check
		for _, r := range routes {
			var cs []knownvalue.Check
			for _, c := range r.clusters {
				cs = append(cs, knownvalue.StringExact(f.Name(c)))
			}
			rs = append(rs, knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"name": knownvalue.StringExact(r.name), "clusters": knownvalue.ListExact(cs),
				"ready": r.ready, "status": r.status, "matched_clusters": knownvalue.Int64Exact(r.matched),
			}))
		}
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.fleet_oci_routing.ws", tfjsonpath.New("resolved_by"), knownvalue.StringExact(resolvedBy)),
			statecheck.ExpectKnownValue("data.fleet_oci_routing.ws", tfjsonpath.New("routes"), knownvalue.ListExact(rs)),
		}
	}
	checks := func(groups ...[]statecheck.StateCheck) []statecheck.StateCheck {
		var out []statecheck.StateCheck
		for _, g := range groups {
			out = append(out, g...)
		}
		return out
	}
	labChain := func(delivery knownvalue.Check, registries ...knownvalue.Check) []statecheck.StateCheck {
		return chain("lab", "controller", "lab", "cluster_names", "0s", delivery, registries...)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				// No controller: the provider's own resolution, and no route status.
				Config: cfg,
				ConfigStateChecks: checks(
					chain("eu", "provider", "eu", "cluster_selectors[0]", "10m", knownvalue.Null(), mirrorEU, source),
					chain("lab", "provider", "lab", "cluster_names", "0s", knownvalue.Null(), reg("legacy", "legacy.example.com/fleet", "mirror")),
					chain("us", "provider", "fallback", "default", "0s", knownvalue.Null(), source),
					routing("provider",
						route("lab", noStatus, 1, "lab"), route("eu", noStatus, 2, "eu-1", "eu-2"), route("fallback", noStatus, 1, "us")),
				),
			},
			{
				// The controller runs: what it delivered, and each route's Ready condition.
				PreConfig: func() {
					hc.start()
					hc.converged(func(r *v1alpha1.OCIStorageRoute) error { return nil }, "eu-1", "eu-2", "lab", "us")
				},
				Config: cfg,
				ConfigStateChecks: checks(
					chain("eu", "controller", "eu", "cluster_selectors[0]", "10m", delivered("eu", "eu-1"), mirrorEU, source),
					chain("lab", "controller", "lab", "cluster_names", "0s", delivered("lab", "lab"), reg("legacy", "legacy.example.com/fleet", "mirror")),
					chain("us", "controller", "fallback", "default", "0s", delivered("fallback", "us"), source),
					routing("controller",
						route("lab", isReady(1), 1, "lab"), route("eu", isReady(2), 2, "eu-1", "eu-2"), route("fallback", isReady(1), 1, "us")),
				),
			},
			{
				// The lab route's only registry is deleted out of band: the controller keeps the
				// chain it delivered, and the route is not ready.
				PreConfig: func() {
					if err := kube.CoreV1().Secrets(ws).Delete(context.Background(), "legacy", metav1.DeleteOptions{}); err != nil {
						t.Fatalf("delete registry Secret legacy: %v", err)
					}
					hc.converged(hc.routeReady("lab", metav1.ConditionFalse, v1alpha1.ReasonRegistryNotFound))
					hc.clusterReady("lab", v1alpha1.ReasonLastGoodChainKept)
				},
				Config: cfg,
				ConfigStateChecks: checks(
					labChain(kept("lab", "legacy", "legacy"), gone("legacy")),
					routing("controller",
						route("lab", notFound("legacy"), 1, "lab"), route("eu", isReady(2), 2, "eu-1", "eu-2"), route("fallback", isReady(1), 1, "us")),
				),
			},
			{
				// The EU route now names a registry that does not exist (and another wait): the
				// provider would resolve mirror-next, source and 15m; the EU clusters still have the
				// chain delivered before, and its wait as the route spelt it then (10m).
				PreConfig: func() {
					f.PatchRoute("eu", `{"spec":{"registries":["mirror-next","source"],"replicationWait":"15m"}}`)
					hc.converged(hc.routeReady("eu", metav1.ConditionFalse, v1alpha1.ReasonRegistryNotFound))
					hc.clusterReady("eu-1", v1alpha1.ReasonLastGoodChainKept)
				},
				Config: cfg,
				ConfigStateChecks: checks(
					chain("eu", "controller", "eu", "cluster_selectors[0]", "10m", kept("eu", "mirror-next", "mirror-eu, source"), mirrorEU, source),
					chain("us", "controller", "fallback", "default", "0s", delivered("fallback", "us"), source),
					routing("controller",
						route("lab", notFound("legacy"), 1, "lab"), route("eu", notFound("mirror-next"), 2, "eu-1", "eu-2"), route("fallback", isReady(1), 1, "us")),
				),
			},
			{
				// The controller stops and a route changes: its status no longer describes its spec,
				// so the routing is the provider's again and that route has no status. The clusters'
				// chains are still those the controller delivered. (Read at once: no waiting for a
				// controller that is gone.)
				PreConfig: func() {
					hc.stop()
					f.PatchRoute("fallback", `{"spec":{"priority":900}}`)
				},
				Config: strings.ReplaceAll(cfg, "  workspace = ", "  wait_for_controller = \"0s\"\n  workspace = "),
				ConfigStateChecks: checks(
					chain("us", "controller", "fallback", "default", "0s", delivered("fallback", "us"), source),
					routing("provider",
						route("lab", notFound("legacy"), 1, "lab"), route("eu", notFound("mirror-next"), 2, "eu-1", "eu-2"), route("fallback", noStatus, 1, "us")),
				),
			},
		},
	})
}

// controllerHub runs `fleet-controller hub`'s routing reconciler in-process for one test, its
// cache narrowed to the test's workspace and cluster namespaces so that it leaves the other
// tests' workspaces alone (HubOptions has no such setting).
type controllerHub struct {
	t        *testing.T
	c        client.Client
	ws       string
	clusters map[string]string // short name → cluster (and its namespace)
	mgr      ctrl.Manager
	logs     syncBuffer

	cancel context.CancelFunc
	done   chan error
}

func newControllerHub(t *testing.T, kube kubernetes.Interface, f *hubFixtures, clusters ...string) *controllerHub {
	t.Helper()
	cfg := testRESTConfig(t)
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	h := &controllerHub{t: t, c: c, ws: f.ws, clusters: map[string]string{}}
	namespaces := map[string]cache.Config{f.ws: {}}
	for _, short := range clusters {
		// The controller delivers each chain in a ManifestWork in the cluster's namespace.
		cl := f.Name(short)
		_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cl}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create cluster namespace %s: %v", cl, err)
		}
		namespaces[cl] = cache.Config{}
		h.clusters[short] = cl
	}
	opts := controller.CacheOptions()
	opts.DefaultNamespaces = namespaces
	h.mgr, err = ctrl.NewManager(cfg, ctrl.Options{
		Scheme: controller.Scheme(), Cache: opts,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:     zap.New(zap.WriteTo(&h.logs)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Setup(h.mgr, []string{"routing"}, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("controller log:\n%s", h.logs.String())
		}
	})
	return h
}

func (h *controllerHub) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.mgr.Start(ctx) }()
}

func (h *controllerHub) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("controller: %v", err)
	}
	h.cancel = nil
}

// converged waits until every route's status describes its current spec and passes check, and
// the named clusters (short names) have a ClusterOCIStorage with a Ready condition.
func (h *controllerHub) converged(check func(*v1alpha1.OCIStorageRoute) error, clusters ...string) {
	h.t.Helper()
	h.eventually("the controller to catch up with workspace "+h.ws, func(ctx context.Context) error {
		var routes v1alpha1.OCIStorageRouteList
		if err := h.c.List(ctx, &routes, client.InNamespace(h.ws)); err != nil {
			return err
		}
		for i := range routes.Items {
			r := &routes.Items[i]
			if r.Status.ObservedGeneration != r.Generation || meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition) == nil {
				return fmt.Errorf("route %s: status of generation %d, spec of %d", r.Name, r.Status.ObservedGeneration, r.Generation)
			}
			if err := check(r); err != nil {
				return err
			}
		}
		for _, cl := range clusters {
			if err := h.storageReady(ctx, cl, ""); err != nil {
				return err
			}
		}
		return nil
	})
}

// routeReady checks that the named route's Ready condition has status and reason.
func (h *controllerHub) routeReady(name string, status metav1.ConditionStatus, reason string) func(*v1alpha1.OCIStorageRoute) error {
	return func(r *v1alpha1.OCIStorageRoute) error {
		if r.Name != name {
			return nil
		}
		if c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition); c.Status != status || c.Reason != reason {
			return fmt.Errorf("route %s: Ready %s/%s, want %s/%s", name, c.Status, c.Reason, status, reason)
		}
		return nil
	}
}

// clusterReady waits until the cluster's ClusterOCIStorage has a Ready condition with reason.
func (h *controllerHub) clusterReady(short, reason string) {
	h.t.Helper()
	h.eventually("ClusterOCIStorage "+short+" "+reason, func(ctx context.Context) error { return h.storageReady(ctx, short, reason) })
}

func (h *controllerHub) storageReady(ctx context.Context, short, reason string) error {
	var s v1alpha1.ClusterOCIStorage
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.ws, Name: h.clusters[short]}, &s); err != nil {
		return err
	}
	c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
	if c == nil || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("ClusterOCIStorage %s: Ready %+v, want reason %q", s.Name, c, reason)
	}
	return nil
}

func (h *controllerHub) eventually(what string, check func(context.Context) error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("waiting for %s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the controller's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccDataSources_waitForController: a route changed in an apply and the chain and routing
// data sources read after it in the same apply show what the controller delivered for the new
// spec, not the chain of the apply before: they wait for the route's status to catch up. With
// wait_for_controller = "0s" and the controller stopped they read at once, and warn when a
// wait ends before the controller has reported.
func TestAccDataSources_waitForController(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("fleet")
	f.Cluster("eu-1", "fleet", nil)
	f.Registry("source", "source", "source.example.com/fleet")
	f.Registry("mirror-a", "mirror", "mirror-a.example.com/fleet")
	f.Registry("mirror-b", "mirror", "mirror-b.example.com/fleet")
	hc := newControllerHub(t, kube, f, "eu-1")
	hc.start()

	cfg := func(mirror, wait string) string {
		return routeConfig(ws, "eu", fmt.Sprintf(`  priority      = 10
  cluster_names = [%q]
  registries    = [%q, "source"]`, f.Name("eu-1"), mirror)) + fmt.Sprintf(`
data "fleet_oci_chain" "eu" {
  workspace  = %[1]q
  cluster    = %[2]q
  depends_on = [fleet_oci_route.eu]
%[3]s
}

data "fleet_oci_routing" "ws" {
  workspace  = %[1]q
  depends_on = [fleet_oci_route.eu]
%[3]s
}
`, ws, f.Name("eu-1"), wait)
	}
	chainIs := func(mirror string) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.fleet_oci_chain.eu", tfjsonpath.New("resolved_by"), knownvalue.StringExact("controller")),
			statecheck.ExpectKnownValue("data.fleet_oci_chain.eu", tfjsonpath.New("registries"), knownvalue.ListExact([]knownvalue.Check{
				knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(mirror)}),
				knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact("source")}),
			})),
			statecheck.ExpectKnownValue("data.fleet_oci_routing.ws", tfjsonpath.New("resolved_by"), knownvalue.StringExact("controller")),
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				// The route is new: no status yet, nothing to wait for; once the controller has
				// reported, a second apply reads its view.
				Config: cfg("mirror-a", ""),
			},
			{
				PreConfig:         func() { hc.converged(func(*v1alpha1.OCIStorageRoute) error { return nil }, "eu-1") },
				Config:            cfg("mirror-a", ""),
				ConfigStateChecks: chainIs("mirror-a"),
			},
			{
				// One apply: the route changes, and the data sources read after it show the new chain.
				Config:            cfg("mirror-b", ""),
				ConfigStateChecks: chainIs("mirror-b"),
			},
			{
				// The controller stops: a change is not waited for beyond wait_for_controller, and
				// the warning says the values may be stale.
				PreConfig: func() { hc.stop() },
				Config:    cfg("mirror-a", `  wait_for_controller = "1s"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.fleet_oci_chain.eu", tfjsonpath.New("registries"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact("mirror-b")}), // the delivered chain, stale
						knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact("source")}),
					})),
					statecheck.ExpectKnownValue("data.fleet_oci_routing.ws", tfjsonpath.New("resolved_by"), knownvalue.StringExact("provider")),
				},
			},
		},
	})
}

// TestAccDataSources_waitForControllerWarns: a route whose status is for an earlier generation
// makes the chain and pull status data sources wait for wait_for_controller, then warn that
// their values may be stale, naming the route; "0s" reads at once without a warning.
func TestAccDataSources_waitForControllerWarns(t *testing.T) {
	w := newCLIWorkdir(t)
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("fleet")
	f.Cluster("eu-1", "fleet", nil)
	f.Registry("source", "source", "source.example.com/fleet")
	f.Route("eu", map[string]any{"priority": 10, "clusterNames": []any{f.Name("eu-1")}, "registries": []any{"source"}})
	ri := f.dyn.Resource(routesGVR).Namespace(ws)
	u, err := ri.Get(context.Background(), "eu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration()}
	if _, err := ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{FieldManager: "test-controller"}); err != nil {
		t.Fatal(err)
	}
	f.PatchRoute("eu", `{"spec":{"priority":20}}`) // generation 2; the status still describes 1
	chain := func(wait string) string {
		return fmt.Sprintf("data \"fleet_oci_chain\" \"eu\" {\n  workspace = %q\n  cluster = %q\n  wait_for_controller = %q\n}\n", ws, f.Name("eu-1"), wait)
	}
	const stale = "The controller has not caught up"
	d, failed := w.plan(chain("1s"))
	expectWarnings(t, "status of an earlier generation", d, failed, []string{stale}, map[string][]string{stale: {
		"Waited 1s (wait_for_controller)", "OCIStorageRoute eu (generation 2, status of 1) in workspace " + ws, "The values read may be stale"}})
	d, failed = w.plan(chain("0s"))
	expectWarnings(t, "no wait", d, failed, []string{stale}, nil)
	// fleet_oci_pull_status shows each pull's route and chain: it waits alike.
	d, failed = w.plan(fmt.Sprintf("data \"fleet_oci_pull_status\" \"ws\" {\n  workspace = %q\n  wait_for_controller = \"1s\"\n}\n", ws))
	expectWarnings(t, "pull status, status of an earlier generation", d, failed, []string{stale}, map[string][]string{stale: {
		"OCIStorageRoute eu (generation 2, status of 1) in workspace " + ws}})
}
