package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAppsOrphanedWhenTheClusterCannotAnswer deletes four apps whose works a finalizer holds (the
// cluster's agent never confirms the uninstall): the app whose ManagedCluster was deleted and the
// one whose cluster namespace is terminating go at once, the one on a cluster that is not
// available goes after the (test-set) bound, each with Deleted=False/Orphaned's message in a
// Warning Event naming the cluster and the release; the one on an available cluster still waits
// for its work, and goes when the work does, with no such Event.
func TestAppsOrphanedWhenTheClusterCannotAnswer(t *testing.T) {
	const ws, bound = "orphan-ws", 4 * time.Second
	h, c := startHub(t)
	ctx := t.Context()
	v := appView{t, c, ws, ""}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}})
	// The reconciler runs with only the generated ClusterRole: the reads and the Event it needs are granted.
	cfg := roleConfig(t, h, c, "rbac-orphan-test", "fleet-controller-orphan", "kube-system")
	mgr, err := controller.NewHubManager(cfg, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "apps", QPS: 500, Burst: 1000,
		Options: controller.Options{AppOrphanAfter: bound},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer testkit.Run(t, mgr)()

	// One app per cluster, app <kind> on cluster orphan-<kind>, release rel-<kind>.
	kinds := []string{"gone", "ns", "down", "up"}
	available := map[string]metav1.ConditionStatus{"down": metav1.ConditionFalse, "up": metav1.ConditionTrue}
	apps, works := map[string]*v1alpha1.FleetApp{}, map[string]*workv1.ManifestWork{}
	for _, k := range kinds {
		cluster := "orphan-" + k
		managedCluster(t, c, ws, cluster, "")
		if s, ok := available[k]; ok {
			mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
			if err := c.Get(ctx, client.ObjectKeyFromObject(mc), mc); err != nil {
				t.Fatal(err)
			}
			meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: s, Reason: "Test", Message: "set by the test"})
			if err := c.Status().Update(ctx, mc); err != nil {
				t.Fatal(err)
			}
		}
		cv := appView{t, c, ws, cluster}
		apps[k] = cv.app(k, "hello", func(a *v1alpha1.FleetApp) { a.Spec.ReleaseName = "rel-" + k })
		cv.create(&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}}, apps[k])
		// A finalizer stands in for the cluster's agent, which never confirms the uninstall here.
		works[k] = cv.work(k, nil)
		testkit.Update(t, c, works[k], func(w *workv1.ManifestWork) { w.Finalizers = append(w.Finalizers, "test.fleet.umkim.io/agent") })
	}
	t.Cleanup(func() {
		for _, w := range works {
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err == nil {
				w.Finalizers = nil
				_ = c.Update(ctx, w)
			}
		}
	})
	if err := c.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "orphan-gone"}}); err != nil {
		t.Fatal(err)
	}
	// The test bed runs no namespace controller: the namespace stays Terminating.
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "orphan-ns"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, k := range kinds {
		if err := c.Delete(ctx, apps[k]); err != nil {
			t.Fatal(err)
		}
	}

	gone := func(k string) time.Duration {
		t.Helper()
		testkit.Eventually(t, converge, "app "+k+" gone", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(apps[k]), &v1alpha1.FleetApp{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
		return time.Since(start)
	}
	orphanedEvent := func(k, why string) {
		t.Helper()
		testkit.Eventually(t, converge, "a Warning Orphaned event on app "+k, func() error {
			var evs eventsv1.EventList
			if err := c.List(ctx, &evs, client.InNamespace(ws)); err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Regarding.Name == k && e.Regarding.UID == apps[k].UID && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonOrphaned &&
					strings.Contains(e.Note, why) && strings.Contains(e.Note, `Helm release rel-`+k+` in namespace shop`) && strings.Contains(e.Note, `left on cluster "orphan-`+k+`"`) {
					return nil
				}
			}
			return fmt.Errorf("none among %d events", len(evs.Items))
		})
	}
	// The deleted cluster and the terminating namespace: at once, well within the bound.
	for k, why := range map[string]string{"gone": `ManagedCluster "orphan-gone" is gone`, "ns": `the namespace "orphan-ns" of cluster "orphan-ns" is terminating`} {
		if d := gone(k); d >= bound {
			t.Errorf("app %s went after %v, want at once (under the %v bound)", k, d, bound)
		} else {
			t.Logf("app %s gone in %v", k, d)
		}
		orphanedEvent(k, why)
		// Its work was deleted on the hub all the same (best effort).
		if err := c.Get(ctx, client.ObjectKeyFromObject(works[k]), works[k]); err != nil || works[k].DeletionTimestamp.IsZero() {
			t.Errorf("work of app %s: %v, deletionTimestamp %v; want it being deleted", k, err, works[k].DeletionTimestamp)
		}
	}
	// The unavailable cluster: still waiting before the bound, gone after it.
	var down v1alpha1.FleetApp
	if err := c.Get(ctx, client.ObjectKeyFromObject(apps["down"]), &down); err != nil || !controllerutil.ContainsFinalizer(&down, "fleet.umkim.io/app") {
		t.Fatalf("app down %v after deletion: %v, finalizers %v; want it waiting", time.Since(start), err, down.Finalizers)
	}
	if d := gone("down"); d < bound-time.Second { // deletionTimestamp has whole seconds
		t.Errorf("app down went after %v, want the %v bound", d, bound)
	} else {
		t.Logf("app down gone in %v", d)
	}
	orphanedEvent("down", `ManagedCluster "orphan-down" is not available (condition ManagedClusterConditionAvailable not True) and the app's work was not gone 4s after the app's deletion`)

	// The available cluster: its app still waits for its work, past the bound, and goes with it.
	if time.Since(start) < bound+time.Second {
		time.Sleep(bound + time.Second - time.Since(start))
	}
	var up v1alpha1.FleetApp
	if err := c.Get(ctx, client.ObjectKeyFromObject(apps["up"]), &up); err != nil || !controllerutil.ContainsFinalizer(&up, "fleet.umkim.io/app") {
		t.Fatalf("app up %v after deletion: %v, finalizers %v; want it waiting for its work", time.Since(start), err, up.Finalizers)
	}
	if d := meta.FindStatusCondition(up.Status.Conditions, v1alpha1.DeletedCondition); d != nil {
		t.Errorf("app up: %+v, want no Deleted condition while it waits", d)
	}
	testkit.Update(t, c, works["up"], func(w *workv1.ManifestWork) { w.Finalizers = nil })
	gone("up")
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == "up" && e.Reason == v1alpha1.ReasonOrphaned {
			t.Errorf("app up, whose work went, has an Orphaned event: %s", e.Note)
		}
	}
}
