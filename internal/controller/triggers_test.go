package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// flipFleet is a hub of many small workspaces: workspace <prefix>-NN binds set <prefix>-NN,
// which holds its clusters <prefix>-NN-cK, labelled zone=a or zone=b; its route "a" sends
// zone=a to registry source, and route "b" zone=b.
type flipFleet struct {
	prefix               string
	workspaces, clusters int // clusters per workspace
}

func (f flipFleet) ws(i int) string         { return fmt.Sprintf("%s-%02d", f.prefix, i) }
func (f flipFleet) cluster(i, k int) string { return fmt.Sprintf("%s-%02d-c%d", f.prefix, i, k) }

func (f flipFleet) seed(t testing.TB, c client.Client) {
	t.Helper()
	var objs []client.Object
	for i := range f.workspaces {
		ws := f.ws(i)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
			&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: ws}}, bindingOf(ws, ws),
			testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example/fleet", AgentUsername: "a", AgentPassword: "p"}),
			route(ws, "a", v1alpha1.OCIStorageRouteSpec{Priority: 10, ClusterSelectors: selector("zone", "a"), Registries: []string{"source"}}),
			route(ws, "b", v1alpha1.OCIStorageRouteSpec{Priority: 20, ClusterSelectors: selector("zone", "b"), Registries: []string{"source"}}))
		for k := range f.clusters {
			name := f.cluster(i, k)
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
				&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: ws, "zone": "a"}},
					Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	next := make(chan client.Object)
	for range 16 {
		wg.Go(func() {
			for o := range next {
				if err := c.Create(context.Background(), o); client.IgnoreAlreadyExists(err) != nil {
					errs <- fmt.Errorf("%T %s: %w", o, o.GetName(), err)
				}
			}
		})
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// matched is how many clusters route r of workspace i matches, -1 until its status is current.
func (f flipFleet) matched(c client.Client, i int, r string) int {
	var rt v1alpha1.OCIStorageRoute
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: f.ws(i), Name: r}, &rt); err != nil || rt.Status.ObservedGeneration != rt.Generation {
		return -1
	}
	return int(rt.Status.MatchedClusters)
}

// converged: every workspace's routes are current and every cluster has its chain work.
func (f flipFleet) converged(c client.Client) bool {
	for i := range f.workspaces {
		if f.matched(c, i, "a")+f.matched(c, i, "b") != f.clusters {
			return false
		}
	}
	var works metav1.PartialObjectMetadataList
	works.SetGroupVersionKind(workv1.SchemeGroupVersion.WithKind("ManifestWorkList"))
	n := 0
	for i := range f.workspaces {
		for k := range f.clusters {
			if c.List(context.Background(), &works, client.InNamespace(f.cluster(i, k))) != nil {
				return false
			}
			n += len(works.Items)
		}
	}
	return n >= f.workspaces*f.clusters
}

func routingReconciles() float64 {
	return testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "routing"})
}

// quiet waits until the routing reconciler has reconciled nothing for two seconds (at most 60).
func quiet(t testing.TB) {
	t.Helper()
	last, still := routingReconciles(), 0
	for start := time.Now(); still < 10; {
		if time.Since(start) > time.Minute {
			t.Fatal("the routing reconciler never went quiet")
		}
		time.Sleep(200 * time.Millisecond)
		if n := routingReconciles(); n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
}

// flip moves cluster k of workspace 0 to zone to, waits until its routes say so, and returns
// the routing reconciles it took and how long.
func (f flipFleet) flip(t testing.TB, c client.Client, k int, to string) (float64, time.Duration) {
	t.Helper()
	quiet(t)
	wantB := 0
	if to == "b" {
		wantB = 1
	}
	before, start := routingReconciles(), time.Now()
	testkit.Update(t, c, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: f.cluster(0, k)}}, func(m *clusterv1.ManagedCluster) {
		m.Labels["zone"] = to
	})
	for f.matched(c, 0, "b") != wantB || f.matched(c, 0, "a") != f.clusters-wantB {
		if time.Since(start) > time.Minute {
			t.Fatalf("workspace %s's routes never followed the label flip", f.ws(0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	quiet(t)
	return routingReconciles() - before, took
}

func runRouting(t testing.TB) (stop func()) {
	t.Helper()
	mgr, err := controller.NewHubManager(sharedHub.Config, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "routing", QPS: 500, Burst: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Run(t, mgr)
}

// TestLabelFlipRecomputesOnlyItsWorkspaces: a label change on one cluster reconciles the routing
// of the workspaces bound to a set that held or holds it, not every workspace of the hub. The
// same flip under the mapping to every workspace (the behaviour before) is measured in the same
// run: it reconciles at least every workspace of the fleet.
func TestLabelFlipRecomputesOnlyItsWorkspaces(t *testing.T) {
	f := flipFleet{prefix: "flip", workspaces: 20, clusters: 2}
	_, c := startHub(t)
	f.seed(t, c)

	stop := runRouting(t)
	testkit.Eventually(t, time.Minute, "the fleet converged", func() error {
		if !f.converged(c) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	ours, tookOurs := f.flip(t, c, 0, "b")
	ours2, _ := f.flip(t, c, 0, "a")
	stop()

	undo := controller.MapClusterEventsToAllWorkspaces()
	stop = runRouting(t)
	quiet(t)
	undo()
	naive, tookNaive := f.flip(t, c, 0, "b")
	stop()
	t.Logf("routing reconciles for one label flip on a hub of %d+ workspaces: %.0f and %.0f (this mapping, %v) vs %.0f (every workspace, %v)",
		f.workspaces, ours, ours2, tookOurs, naive, tookNaive)
	// The flip's workspace reconciles once for the cluster's event and once more for its chain
	// work's update; nothing else of the hub is recomputed.
	for _, n := range []float64{ours, ours2} {
		if n < 1 || n > 3 {
			t.Errorf("one label flip reconciled the routing %.0f times, want 1 to 3: only the cluster's workspace", n)
		}
	}
	if naive < float64(f.workspaces) {
		t.Errorf("the baseline reconciled %.0f times, fewer than the fleet's %d workspaces: the comparison measures nothing", naive, f.workspaces)
	}
}
