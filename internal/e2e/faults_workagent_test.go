package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestFaultWorkAgentStopped runs the routing and apps reconcilers against two clusters with OCM's
// real work agent, the test bed keeping their leases as OCM does (a 1 s lease: the hub declares
// a silent cluster Unknown after 5 s), and checks that status says what the clusters did:
//   - settled, nothing is written: route, ClusterOCIStorages, app and chart keep their
//     resourceVersions and the controller counts no hub write;
//   - with status-01's work agent stopped, a route change is Written at once but not Delivered:
//     the route stays Delivered=False naming status-01 while status-02 applies it, and
//     status-01's ClusterOCIStorage is not Ready;
//   - once the lease runs out, status-01's ClusterOCIStorage and app are Delivered=Unknown
//     ClusterNotReporting and the route Delivered=False ClusterNotReporting, naming the cluster
//     (the time from the stop is printed);
//   - the agent started again, the new chain reaches status-01 and everything is Delivered.
func TestFaultWorkAgentStopped(t *testing.T) {
	const ws, set, silent, other = "status-ws", "status-set", "status-01", "status-02"
	const lease = time.Second
	ctx := t.Context()
	begin := time.Now()
	prepare := func(ctx context.Context, h *testbed.Hub) error {
		c, err := client.New(h.Config, client.Options{Scheme: controller.Scheme()})
		if err != nil {
			return err
		}
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
			&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
			&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: set}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}},
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: silent, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}},
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: other, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}},
			testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example:5000/fleet", AgentUsername: "puller", AgentPassword: "pull-source",
				CACerts: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}),
			route(ws, "all", v1alpha1.OCIStorageRouteSpec{Priority: 10, Default: true, Registries: []string{"source"}}),
		} {
			if err := c.Create(ctx, o); err != nil {
				return err
			}
		}
		return nil
	}
	f := testbed.StartFleetT(t, testbed.FleetOptions{ClusterNames: []string{silent, other}, StatusSyncInterval: time.Second, LeaseDuration: lease, Prepare: prepare})
	hub, err := client.New(f.Hub.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: silent}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: silent, Site: "lab"}},
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		&v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "web"}, Spec: v1alpha1.FleetAppSpec{Chart: "hello", Cluster: silent, Namespace: "web"}},
	} {
		if err := hub.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	runManager(t, f.Hub, "routing,apps")
	t.Logf("fleet and manager up in %v", time.Since(begin).Round(time.Millisecond))

	var (
		rt  v1alpha1.OCIStorageRoute
		app v1alpha1.FleetApp
		st  = map[string]*v1alpha1.ClusterOCIStorage{silent: {}, other: {}}
	)
	read := func() error {
		if err := hub.Get(ctx, client.ObjectKey{Namespace: ws, Name: "all"}, &rt); err != nil {
			return err
		}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: ws, Name: "web"}, &app); err != nil {
			return err
		}
		for cl, s := range st {
			if err := hub.Get(ctx, client.ObjectKey{Namespace: ws, Name: cl}, s); err != nil {
				return err
			}
		}
		return nil
	}
	cond := func(conds []metav1.Condition, typ string) string {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil {
			return "none"
		}
		return string(c.Status) + "/" + c.Reason
	}
	message := func(conds []metav1.Condition, typ string) string {
		if c := meta.FindStatusCondition(conds, typ); c != nil {
			return c.Message
		}
		return ""
	}
	explain := func() string {
		return fmt.Sprintf("\nroute: %v\n%s: %v\n%s: %v\napp: %v%s", rt.Status.Conditions, silent, st[silent].Status.Conditions, other, st[other].Status.Conditions,
			app.Status.Conditions, f.Cluster(silent).AgentLog())
	}
	// want checks conditions, each "<object> <type>" → "Status/Reason".
	want := func(expect map[string]string) error {
		if err := read(); err != nil {
			return err
		}
		conds := map[string][]metav1.Condition{"route": rt.Status.Conditions, "app": app.Status.Conditions, silent: st[silent].Status.Conditions, other: st[other].Status.Conditions}
		for key, w := range expect {
			obj, typ, _ := strings.Cut(key, " ")
			if got := cond(conds[obj], typ); got != w {
				return fmt.Errorf("%s %s is %s, want %s: %s", obj, typ, got, w, message(conds[obj], typ))
			}
		}
		return nil
	}
	delivered := map[string]string{
		"route Written": "True/Written", "route Delivered": "True/WorkApplied", "route Ready": "True/Ready",
		silent + " Delivered": "True/WorkApplied", silent + " Ready": "True/Delivered", other + " Ready": "True/Delivered",
		"app Delivered": "True/WorkApplied",
	}
	testkit.Eventually(t, converge, "everything delivered", func() error { return want(delivered) }, explain)

	t.Run("settled, nothing is written", func(t *testing.T) {
		// The chart's status is the apps reconciler's too; the works are the agents' to report on.
		chart := &v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}}
		testkit.Settled(t, hub, 10*time.Second, &rt, &app, st[silent], st[other], chart)
	})

	t.Run("a change the stopped cluster has not applied is not Delivered", func(t *testing.T) {
		if err := f.Cluster(silent).StopAgent(); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		updateRoute(t, hub, ws, "all", func(r *v1alpha1.OCIStorageRoute) { r.Spec.ReplicationWait = "7m0s" })
		// status-02 applies the new chain; the route is Written and not Delivered, naming status-01.
		testkit.Eventually(t, converge, "the change applied on "+other+" only", func() error {
			if err := want(map[string]string{"route Written": "True/Written", other + " Ready": "True/Delivered"}); err != nil {
				return err
			}
			if rt.Status.ObservedGeneration != rt.Generation {
				return fmt.Errorf("route observed %d of %d", rt.Status.ObservedGeneration, rt.Generation)
			}
			if c, _ := workChain(ctx, hub, other, ws); c.ReplicationWait != "7m0s" {
				return fmt.Errorf("%s's work carries wait %q", other, c.ReplicationWait)
			}
			// The route's status is its own reconcile's, after the ClusterOCIStorages'.
			if msg := message(rt.Status.Conditions, v1alpha1.DeliveredCondition); !containsAll(msg, "1 of 2 clusters", silent) {
				return fmt.Errorf("route Delivered message %q does not name %s alone", msg, silent)
			}
			return nil
		}, explain)
		if got := cond(rt.Status.Conditions, v1alpha1.DeliveredCondition); strings.HasPrefix(got, "True/") {
			t.Fatalf("route Delivered %s while %s's agent is stopped: %s", got, silent, message(rt.Status.Conditions, v1alpha1.DeliveredCondition))
		}
		if got := cond(st[silent].Status.Conditions, v1alpha1.ReadyCondition); strings.HasPrefix(got, "True/") {
			t.Errorf("%s Ready %s with its agent stopped", silent, got)
		}
		t.Logf("%v after the stop: route Delivered %s: %s", time.Since(stopped).Round(time.Millisecond),
			cond(rt.Status.Conditions, v1alpha1.DeliveredCondition), message(rt.Status.Conditions, v1alpha1.DeliveredCondition))

		// Within the lease's grace (plus the hub's one-second check and a reconcile), the silent
		// cluster shows as not reporting wherever it appears.
		bound := f.LeaseGrace() + 10*time.Second
		notReporting := map[string]string{
			silent + " Delivered": "Unknown/ClusterNotReporting", silent + " Ready": "Unknown/ClusterNotReporting",
			"route Delivered": "False/ClusterNotReporting", "route Ready": "True/Ready",
			"app Delivered": "Unknown/ClusterNotReporting", "app Ready": "Unknown/ClusterNotReporting",
			other + " Ready": "True/Delivered",
		}
		testkit.Eventually(t, bound, silent+" not reporting", func() error { return want(notReporting) }, explain)
		took := time.Since(stopped)
		t.Logf("%s shown not reporting on its ClusterOCIStorage, the route and its app %v after its agent stopped (lease %v, grace %v)",
			silent, took.Round(time.Millisecond), lease, f.LeaseGrace())
		for what, msg := range map[string]string{"ClusterOCIStorage": message(st[silent].Status.Conditions, v1alpha1.DeliveredCondition),
			"route": message(rt.Status.Conditions, v1alpha1.DeliveredCondition), "app": message(app.Status.Conditions, v1alpha1.DeliveredCondition)} {
			if !containsAll(msg, `cluster "`+silent+`" has not reported since`, "ManagedClusterLeaseUpdateStopped") {
				t.Errorf("%s Delivered message %q does not name the cluster and since when", what, msg)
			}
		}
		// While it stays silent, nothing more is written.
		testkit.Settled(t, hub, 5*time.Second, &rt, &app, st[silent], st[other])

		if err := f.Cluster(silent).StartAgent(ctx); err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		testkit.Eventually(t, converge, "everything delivered again", func() error { return want(delivered) }, explain)
		t.Logf("cleared %v after the agent started", time.Since(started).Round(time.Millisecond))
		spoke, err := f.Cluster(silent).Client()
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSpoke(ctx, spoke, ws, chainWant{route: "all", registries: []string{"source"}, wait: "7m0s"}); err != nil {
			t.Errorf("%s Delivered but: %v", silent, err)
		}
		var w workv1.ManifestWork
		if err := hub.Get(ctx, client.ObjectKey{Namespace: silent, Name: controller.WorkName(ws)}, &w); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); c == nil || c.ObservedGeneration != w.Generation {
			t.Errorf("Delivered, but the work's Applied is %+v at generation %d", c, w.Generation)
		}
	})
}
