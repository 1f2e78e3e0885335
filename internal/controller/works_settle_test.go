package controller_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAppWorksSettleAfterAReconcileStorm: apps whose works the apiserver has re-encoded are
// reconciled again and again (the controller restarted, so every app is reconciled from a fresh
// cache, then their works' status reported over and over, each report a reconcile of its app), and
// no work is rewritten: zero work writes in fleet_hub_writes_total and the same spec generation.
// Comparing manifests byte for byte rewrote every work on each of those reconciles.
func TestAppWorksSettleAfterAReconcileStorm(t *testing.T) {
	const ws, cluster, n = "storm-ws", "storm-01", 5
	_, c := startHub(t)
	v := appView{t, c, ws, cluster}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "")
	v.create(&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "storm"}})
	stop := runControllers(t, sharedHub.Config, "apps")
	v.create(&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"},
		Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}})
	for i := range n {
		v.create(v.app(fmt.Sprintf("web-%d", i), "hello"))
	}
	works := make([]client.Object, n)
	generations := make([]int64, n)
	for i := range n {
		w := v.work(fmt.Sprintf("web-%d", i), nil)
		works[i], generations[i] = w, w.Generation
	}
	testkit.Settled(t, c, 2*time.Second, works...)
	stop()

	before := writes("manifestwork", "")
	defer runControllers(t, sharedHub.Config, "apps")()
	time.Sleep(3 * time.Second) // the restarted controller reconciles every app
	for round := range 4 {
		for i := range n {
			w := v.work(fmt.Sprintf("web-%d", i), nil)
			v.report(w, v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullWaitingForArtifact, Registry: "mirror-eu", Reason: "NotFound", Attempts: int32(round + 1), Message: "manifest unknown"}, nil)
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	if n := writes("manifestwork", "") - before; n != 0 {
		t.Errorf("%v work writes after the controller's restart and 20 status reports, want none", n)
	}
	for i := range n {
		if w := v.work(fmt.Sprintf("web-%d", i), nil); w.Generation != generations[i] {
			t.Errorf("work %s: generation %d → %d: rewritten", w.Name, generations[i], w.Generation)
		}
	}
}

// TestRouteRetryingWritesNoWork: a workspace whose route reaches a cluster that has no namespace
// on the hub fails to deliver that cluster's chain on every reconcile, and the routing reconciler
// retries with back-off. Each retry attempts that one create again and rewrites nothing else: the
// other cluster's chain work keeps its resourceVersion and no work is updated.
func TestRouteRetryingWritesNoWork(t *testing.T) {
	const ws, set, ok, missing = "retry-ws", "retry-set", "retry-ok-01", "retry-nons-01"
	h, c := startHub(t)
	ctx := t.Context()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ok}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: ok, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: missing, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
		bindingOf(ws, set),
		testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example:5000/fleet", AgentUsername: "puller", AgentPassword: "pull"}),
		route(ws, "all", v1alpha1.OCIStorageRouteSpec{Priority: 10, Default: true, Registries: []string{"source"}}),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	defer runManager(t, h)()
	v := hubView{t, ctx, c, ws}
	var w *workv1.ManifestWork
	testkit.Eventually(t, converge, "the chain work of "+ok, func() (err error) { w, err = v.work(ok); return err })
	time.Sleep(2 * time.Second)
	creates, updates := writes("manifestwork", "create"), writes("manifestwork", "update")
	start := time.Now()
	// At least 8 s, and until a retry: the retries back off (kube.RateLimiter), up to 5 min apart.
	time.Sleep(8 * time.Second)
	for end := time.Now().Add(40 * time.Second); writes("manifestwork", "create") == creates && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
	}
	retries := writes("manifestwork", "create") - creates
	if retries < 1 {
		t.Fatalf("no create attempt for %s in 48 s: the reconciler is not retrying, so this test proves nothing", missing)
	}
	if n := writes("manifestwork", "update") - updates; n != 0 {
		t.Errorf("%v work updates over %v retries, want none", n, retries)
	}
	untouched(t, c, w)
	t.Logf("%v retries of the failing create in %v, no other work written", retries, time.Since(start).Round(time.Second))
}

// TestAppRouteWorksSettleAfterRestart: the Ingress works of three site routes, which the
// apiserver re-encodes, are not rewritten when a restarted controller reconciles every route
// again (comparing bytes rewrote each one).
func TestAppRouteWorksSettleAfterRestart(t *testing.T) {
	const ws, cluster = "route-storm-ws", "route-storm-01"
	_, c := startHub(t)
	v := routeView{appView{t, c, ws, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	gatewayNamespace(t, c)
	managedCluster(t, c, ws, cluster, "https://192.0.2.10:6443")
	stop := runControllers(t, sharedHub.Config, "app-routes")
	v.create(&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "berlin"}, Spec: siteSpec()},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster},
			Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin", Edge: &v1alpha1.ClusterJoinEdge{IngressID: "wan"}}})
	var works []client.Object
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		v.create(v.app(name, "hello"), v.route(name, name, v1alpha1.RouteSite, name+".shop.example.com", &v1alpha1.RouteTLS{ACMEIssuer: "letsencrypt"}))
		work := cluster + "/route." + ws + "." + name
		v.routeIs(name, "False/WorkPending", work, "https://"+name+".shop.example.com/", "cluster "+cluster)
		v.applied(name)
		v.routeIs(name, "True/Published", work, "https://"+name+".shop.example.com/", `ingress entry "wan"`)
		works = append(works, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "route." + ws + "." + name}})
	}
	testkit.Settled(t, c, time.Second, works...)
	stop()

	before := writes("manifestwork", "")
	defer runControllers(t, sharedHub.Config, "app-routes")()
	time.Sleep(5 * time.Second) // the restarted controller reconciles every route
	if n := writes("manifestwork", "") - before; n != 0 {
		t.Errorf("%v work writes after the controller's restart, want none", n)
	}
	testkit.Settled(t, c, 2*time.Second, works...)
}
