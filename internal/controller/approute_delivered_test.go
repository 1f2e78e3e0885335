package controller_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// conditionsAre waits until route name's conditions of the given types are status/reason, at
// its generation.
func (v routeView) conditionsAre(name string, want map[string]string) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, fmt.Sprintf("route %s conditions %v", name, want), func() error {
		var r v1alpha1.FleetAppRoute
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.ws, Name: name}, &r); err != nil {
			return err
		}
		for typ, sr := range want {
			c := meta.FindStatusCondition(r.Status.Conditions, typ)
			if sr == "" {
				if c != nil {
					return fmt.Errorf("%s %+v, want none", typ, c)
				}
				continue
			}
			if c == nil || c.ObservedGeneration != r.Generation || string(c.Status)+"/"+c.Reason != sr {
				return fmt.Errorf("%s %+v, want %s at generation %d", typ, c, sr, r.Generation)
			}
		}
		return nil
	})
}

// TestAppRouteDeliveredFollowsWork: a site-mode route is Ready only once the cluster's work agent
// applied its work at the work's generation. Written on the hub, it is False/WorkPending
// (Written True, Delivered False) naming the work, the cluster and what the agent reported;
// Applied at the work's generation makes it True/Published (Delivered WorkApplied), through the
// watch on the work's status alone; a spec change gives the work a new generation, which an
// Applied of the old one does not count for (False/WorkPending again, naming both generations);
// an agent reporting the work not applied is named in the message; mode none clears Delivered;
// settled, the route's status is not written again.
func TestAppRouteDeliveredFollowsWork(t *testing.T) {
	const ws, cluster = "route-deliv-ws", "route-deliv-01"
	_, c := startHub(t)
	v := routeView{appView{t, c, ws, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "https://192.0.2.40:6443")
	defer runControllers(t, sharedHub.Config, "app-routes")()

	start := time.Now()
	v.create(v.app("web", "hello"),
		&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "berlin"}, Spec: siteSpec()},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster},
			Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin", Edge: &v1alpha1.ClusterJoinEdge{IngressID: "wan"}}},
		v.route("web", "web", v1alpha1.RouteSite, "deliv.example.com", nil))
	work := cluster + "/route." + ws + ".web"
	const url = "http://deliv.example.com/"

	// Written, not applied: the agent has reported nothing.
	v.routeIs("web", "False/WorkPending", work, url, "ManifestWork "+work+" is written on the hub", "cluster "+cluster, "has not reported it yet")
	v.conditionsAre("web", map[string]string{v1alpha1.WrittenCondition: "True/Written", v1alpha1.DeliveredCondition: "False/WorkPending"})

	// The agent reports the work not applied: its message is in Ready's.
	v.workStatus("web", func(w *workv1.ManifestWork) []metav1.Condition {
		return []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed",
			Message: "ingresses.networking.k8s.io is forbidden", ObservedGeneration: w.Generation}}
	})
	v.routeIs("web", "False/WorkPending", work, url, "not applied: ingresses.networking.k8s.io is forbidden")

	// Applied at the work's generation: Published.
	v.applied("web")
	v.routeIs("web", "True/Published", work, url, `ingress entry "wan"`)
	v.conditionsAre("web", map[string]string{v1alpha1.WrittenCondition: "True/Written", v1alpha1.DeliveredCondition: "True/WorkApplied"})
	t.Logf("route Published %v after its creation", time.Since(start))

	// Settled: the route's status is not written again (nor anything else).
	time.Sleep(2 * time.Second)
	before := writes("", "")
	time.Sleep(3 * time.Second)
	if after := writes("", ""); after != before {
		t.Errorf("settled route wrote %v times", after-before)
	}

	// A new generation of the work: the Applied of the old one does not count.
	var w workv1.ManifestWork
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: cluster, Name: "route." + ws + ".web"}, &w); err != nil {
		t.Fatal(err)
	}
	old := w.Generation
	route := v.route("web", "", "", "", nil)
	testkit.Update(t, c, route, func(r *v1alpha1.FleetAppRoute) { r.Spec.Service.Port = 9090 })
	v.routeIs("web", "False/WorkPending", work, url, fmt.Sprintf("last reported generation %d, not %d", old, old+1))
	v.applied("web")
	v.routeIs("web", "True/Published", work, url)

	// Applied but no longer Available at the work's generation: not Published.
	v.workStatus("web", func(w *workv1.ManifestWork) []metav1.Condition {
		return []metav1.Condition{
			{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "applied", ObservedGeneration: w.Generation},
			{Type: workv1.WorkAvailable, Status: metav1.ConditionFalse, Reason: "ResourcesNotAvailable", Message: "Ingress is gone", ObservedGeneration: w.Generation},
		}
	})
	v.routeIs("web", "False/WorkPending", work, url, "applied but not available: Ingress is gone")

	// Mode none: nothing published, nothing to deliver.
	testkit.Update(t, c, route, func(r *v1alpha1.FleetAppRoute) { r.Spec.Mode = v1alpha1.RouteNone })
	v.routeIs("web", "True/Unpublished", "", "")
	v.conditionsAre("web", map[string]string{v1alpha1.WrittenCondition: "True/Unpublished", v1alpha1.DeliveredCondition: ""})
	t.Logf("done in %v", time.Since(start))
}
