package controller_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
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
	settled(t, c, 2*time.Second, works...)
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
