package e2e_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestHubControllerKilledMidMove runs `fleet-controller hub` (the real binary, its routing
// reconciler) over FLEET_FAULT_CLUSTERS simulated clusters (default 200: ManagedClusters and
// their namespaces, no spoke; the chain works are what the hub writes for them), moves all of
// them to a new route and SIGKILLs the controller once part of them moved. A new process
// converges the rest, and the hub sees exactly one change of each cluster's work: the writes the
// move needs and no more (the new process writes only the works the first one did not, counted
// by its fleet_hub_writes_total). The time to converge after the restart is printed.
func TestHubControllerKilledMidMove(t *testing.T) {
	n := benchEnvInt("FLEET_FAULT_CLUSTERS", 200)
	const ws = "faults"
	ctx := t.Context()
	h := testbed.StartT(t)
	c, err := client.NewWithWatch(h.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "sim"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "sim", Namespace: ws}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "sim"}},
		testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example/fleet", Username: "pusher", Password: sourcePush,
			AgentUsername: "puller", AgentPassword: "pull-source"}),
		testkit.RegistrySecret(ws, "mirror-a", registrysecret.RoleMirror, registrysecret.Registry{Reference: "mirror-a.example/fleet", AgentUsername: "a", AgentPassword: "pull-a"}),
		testkit.RegistrySecret(ws, "mirror-b", registrysecret.RoleMirror, registrysecret.Registry{Reference: "mirror-b.example/fleet", AgentUsername: "b", AgentPassword: "pull-b"}),
		route(ws, "a", v1alpha1.OCIStorageRouteSpec{Priority: 10, Registries: []string{"mirror-a", "source"},
			ClusterSelectors: []v1alpha1.LabelSelector{{MatchLabels: map[string]string{"tier": "sim"}}}}),
		route(ws, "fallback", v1alpha1.OCIStorageRouteSpec{Priority: 1000, Default: true, Registries: []string{"source"}}),
	}
	for i := range n {
		name := fmt.Sprintf("sim-%03d", i)
		objs = append(objs,
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "sim", "tier": "sim"}},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	bin := testkit.Binary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	start := func(name string) *testkit.Process {
		return testkit.StartProcess(t, bin, name, "hub", "--kubeconfig", h.Kubeconfig, "--controllers", "routing")
	}

	// routes reads the route of every cluster's chain work, and the list's resourceVersion.
	routes := func() (map[string]string, string, error) {
		var works workv1.ManifestWorkList
		if err := c.List(ctx, &works, client.MatchingLabels{hub.WorkspaceLabel: ws}); err != nil {
			return nil, "", err
		}
		got := map[string]string{}
		for i := range works.Items {
			ch, err := workChain(ctx, c, works.Items[i].Namespace, ws)
			if err != nil {
				return nil, "", err
			}
			got[works.Items[i].Namespace] = ch.Route
		}
		return got, works.ResourceVersion, nil
	}
	allOn := func(route string) func() error {
		return func() error {
			got, _, err := routes()
			if err != nil {
				return err
			}
			on := 0
			for _, r := range got {
				if r == route {
					on++
				}
			}
			if on != n {
				return fmt.Errorf("%d of %d clusters on route %s", on, n, route)
			}
			return nil
		}
	}
	first := start("hub-1")
	began := time.Now()
	testkit.Eventually(t, 3*converge, fmt.Sprintf("%d clusters on route a", n), allOn("a"))
	t.Logf("%d simulated clusters delivered route a in %v", n, time.Since(began).Round(time.Millisecond))

	// Every change of a chain work from here on, as the hub's watch shows it.
	_, rv, err := routes()
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &workv1.ManifestWorkList{}, client.MatchingLabels{hub.WorkspaceLabel: ws}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	changes := map[string]int{}
	total := 0
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified || ev.Type == watch.Added || ev.Type == watch.Deleted {
				if o, ok := ev.Object.(*workv1.ManifestWork); ok {
					mu.Lock()
					changes[o.Namespace]++
					total++
					mu.Unlock()
				}
			}
		}
	}()
	changed := func() int {
		mu.Lock()
		defer mu.Unlock()
		return total
	}

	// The move: route b, of higher priority, takes every cluster.
	if err := c.Create(ctx, route(ws, "b", v1alpha1.OCIStorageRouteSpec{Priority: 5, Registries: []string{"mirror-b", "source"},
		ClusterSelectors: []v1alpha1.LabelSelector{{MatchLabels: map[string]string{"tier": "sim"}}}})); err != nil {
		t.Fatal(err)
	}
	moveStart := time.Now()
	testkit.Eventually(t, converge, "the first works moved", func() error {
		if changed() < n/10 {
			return fmt.Errorf("%d works changed", changed())
		}
		return nil
	})
	firstWrites, _ := first.Scrape("fleet_hub_writes_total", `resource="manifestwork"`)
	first.Kill()
	killedAt := time.Now()
	time.Sleep(time.Second) // what the dead process had sent lands, or not
	before := changed()
	if before >= n {
		t.Fatalf("all %d works moved before the kill (%v after the change): the kill came too late to test anything", n, killedAt.Sub(moveStart))
	}
	t.Logf("SIGKILLed the controller %v into the move, %d of %d works moved (it had counted %v work writes shortly before)",
		killedAt.Sub(moveStart).Round(time.Millisecond), before, n, firstWrites)

	second := start("hub-2")
	restarted := time.Now()
	testkit.Eventually(t, 3*converge, fmt.Sprintf("%d clusters on route b", n), allOn("b"))
	t.Logf("converged %v after the restart (%v after the kill): %d clusters on route b",
		time.Since(restarted).Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond), n)
	time.Sleep(2 * time.Second) // any extra write would show by now
	writes, err := second.Scrape("fleet_hub_writes_total", `resource="manifestwork"`)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("work changes on the hub: %d (%d before the restart), the new process's work writes: %v", total, before, writes)
	if total != n {
		t.Errorf("the hub saw %d changes of chain works, want %d: one per cluster moved", total, n)
	}
	for cluster, k := range changes {
		if k != 1 {
			t.Errorf("work of %s changed %d times, want once", cluster, k)
		}
	}
	if int(writes) != n-before {
		t.Errorf("the new process wrote %v works, want %d: the %d the first one had not moved, and no more", writes, n-before, n-before)
	}
}

// TestAppFaultsOnTheFleet runs an app on eu-01 end to end on real parts (the hub's apps
// reconciler, OCM's work agent, fleet-controller agent, Helm) and hurts the fleet twice:
//   - the cluster's work agent is stopped while the app's values change, then restarted: the
//     release is upgraded (revision 2, the new values on the cluster) and the hub reports it
//     Deployed; the time to converge after the restart is printed;
//   - the cluster is deleted from the hub (its agent gone first, as a detached cluster's is) and
//     the app deleted: the app goes at once, with a Warning Event Orphaned naming the release
//     left on the cluster, where it stays.
func TestAppFaultsOnTheFleet(t *testing.T) {
	begin := time.Now()
	p := startPullFleet(t, pullFleetOptions{})
	runManager(t, p.fleet.Hub, "sites,cluster-joins,apps")
	t.Logf("fleet, registries and managers up in %v", time.Since(begin).Round(time.Millisecond))
	ctx, hubc, spoke := p.ctx, p.hub, p.agents[pullCluster].spoke
	cluster := p.fleet.Cluster(pullCluster)
	wsMeta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: pullWS, Name: name} }
	p.source.PushChartT(t, "charts/hello", testbed.HelloChart("hello", "0.1.0"))
	if _, err := p.mirror.Copy(ctx, p.source, "charts/hello", "0.1.0"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&v1alpha1.FleetSite{ObjectMeta: wsMeta("lab")},
		&v1alpha1.FleetClusterJoin{ObjectMeta: wsMeta(pullCluster), Spec: v1alpha1.FleetClusterJoinSpec{Cluster: pullCluster, Site: "lab"}},
		&v1alpha1.FleetChart{ObjectMeta: wsMeta("hello"), Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		&v1alpha1.FleetApp{ObjectMeta: wsMeta("hello"), Spec: v1alpha1.FleetAppSpec{Chart: "hello", Cluster: pullCluster, Namespace: "hello",
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"one"}`)}}},
	} {
		if err := hubc.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	app := &v1alpha1.FleetApp{}
	deployed := func(revision int32, greeting string) func() error {
		return func() error {
			if err := hubc.Get(ctx, client.ObjectKey{Namespace: pullWS, Name: "hello"}, app); err != nil {
				return err
			}
			if app.Status.ObservedGeneration != app.Generation || app.Status.Phase != v1alpha1.AppDeployed || app.Status.Revision != revision {
				return fmt.Errorf("generation %d observed %d, phase %s revision %d: %s", app.Generation, app.Status.ObservedGeneration, app.Status.Phase, app.Status.Revision, app.Status.Message)
			}
			var cm corev1.ConfigMap
			if err := spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "hello-hello"}, &cm); err != nil {
				return err
			}
			if cm.Data["greeting"] != greeting {
				return fmt.Errorf("greeting on the cluster %q, want %q", cm.Data["greeting"], greeting)
			}
			return nil
		}
	}
	testkit.Eventually(t, converge, "app Deployed at revision 1", deployed(1, "one"), func() string { return p.explainApp(app) })

	// The work agent stops; the values change meanwhile; nothing reaches the cluster.
	if err := cluster.StopAgent(); err != nil {
		t.Fatal(err)
	}
	testkit.Update(t, hubc, app, func(a *v1alpha1.FleetApp) { a.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"two"}`)} })
	time.Sleep(3 * time.Second)
	if err := deployed(2, "two")(); err == nil {
		t.Fatal("revision 2 on the cluster while its work agent was stopped")
	}
	restarted := time.Now()
	if err := cluster.StartAgent(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, converge, "app Deployed at revision 2 after the work agent's restart", deployed(2, "two"), func() string { return p.explainApp(app) })
	t.Logf("work agent restarted: revision 2 on the cluster and Deployed on the hub %v later", time.Since(restarted).Round(time.Millisecond))

	// The cluster leaves the hub (its work agent first), then the app is deleted.
	if err := cluster.StopAgent(); err != nil {
		t.Fatal(err)
	}
	if err := hubc.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: pullCluster}}); err != nil {
		t.Fatal(err)
	}
	if err := hubc.Get(ctx, client.ObjectKey{Namespace: pullWS, Name: "hello"}, app); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := hubc.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, converge, "the app of a deleted cluster gone", func() error {
		if err := hubc.Get(ctx, client.ObjectKeyFromObject(app), &v1alpha1.FleetApp{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	t.Logf("the app of a deleted cluster went %v after its deletion", time.Since(deleted).Round(time.Millisecond))
	testkit.Eventually(t, converge, "a Warning Orphaned event naming the release", func() error {
		var evs eventsv1.EventList
		if err := hubc.List(ctx, &evs, client.InNamespace(pullWS)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.UID == app.UID && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonOrphaned &&
				strings.Contains(e.Note, `ManagedCluster "`+pullCluster+`" is gone`) && strings.Contains(e.Note, "Helm release hello in namespace hello") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(evs.Items))
	})
	// What the Event says is left is left: the release's objects stay on the cluster.
	if err := spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "hello-hello"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the orphaned release's ConfigMap on the cluster: %v", err)
	}
}
