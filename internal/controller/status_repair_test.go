package controller_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestHandEditedStatusRepaired: an app's, a storage deployment's and a route's status that
// their reconciler would not write (edited by hand here; in a run, one whose write was skipped
// against a cache that did not hold the reconciler's last write yet) is rewritten on the event
// of that status change alone: no spec changes, and the informers' resync is hours away. Then
// nothing more is written: a reconciler's own write reaching its cache makes it look again, and
// that look writes nothing.
func TestHandEditedStatusRepaired(t *testing.T) {
	const ws, cluster = "repair-ws", "repair-01"
	const prompt = 10 * time.Second
	_, c := startHub(t)
	v := appView{t, c, ws, cluster}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "")
	app := v.app("web", "hello")
	sd := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "sd"}, Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: cluster}}
	rt := route(ws, "all", v1alpha1.OCIStorageRouteSpec{Priority: 10, ClusterSelectors: selector(clusterv1beta2.ClusterSetLabel, cluster), Registries: []string{"source"}})
	v.create(&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		app, sd, rt,
		testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example/fleet", AgentUsername: "a", AgentPassword: "p"}))
	defer runControllers(t, sharedHub.Config, "apps,storage-site,routing")()

	// settled waits until obj's status describes its generation and has been the same for a
	// second, and returns it, without the conditions' transition times.
	settled := func(obj client.Object, status func() any, observed func() int64) any {
		t.Helper()
		var last any
		var since time.Time
		testkit.Eventually(t, time.Minute, obj.GetName()+" settled", func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			if observed() != obj.GetGeneration() {
				return fmt.Errorf("observedGeneration %d of %d", observed(), obj.GetGeneration())
			}
			now := normalized(status())
			if last == nil || !equality.Semantic.DeepEqual(last, now) {
				last, since = now, time.Now()
			}
			if time.Since(since) < time.Second {
				return fmt.Errorf("status changed %v ago", time.Since(since))
			}
			return nil
		})
		return last
	}
	cases := []struct {
		obj      client.Object
		status   func() any
		observed func() int64
		edit     func()
	}{
		{app, func() any { return app.Status }, func() int64 { return app.Status.ObservedGeneration }, func() { app.Status.Phase, app.Status.Message = v1alpha1.AppDeployed, "edited by hand" }},
		{sd, func() any { return sd.Status }, func() int64 { return sd.Status.ObservedGeneration }, func() { sd.Status.Phase, sd.Status.Message = storagev1alpha2.PhaseOnline, "edited by hand" }},
		{rt, func() any { return rt.Status }, func() int64 { return rt.Status.ObservedGeneration }, func() { rt.Status.MatchedClusters, rt.Status.MatchedClusterSample = 7, []string{"edited-by-hand"} }},
	}
	for _, tc := range cases {
		want := settled(tc.obj, tc.status, tc.observed)
		testkit.Eventually(t, prompt, "status of "+tc.obj.GetName()+" edited", func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(tc.obj), tc.obj); err != nil {
				return err
			}
			tc.edit()
			return c.Status().Update(t.Context(), tc.obj)
		})
		start := time.Now()
		testkit.Eventually(t, prompt, "status of "+tc.obj.GetName()+" repaired", func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(tc.obj), tc.obj); err != nil {
				return err
			}
			if got := normalized(tc.status()); !equality.Semantic.DeepEqual(got, want) {
				return fmt.Errorf("status %+v, want %+v", got, want)
			}
			return nil
		})
		wakesWithin(t, fmt.Sprintf("%T %s repaired", tc.obj, tc.obj.GetName()), start, prompt)
	}

	// Steady state: the repairs' own writes reaching the caches wrote nothing more.
	time.Sleep(time.Second)
	before := map[string]float64{}
	kinds := []string{"fleetapp", "storagesitedeployment", "ocistorageroute"}
	for _, k := range kinds {
		before[k] = writes(k, "status")
	}
	time.Sleep(5 * time.Second)
	for _, k := range kinds {
		if n := writes(k, "status") - before[k]; n != 0 {
			t.Errorf("%s: %.0f status writes in a settled 5 s window, want 0", k, n)
		}
	}
}

// normalized is a status value without the conditions' lastTransitionTime, which a repair sets
// anew.
func normalized(status any) any {
	switch s := status.(type) {
	case v1alpha1.FleetAppStatus:
		s.Conditions = withoutTimes(s.Conditions)
		return s
	case storagev1alpha2.StorageSiteDeploymentStatus:
		s.Conditions = withoutTimes(s.Conditions)
		return s
	case v1alpha1.OCIStorageRouteStatus:
		s.Conditions = withoutTimes(s.Conditions)
		return s
	}
	panic(fmt.Sprintf("normalized: %T", status))
}

func withoutTimes(conds []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, len(conds))
	for i, c := range conds {
		c.LastTransitionTime = metav1.Time{}
		out[i] = c
	}
	return out
}
