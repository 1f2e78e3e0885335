package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAppThroughTheFleet installs a Helm chart on eu-01 end to end on real parts: the hub's apps
// reconciler writes the release request into a ManifestWork, OCM's work agent carries it to the
// cluster, fleet-controller agent pulls the chart through eu-01's routed chain (mirror first,
// replication wait) and installs it with Helm on the cluster's apiserver, and the release's status
// comes back to the FleetApp; the app's route is published by mode, and deleting the app
// uninstalls the release.
func TestAppThroughTheFleet(t *testing.T) {
	begin := time.Now()
	p := startPullFleet(t, pullFleetOptions{})
	runManager(t, p.fleet.Hub, "sites,cluster-joins,apps,app-routes")
	t.Logf("fleet, registries and managers up in %v", time.Since(begin).Round(time.Millisecond))
	ctx, hub, spoke := p.ctx, p.hub, p.agents[pullCluster].spoke

	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := hub.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	wsMeta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: pullWS, Name: name} }
	app := func() *v1alpha1.FleetApp {
		var a v1alpha1.FleetApp
		if err := hub.Get(ctx, client.ObjectKey{Namespace: pullWS, Name: "hello"}, &a); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	awaitApp := func(what string, check func(*v1alpha1.FleetApp) error) *v1alpha1.FleetApp {
		t.Helper()
		var a *v1alpha1.FleetApp
		start := time.Now()
		testkit.Eventually(t, converge, "app hello: "+what, func() error {
			a = app()
			if a.Status.ObservedGeneration != a.Generation {
				return fmt.Errorf("observed generation %d of %d", a.Status.ObservedGeneration, a.Generation)
			}
			return check(a)
		}, func() string { return p.explainApp(a) })
		t.Logf("app hello: %s after %v", what, time.Since(start).Round(time.Millisecond))
		return a
	}
	phase := func(want v1alpha1.AppPhase) func(*v1alpha1.FleetApp) error {
		return func(a *v1alpha1.FleetApp) error {
			if a.Status.Phase != want {
				return fmt.Errorf("phase %s (%s): %s", a.Status.Phase, a.Status.Reason, a.Status.Message)
			}
			return nil
		}
	}
	greeting := func(want string) error {
		var cm corev1.ConfigMap
		if err := spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "hello-hello"}, &cm); err != nil {
			return err
		}
		if cm.Data["greeting"] != want {
			return fmt.Errorf("greeting %q", cm.Data["greeting"])
		}
		return nil
	}

	create(
		&v1alpha1.FleetSite{ObjectMeta: wsMeta("lab"), Spec: v1alpha1.FleetSiteSpec{
			Edge:       v1alpha1.SiteEdge{Ingress: []v1alpha1.IngressEntry{{ID: "wan", Method: v1alpha1.IngressPortForward, Address: "203.0.113.7", Ports: &v1alpha1.IngressPorts{HTTP: 30080}}}},
			HubGateway: &v1alpha1.HubGateway{Enabled: true, Domain: "apps.example.test"}}},
		&v1alpha1.FleetClusterJoin{ObjectMeta: wsMeta(pullCluster), Spec: v1alpha1.FleetClusterJoinSpec{
			Cluster: pullCluster, Site: "lab", Edge: &v1alpha1.ClusterJoinEdge{IngressID: "wan"}}},
	)
	t.Run("the join labels the cluster with its site", func(t *testing.T) {
		testkit.Eventually(t, converge, "eu-01 labelled fleet.site=lab", func() error {
			var mc clusterv1.ManagedCluster
			if err := hub.Get(ctx, client.ObjectKey{Name: pullCluster}, &mc); err != nil {
				return err
			}
			if mc.Labels[v1alpha1.SiteLabel] != "lab" {
				return fmt.Errorf("labels %v", mc.Labels)
			}
			return nil
		})
	})

	chart := testbed.HelloChart("hello", "0.1.0")
	d := p.source.PushChartT(t, "charts/hello", chart)
	create(
		&v1alpha1.FleetChart{ObjectMeta: wsMeta("hello"), Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		&v1alpha1.FleetApp{ObjectMeta: wsMeta("hello"), Spec: v1alpha1.FleetAppSpec{Chart: "hello", Cluster: pullCluster, Namespace: "hello",
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello from the hub"}`)}}},
	)

	t.Run("the chart on the source only: the app waits for the mirror", func(t *testing.T) {
		a := awaitApp("WaitingForArtifact at the mirror", phase(v1alpha1.AppWaitingForArtifact))
		if a.Status.Registry != "mirror" || a.Status.NextRetry == nil {
			t.Errorf("registry %q next retry %v: want the mirror, with a retry time", a.Status.Registry, a.Status.NextRetry)
		}
		if err := spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "hello-hello"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("the release's ConfigMap before the chart was pulled: %v", err)
		}
	})

	t.Run("replicated: pulled from the mirror and installed, revision 1", func(t *testing.T) {
		if _, err := p.mirror.Copy(ctx, p.source, "charts/hello", "0.1.0"); err != nil {
			t.Fatal(err)
		}
		a := awaitApp("Deployed", phase(v1alpha1.AppDeployed))
		if a.Status.Revision != 1 || a.Status.Registry != "mirror" || a.Status.Digest != d.Digest.String() {
			t.Errorf("revision %d registry %q digest %q; want 1, mirror, %s", a.Status.Revision, a.Status.Registry, a.Status.Digest, d.Digest)
		}
		if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Ready %+v", c)
		}
		if err := greeting("hello from the hub"); err != nil {
			t.Error(err)
		}
		var svc corev1.Service
		if err := spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "hello"}, &svc); err != nil || svc.Spec.Ports[0].Port != 80 {
			t.Errorf("the release's Service: %v %+v", err, svc.Spec.Ports)
		}
		testkit.Eventually(t, converge, "the chart's resolved digest", func() error {
			var c v1alpha1.FleetChart
			if err := hub.Get(ctx, client.ObjectKey{Namespace: pullWS, Name: "hello"}, &c); err != nil {
				return err
			}
			if c.Status.Digest != d.Digest.String() || c.Status.Apps != 1 {
				return fmt.Errorf("digest %q apps %d", c.Status.Digest, c.Status.Apps)
			}
			return nil
		})
	})

	t.Run("new values: Helm upgrades the release to revision 2", func(t *testing.T) {
		testkit.Update(t, hub, app(), func(a *v1alpha1.FleetApp) {
			a.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello again"}`)}
		})
		a := awaitApp("Deployed at revision 2", func(a *v1alpha1.FleetApp) error {
			if err := phase(v1alpha1.AppDeployed)(a); err != nil {
				return err
			}
			if a.Status.Revision != 2 {
				return fmt.Errorf("revision %d", a.Status.Revision)
			}
			return nil
		})
		_ = a
		if err := greeting("hello again"); err != nil {
			t.Error(err)
		}
		// Deployed: nothing more to write.
		before := testkit.Counter("fleet_hub_writes_total", nil)
		time.Sleep(3 * time.Second)
		if n := testkit.Counter("fleet_hub_writes_total", nil) - before; n != 0 {
			t.Errorf("%v hub writes in 3 s once Deployed; want none", n)
		}
	})

	t.Run("the route's mode changes site → none → hub, cleaning up each time", func(t *testing.T) {
		route := &v1alpha1.FleetAppRoute{ObjectMeta: wsMeta("hello"), Spec: v1alpha1.FleetAppRouteSpec{App: "hello", Mode: v1alpha1.RouteSite,
			Host: "hello.apps.example.test", Path: "/", Service: v1alpha1.RouteBackend{Name: "hello", Port: 80}}}
		create(route)
		ingress := func() (*networkingv1.Ingress, error) {
			var ing networkingv1.Ingress
			return &ing, spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "route." + pullWS + ".hello"}, &ing)
		}
		// The gateway's fragments live in the controller's gateway namespace.
		if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultGatewayNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		hubConfig := func() (*corev1.ConfigMap, error) {
			var cm corev1.ConfigMap
			return &cm, hub.Get(ctx, client.ObjectKey{Namespace: controller.DefaultGatewayNamespace, Name: controller.GatewayName(pullWS, "hello")}, &cm)
		}
		awaitRoute := func(mode v1alpha1.RouteMode, url string) {
			t.Helper()
			testkit.Eventually(t, converge, "route "+string(mode), func() error {
				var r v1alpha1.FleetAppRoute
				if err := hub.Get(ctx, client.ObjectKeyFromObject(route), &r); err != nil {
					return err
				}
				c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition)
				if r.Status.ObservedGeneration != r.Generation || c == nil || c.Status != metav1.ConditionTrue || r.Status.URL != url {
					return fmt.Errorf("observed %d of %d, url %q, Ready %+v", r.Status.ObservedGeneration, r.Generation, r.Status.URL, c)
				}
				// Site mode is Ready once the cluster's work agent applied the Ingress's work.
				if d := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.DeliveredCondition); mode == v1alpha1.RouteSite &&
					(d == nil || d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonWorkApplied || d.ObservedGeneration != r.Generation) {
					return fmt.Errorf("site mode, Delivered %+v", d)
				}
				return nil
			})
		}
		setMode := func(mode v1alpha1.RouteMode) {
			testkit.Update(t, hub, route, func(r *v1alpha1.FleetAppRoute) { r.Spec.Mode = mode })
		}

		awaitRoute(v1alpha1.RouteSite, "http://hello.apps.example.test/")
		testkit.Eventually(t, converge, "the Ingress on eu-01", func() error {
			ing, err := ingress()
			if err != nil {
				return err
			}
			r := ing.Spec.Rules
			if len(r) != 1 || r[0].Host != "hello.apps.example.test" || r[0].HTTP == nil || r[0].HTTP.Paths[0].Backend.Service.Name != "hello" ||
				r[0].HTTP.Paths[0].Backend.Service.Port.Number != 80 {
				return fmt.Errorf("rules %+v", r)
			}
			return nil
		})
		if _, err := hubConfig(); !apierrors.IsNotFound(err) {
			t.Errorf("a hub gateway ConfigMap in site mode: %v", err)
		}

		setMode(v1alpha1.RouteNone)
		awaitRoute(v1alpha1.RouteNone, "")
		testkit.Eventually(t, converge, "the Ingress gone from eu-01", func() error {
			if _, err := ingress(); !apierrors.IsNotFound(err) {
				return fmt.Errorf("ingress: %v", err)
			}
			return nil
		})

		setMode(v1alpha1.RouteHub)
		awaitRoute(v1alpha1.RouteHub, "http://hello.apps.example.test/")
		testkit.Eventually(t, converge, "the hub gateway's fragment and the Ingress on eu-01", func() error {
			cm, err := hubConfig()
			if err != nil {
				return err
			}
			if frag := cm.Data["traefik.yaml"]; !strings.Contains(frag, "Host(`hello.apps.example.test`)") || !strings.Contains(frag, "url:") {
				return fmt.Errorf("fragment %q", frag)
			}
			_, err = ingress()
			return err
		})

		setMode(v1alpha1.RouteSite)
		awaitRoute(v1alpha1.RouteSite, "http://hello.apps.example.test/")
		testkit.Eventually(t, converge, "the hub gateway's fragment gone", func() error {
			if _, err := hubConfig(); !apierrors.IsNotFound(err) {
				return fmt.Errorf("configmap: %v", err)
			}
			return nil
		})
	})

	// A new chart version changes the chart, not the app: the app's status names the chart
	// generation it describes (what fleet_chart's and fleet_app's wait_for wait for), and is
	// Deployed only once the cluster runs the new chart, or Failed with Helm's message.
	setVersion := func(version string) int64 {
		t.Helper()
		var c v1alpha1.FleetChart
		c.Namespace, c.Name = pullWS, "hello"
		testkit.Update(t, hub, &c, func(c *v1alpha1.FleetChart) { c.Spec.Version = version })
		return c.Generation
	}
	atChart := func(generation int64, want v1alpha1.AppPhase, check func(*v1alpha1.FleetApp) error) func(*v1alpha1.FleetApp) error {
		return func(a *v1alpha1.FleetApp) error {
			if a.Status.ChartGeneration != generation {
				return fmt.Errorf("status of chart generation %d, want %d", a.Status.ChartGeneration, generation)
			}
			if err := phase(want)(a); err != nil {
				return err
			}
			return check(a)
		}
	}
	t.Run("a new chart version: Deployed at the chart's new generation, with its digest", func(t *testing.T) {
		d2 := p.source.PushChartT(t, "charts/hello", testbed.HelloChart("hello", "0.2.0"))
		if _, err := p.mirror.Copy(ctx, p.source, "charts/hello", "0.2.0"); err != nil {
			t.Fatal(err)
		}
		before := app().Status.Revision
		gen := setVersion("0.2.0")
		awaitApp("Deployed at chart generation "+fmt.Sprint(gen), atChart(gen, v1alpha1.AppDeployed, func(a *v1alpha1.FleetApp) error {
			if a.Status.Digest != d2.Digest.String() || a.Status.Revision != before+1 {
				return fmt.Errorf("digest %s revision %d; want %s, revision %d", a.Status.Digest, a.Status.Revision, d2.Digest, before+1)
			}
			return nil
		}))
	})
	t.Run("a chart version that does not render: Failed with Helm's message", func(t *testing.T) {
		p.source.PushChartT(t, "charts/hello", testbed.PackageChart("hello", "0.3.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }-broken\n"))
		if _, err := p.mirror.Copy(ctx, p.source, "charts/hello", "0.3.0"); err != nil {
			t.Fatal(err)
		}
		gen := setVersion("0.3.0")
		a := awaitApp("Failed at chart generation "+fmt.Sprint(gen), atChart(gen, v1alpha1.AppFailed, func(*v1alpha1.FleetApp) error { return nil }))
		if !strings.Contains(a.Status.Message, "the release failed") || !strings.Contains(a.Status.Message, "hello.yaml") {
			t.Errorf("message %q: want the release's failure naming the template", a.Status.Message)
		}
		gen = setVersion("0.2.0")
		awaitApp("Deployed again at chart generation "+fmt.Sprint(gen), atChart(gen, v1alpha1.AppDeployed, func(*v1alpha1.FleetApp) error { return nil }))
	})

	t.Run("deleting the app uninstalls the release", func(t *testing.T) {
		a := app()
		work := a.Status.WorkName
		if err := hub.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, converge, "app, work and release gone", func() error {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(a), &v1alpha1.FleetApp{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("app: %v", err)
			}
			if err := hub.Get(ctx, client.ObjectKey{Namespace: pullCluster, Name: work}, &workv1.ManifestWork{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work %s: %v", work, err)
			}
			if err := spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "hello-hello"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the release's ConfigMap: %v", err)
			}
			if err := spoke.Get(ctx, client.ObjectKey{Namespace: "hello", Name: "hello"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the release's Service: %v", err)
			}
			var releases v1alpha1.FleetReleaseList
			if err := spoke.List(ctx, &releases, client.InNamespace(ocichain.Namespace)); err != nil || len(releases.Items) != 0 {
				return fmt.Errorf("%d FleetReleases on the cluster (%v)", len(releases.Items), err)
			}
			return nil
		}, func() string { return p.fleet.Cluster(pullCluster).AgentLog() })
	})
}

// explainApp shows the app's status, its work on the hub and the release request on eu-01.
func (p *pullFleet) explainApp(a *v1alpha1.FleetApp) string {
	if a == nil {
		return "no app read"
	}
	var w workv1.ManifestWork
	werr := p.hub.Get(p.ctx, client.ObjectKey{Namespace: pullCluster, Name: a.Status.WorkName}, &w)
	var releases v1alpha1.FleetReleaseList
	rerr := p.agents[pullCluster].spoke.List(p.ctx, &releases, client.InNamespace(ocichain.Namespace))
	var out strings.Builder
	fmt.Fprintf(&out, "app status %+v\nwork %q (%v): conditions %+v\n", a.Status, a.Status.WorkName, werr, w.Status.Conditions)
	for _, m := range w.Status.ResourceStatus.Manifests {
		fmt.Fprintf(&out, "  %s %s: %+v\n", m.ResourceMeta.Kind, m.ResourceMeta.Name, m.StatusFeedbacks.Values)
	}
	fmt.Fprintf(&out, "FleetReleases on eu-01 (%v):\n", rerr)
	for _, r := range releases.Items {
		fmt.Fprintf(&out, "  %s: %+v\n", r.Name, r.Status)
	}
	out.WriteString(p.fleet.Cluster(pullCluster).AgentLog())
	return out.String()
}
