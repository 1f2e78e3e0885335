package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// TestFaultHubControllerKilledMidMove runs `fleet-controller hub` (the real binary, its routing
// reconciler) over FLEET_FAULT_CLUSTERS simulated clusters (default 200: ManagedClusters and
// their namespaces, no spoke; the chain works are what the hub writes for them), moves all of
// them to a new route and SIGKILLs the controller once part of them moved. A new process
// converges the rest, and the hub sees exactly one change of each cluster's work: the writes the
// move needs and no more (the new process writes only the works the first one did not, counted
// by its fleet_hub_writes_total). The time to converge after the restart is printed.
func TestFaultHubControllerKilledMidMove(t *testing.T) {
	controllerKilledMidMove(t, benchEnvInt("FLEET_FAULT_CLUSTERS", 200))
}

// BenchmarkFaultsControllerKill is TestFaultHubControllerKilledMidMove at the scale,
// FLEET_BENCH_FAULT_CLUSTERS (default 1,000) simulated clusters, once; it prints
// `faults: controller_kill_clusters=<n> converge_s=<x> writes=<n> needed=<m>`: the time from the
// new process's start to every cluster on the new route, the work changes the hub saw during
// the move and the ones it needed (one per cluster). It fails as the test does.
func BenchmarkFaultsControllerKill(b *testing.B) {
	n := benchEnvInt("FLEET_BENCH_FAULT_CLUSTERS", 1000)
	r := controllerKilledMidMove(b, n)
	b.ReportMetric(r.converge.Seconds(), "converge_s")
	fmt.Printf("faults: controller_kill_clusters=%d converge_s=%.1f writes=%d needed=%d killed_after_s=%.1f moved_before_kill=%d second_process_writes=%d\n",
		n, r.converge.Seconds(), r.changes, n, r.killedAfter.Seconds(), r.before, r.secondWrites)
}

// killResult is what controllerKilledMidMove measured.
type killResult struct {
	converge     time.Duration // from the new process's start to every cluster moved
	killedAfter  time.Duration // from the change to the kill
	before       int           // works moved before the restart
	changes      int           // work changes the hub saw from the change on
	secondWrites int           // work writes of the new process
}

// controllerKilledMidMove is TestFaultHubControllerKilledMidMove on n clusters.
func controllerKilledMidMove(t testing.TB, n int) killResult {
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

	// Every change of a chain work from here on, as the hub's watch shows it. The API server may
	// close a watch that falls behind a burst of events (a new process writes fast); the watch
	// then resumes from the last resourceVersion it saw, so that no change goes uncounted.
	_, rv, err := routes()
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var mu sync.Mutex
	changes := map[string]int{}
	total := 0
	go func() {
		for watchCtx.Err() == nil {
			w, err := c.Watch(watchCtx, &workv1.ManifestWorkList{}, client.MatchingLabels{hub.WorkspaceLabel: ws},
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				o, ok := ev.Object.(*workv1.ManifestWork)
				if !ok {
					continue // an error: watch again from rv
				}
				rv = o.ResourceVersion
				if ev.Type == watch.Modified || ev.Type == watch.Added || ev.Type == watch.Deleted {
					mu.Lock()
					changes[o.Namespace]++
					total++
					mu.Unlock()
				}
			}
			w.Stop()
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
	converged := time.Since(restarted)
	t.Logf("converged %v after the restart (%v after the kill): %d clusters on route b",
		converged.Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond), n)
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
	return killResult{converge: converged, killedAfter: killedAt.Sub(moveStart), before: before, changes: total, secondWrites: int(writes)}
}
