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
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAppsOrphanedWhenTheClusterCannotAnswer deletes, on five clusters, one app and one storage
// deployment each whose works a finalizer holds (the cluster's agent never confirms): the pair
// whose ManagedCluster was deleted, the one whose cluster namespace is terminating and the one
// deleted with the orphan-on-delete annotation (the provider's force_destroy) on an available
// cluster go at once; the one on a cluster that is not available goes after the (test-set) bound;
// each with Deleted=False/Orphaned's message in a Warning Event naming the cluster and what may be
// left there (the release; the draft). The pair on an available cluster still waits for its
// works, and goes when they do, with no such Event.
func TestAppsOrphanedWhenTheClusterCannotAnswer(t *testing.T) {
	const ws, bound = "orphan-ws", 4 * time.Second
	h, c := startHub(t)
	ctx := t.Context()
	v := appView{t, c, ws, ""}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}})
	// The reconcilers run with only the generated ClusterRole: the reads and the Event they need are granted.
	cfg := roleConfig(t, h, c, "rbac-orphan-test", "fleet-controller-orphan", "kube-system")
	mgr, err := controller.NewHubManager(cfg, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "apps,storage-site", QPS: 500, Burst: 1000,
		Options: controller.Options{OrphanAfter: bound},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer testkit.Run(t, mgr)()

	// On cluster orphan-<kind>: app <kind> (release rel-<kind>) and storage deployment <kind>
	// (draft draft-<kind>).
	kinds := []string{"gone", "ns", "forced", "down", "up"}
	available := map[string]metav1.ConditionStatus{"down": metav1.ConditionFalse, "up": metav1.ConditionTrue, "forced": metav1.ConditionTrue}
	objs := map[string][]client.Object{}
	works := map[string][]*workv1.ManifestWork{}
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
		app := cv.app(k, "hello", func(a *v1alpha1.FleetApp) { a.Spec.ReleaseName = "rel-" + k })
		sd := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: k},
			Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: cluster, SiteNamespace: "simplyblock", DraftName: "draft-" + k}}
		cv.create(&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}}, app, sd)
		objs[k] = []client.Object{app, sd}
		// A finalizer stands in for the cluster's work agent, which never confirms here.
		aw := cv.work(k, nil)
		sw := &workv1.ManifestWork{}
		testkit.Eventually(t, converge, "work of storage deployment "+k, func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "sbsd." + ws + "." + k}, sw)
		})
		for _, w := range []*workv1.ManifestWork{aw, sw} {
			testkit.Update(t, c, w, func(w *workv1.ManifestWork) { w.Finalizers = append(w.Finalizers, "test.fleet.umkim.io/agent") })
		}
		works[k] = []*workv1.ManifestWork{aw, sw}
	}
	t.Cleanup(func() {
		for _, ws := range works {
			for _, w := range ws {
				if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err == nil {
					w.Finalizers = nil
					_ = c.Update(ctx, w)
				}
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
	// As the provider does with force_destroy: the annotation, then the deletion.
	for _, o := range objs["forced"] {
		patch := []byte(`{"metadata":{"annotations":{"` + hub.OrphanOnDeleteAnnotation + `":"true"}}}`)
		if err := c.Patch(ctx, o, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, k := range kinds {
		for _, o := range objs[k] {
			if err := c.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}

	gone := func(k string) time.Duration {
		t.Helper()
		for _, o := range objs[k] {
			testkit.Eventually(t, converge, fmt.Sprintf("%T %s gone", o, k), func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)); !apierrors.IsNotFound(err) {
					return fmt.Errorf("still there: %v", err)
				}
				return nil
			})
		}
		return time.Since(start)
	}
	// leftNotes are what the Event of each object of a pair names as left on the cluster.
	leftNotes := func(k string) []string {
		return []string{`Helm release rel-` + k + ` in namespace shop`, `draft draft-` + k + ` and storage cluster in namespace simplyblock stay on cluster "orphan-` + k + `"`}
	}
	orphanedEvent := func(k, why string) {
		t.Helper()
		for i, o := range objs[k] {
			testkit.Eventually(t, converge, fmt.Sprintf("a Warning Orphaned event on %T %s", o, k), func() error {
				var evs eventsv1.EventList
				if err := c.List(ctx, &evs, client.InNamespace(ws)); err != nil {
					return err
				}
				for _, e := range evs.Items {
					if e.Regarding.Name == k && e.Regarding.UID == o.GetUID() && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonOrphaned &&
						strings.Contains(e.Note, why) && strings.Contains(e.Note, leftNotes(k)[i]) && strings.Contains(e.Note, `cluster "orphan-`+k+`"`) {
						return nil
					}
				}
				return fmt.Errorf("none among %d events", len(evs.Items))
			})
		}
	}
	// The deleted cluster, the terminating namespace and the forced deletion: at once, well
	// within the bound.
	for k, why := range map[string]string{
		"gone":   `ManagedCluster "orphan-gone" is gone`,
		"ns":     `the namespace "orphan-ns" of cluster "orphan-ns" is terminating`,
		"forced": `it was deleted with annotation ` + hub.OrphanOnDeleteAnnotation + `=true (the provider's force_destroy)`,
	} {
		if d := gone(k); d >= bound {
			t.Errorf("app and storage %s went after %v, want at once (under the %v bound)", k, d, bound)
		} else {
			t.Logf("app and storage %s gone in %v", k, d)
		}
		orphanedEvent(k, why)
		// Their works were deleted on the hub all the same (best effort).
		for _, w := range works[k] {
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil || w.DeletionTimestamp.IsZero() {
				t.Errorf("work %s: %v, deletionTimestamp %v; want it being deleted", w.Name, err, w.DeletionTimestamp)
			}
		}
	}
	// The unavailable cluster: still waiting before the bound, gone after it.
	waiting := func(k string) {
		t.Helper()
		for _, o := range objs[k] {
			cur := o.DeepCopyObject().(client.Object)
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil || len(cur.GetFinalizers()) == 0 {
				t.Fatalf("%T %s %v after deletion: %v, finalizers %v; want it waiting", o, k, time.Since(start), err, cur.GetFinalizers())
			}
		}
	}
	waiting("down")
	if d := gone("down"); d < bound-time.Second { // deletionTimestamp has whole seconds
		t.Errorf("app and storage down went after %v, want the %v bound", d, bound)
	} else {
		t.Logf("app and storage down gone in %v", d)
	}
	orphanedEvent("down", `ManagedCluster "orphan-down" is not available (condition ManagedClusterConditionAvailable not True) and the work was not gone 4s after the deletion`)

	// The available cluster: its app and storage deployment still wait for their works, past the
	// bound, and go with them.
	if time.Since(start) < bound+time.Second {
		time.Sleep(bound + time.Second - time.Since(start))
	}
	waiting("up")
	var up v1alpha1.FleetApp
	if err := c.Get(ctx, client.ObjectKeyFromObject(objs["up"][0]), &up); err != nil {
		t.Fatal(err)
	}
	if d := meta.FindStatusCondition(up.Status.Conditions, v1alpha1.DeletedCondition); d != nil {
		t.Errorf("app up: %+v, want no Deleted condition while it waits", d)
	}
	for _, w := range works["up"] {
		testkit.Update(t, c, w, func(w *workv1.ManifestWork) { w.Finalizers = nil })
	}
	gone("up")
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == "up" && e.Reason == v1alpha1.ReasonOrphaned {
			t.Errorf("%s up, whose work went, has an Orphaned event: %s", e.Regarding.Kind, e.Note)
		}
	}
}
