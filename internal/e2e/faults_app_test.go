package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestFaultAppOnTheFleet runs an app on eu-01 end to end on real parts (the hub's apps
// reconciler, OCM's work agent, fleet-controller agent, Helm) and hurts the fleet four ways:
//   - the cluster's work agent is stopped while the app's values change, then restarted: the
//     release is upgraded (revision 2, the new values on the cluster) and the hub reports it
//     Deployed; the time to converge after the restart is printed;
//   - the agent is SIGKILLed during a Helm install and during an upgrade, and SIGTERMed during an
//     upgrade (helmAgentKilled, faults_helm_test.go): the release recovers, Deployed on the hub;
//   - the agent is SIGKILLed mid-pull of a 200 MiB artifact (agentKilledMidPull,
//     faults_cache_test.go): the restarted agent pulls it from a clean cache;
//   - the cluster is deleted from the hub (its agent gone first, as a detached cluster's is) and
//     the app deleted: the app goes at once, with a Warning Event Orphaned naming the release
//     left on the cluster, where it stays.
func TestFaultAppOnTheFleet(t *testing.T) {
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

	// The agent killed during Helm operations, on the same fleet (faults_helm_test.go).
	bin := testkit.Binary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	t.Run("the agent killed during Helm operations", func(t *testing.T) { p.helmAgentKilled(t, bin) })
	// The agent killed mid-pull, on the same fleet (faults_cache_test.go).
	t.Run("the agent killed mid-pull", func(t *testing.T) { p.agentKilledMidPull(t, bin) })

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
