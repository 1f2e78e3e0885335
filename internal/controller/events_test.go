package controller_test

import (
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
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// lateCluster registers ManagedCluster name, in a set of its own name bound to ws, as OCM
// does after the objects naming it exist; unlike managedCluster, its namespace, set and binding
// come first, so that only the ManagedCluster's own events can wake what waits for it.
func lateCluster(t *testing.T, c client.Client, ws, name, url string) *clusterv1.ManagedCluster {
	t.Helper()
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}, bindingOf(ws, name)} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	return registerCluster(t, c, name, url)
}

func registerCluster(t *testing.T, c client.Client, name, url string) *clusterv1.ManagedCluster {
	t.Helper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: name}}}
	if url != "" {
		mc.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: url}}
	}
	if err := c.Create(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

// wakesWithin fails the test unless done passes within d of start: what a ManagedCluster's
// event delivers comes in seconds, not at a resync.
func wakesWithin(t *testing.T, what string, start time.Time, d time.Duration) {
	t.Helper()
	if took := time.Since(start); took > d {
		t.Errorf("%s took %v, want under %v", what, took, d)
	} else {
		t.Logf("%s in %v", what, took)
	}
}

// Hosts are unique on the shared hub: a host serves one workspace at a time.

// TestAppsAndRoutesWakeOnClusterRegistration: an app and a route created before their cluster
// registers wait with ClusterNotFound, and go on within seconds of the ManagedCluster's
// creation, without a controller restart and with no other object changing; the same when the
// cluster re-registers (deleted and created again), and a route follows a change of the
// cluster's client config (spec.managedClusterClientConfigs, the hub gateway's address).
func TestAppsAndRoutesWakeOnClusterRegistration(t *testing.T) {
	const ws, cluster = "late-ws", "late-01"
	const prompt = 15 * time.Second
	_, c := startHub(t)
	v := routeView{appView{t, c, ws, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	gatewayNamespace(t, c)
	defer runControllers(t, sharedHub.Config, "apps,app-routes")()

	site := siteSpec()
	site.HubGateway = &v1alpha1.HubGateway{Enabled: true, Domain: "apps.example.com"}
	v.create(&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"},
		Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "berlin"}, Spec: site},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}},
		v.app("web", "hello"),
		v.route("web", "web", v1alpha1.RouteHub, "late.apps.example.com", nil))
	v.appIs("web", v1alpha1.AppPending, v1alpha1.ReasonClusterNotFound, nil)
	v.routeIs("web", "False/"+v1alpha1.ReasonClusterNotFound, "", "", `no ManagedCluster "late-01"`)
	time.Sleep(time.Second) // every event of the objects above is handled

	start := time.Now()
	mc := lateCluster(t, c, ws, cluster, "")
	v.work("web", nil)
	wakesWithin(t, "app delivered after registration", start, prompt)
	v.routeIs("web", "False/NoHubGateway", "", "", "no spec.managedClusterClientConfigs URL")
	wakesWithin(t, "route woken by registration", start, prompt)

	// The cluster's client config is set: the route publishes through its address.
	start = time.Now()
	testkit.Update(t, c, mc, func(m *clusterv1.ManagedCluster) {
		m.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: "https://192.0.2.20:6443"}}
	})
	v.routeIs("web", "True/Published", controller.DefaultGatewayNamespace+"/"+controller.GatewayName(ws, "web"), "http://late.apps.example.com/", "192.0.2.20")
	wakesWithin(t, "route following the client config", start, prompt)

	// Re-registration: the cluster goes (the app waits again) and comes back (delivered again).
	if err := c.Delete(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	v.appIs("web", v1alpha1.AppPending, v1alpha1.ReasonClusterNotFound, nil)
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "app." + ws + ".web"}}
	if err := c.Delete(t.Context(), w); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	v.gone(w)
	time.Sleep(time.Second)
	start = time.Now()
	registerCluster(t, c, cluster, "")
	v.work("web", nil)
	wakesWithin(t, "app delivered after re-registration", start, prompt)
}

// TestRoutesFollowJoinedByAnnotation: which join counts for a cluster named by joins of two
// workspaces is the one its joined-by annotation names (the join reconciler sets it); a route
// of the workspace whose join does not count is NotJoined, and goes on within seconds of the
// annotation naming its workspace's join, with no other object changing.
func TestRoutesFollowJoinedByAnnotation(t *testing.T) {
	const wsA, wsB, cluster = "annot-a", "annot-b", "annot-01"
	const prompt = 15 * time.Second
	_, c := startHub(t)
	v := routeView{appView{t, c, wsB, cluster}}
	site := siteSpec()
	site.HubGateway = &v1alpha1.HubGateway{Enabled: true, Domain: "apps.example.com"}
	for _, ws := range []string{wsA, wsB} {
		v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	}
	gatewayNamespace(t, c)
	mc := lateCluster(t, c, wsA, cluster, "https://192.0.2.30:6443")
	v.create(bindingOf(wsB, cluster),
		&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: wsA, Name: "berlin"}, Spec: site},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: wsA, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}})
	time.Sleep(1100 * time.Millisecond) // wsB's join is a second younger: wsA's counts by age
	v.create(&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: wsB, Name: "berlin"}, Spec: site},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: wsB, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}},
		v.app("web", "hello"),
		v.route("web", "web", v1alpha1.RouteHub, "annot.apps.example.com", nil))
	defer runControllers(t, sharedHub.Config, "app-routes")()
	v.routeIs("web", "False/"+v1alpha1.ReasonNotJoined, "", "", "no FleetClusterJoin of "+wsB)
	time.Sleep(time.Second) // every event of the objects above is handled

	start := time.Now()
	testkit.Update(t, c, mc, func(m *clusterv1.ManagedCluster) {
		m.Annotations = map[string]string{v1alpha1.JoinedByAnnotation: wsB + "/" + cluster}
	})
	v.routeIs("web", "True/Published", controller.DefaultGatewayNamespace+"/"+controller.GatewayName(wsB, "web"), "http://annot.apps.example.com/", "192.0.2.30")
	wakesWithin(t, "route following the joined-by annotation", start, prompt)
}
