package e2e_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/config/rbac"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// The three workspaces of TestTenancy. wsA and wsB are both bound to the demo set edge; their
// apps web and default-web were both named app-fleet-default-web before names were injective.
// wsOut is bound to no set.
const (
	wsA   = pullWS // fleet-default
	wsB   = "fleet"
	wsOut = "outsider"
	// gatewayless is an edge cluster without agents, where wsB's site publishes through the
	// hub gateway (a cluster has one join, and eu-01's is wsA's).
	gatewayless = "eu-02"
)

// TestTenancy is issue 19's tenancy story on one hub of the local fleet (the hub controller, eu-01
// with OCM's real work agent and fleet-controller agent as its ServiceAccount with only the
// chart's roles, real registries and Traefik's router), with three workspaces, two bound to the
// same set and one bound to none:
//   - colliding names (fleet-default/web, fleet/default-web) get works of their own, both
//     releases deploy, and the settled hub writes nothing (resourceVersions, hub writes);
//   - the unbound workspace's join labels nothing and its app writes no work: both NotBound,
//     naming the set to bind;
//   - the apiserver refuses hostile route paths; a host of another workspace's domain is
//     HostTaken, one outside the workspace's domain HostOutsideDomain;
//   - a ConfigMap a tenant writes with the gateway label in its namespace never reaches the
//     gateway: Traefik sends each host only to its own workspace's backend;
//   - the agent leaves a release it did not install alone (OwnedElsewhere), and holds only the
//     chart's roles: it reads no Secret outside fleet-system;
//   - a tenant holding only the shipped tenant roles reads its workspace's view and nothing of
//     another workspace's: not its chains (ManifestWorks, ClusterOCIStorage), not its registry;
//   - a route no duration can hold (stored under a loosened CRD) stops no other route.
func TestTenancy(t *testing.T) {
	begin := time.Now()
	p := startPullFleet(t, pullFleetOptions{})
	runManager(t, p.fleet.Hub, "sites,cluster-joins,apps,app-routes")
	ctx, c, spoke := p.ctx, p.hub, p.agents[pullCluster].spoke
	t.Logf("fleet, registries and managers up in %v", time.Since(begin).Round(time.Millisecond))
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("%T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	chart := testbed.HelloChart("hello", "0.1.0")
	p.source.PushChartT(t, "charts/hello", chart)
	p.mirror.PushChartT(t, "charts/hello", chart)
	for _, ws := range []string{wsB, wsOut, controller.DefaultGatewayNamespace} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	}
	create(&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: wsB, Name: "edge"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "edge"}},
		registrySecret(wsB, "source", registrysecret.RoleSource, p.source, agentPass),
		route(wsB, "all", v1alpha1.OCIStorageRouteSpec{Priority: 100, Default: true, Registries: []string{"source"}}))
	for _, ws := range []string{wsA, wsB, wsOut} {
		create(&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}})
	}
	app := func(ws, name, cluster, namespace, greeting string) *v1alpha1.FleetApp {
		return &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}, Spec: v1alpha1.FleetAppSpec{Chart: "hello", Cluster: cluster,
			Namespace: namespace, Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"` + greeting + `"}`)}}}
	}
	site := func(ws, name, domain, address string) *v1alpha1.FleetSite {
		return &v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}, Spec: v1alpha1.FleetSiteSpec{
			Edge:       v1alpha1.SiteEdge{Ingress: []v1alpha1.IngressEntry{{ID: "wan", Method: v1alpha1.IngressPortForward, Address: address, Ports: &v1alpha1.IngressPorts{HTTP: 30080}}}},
			HubGateway: &v1alpha1.HubGateway{Enabled: true, Domain: domain}}}
	}
	join := func(ws, cluster, site string, capabilities ...string) *v1alpha1.FleetClusterJoin {
		return &v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{
			Cluster: cluster, Site: site, Edge: &v1alpha1.ClusterJoinEdge{IngressID: "wan"}, Capabilities: capabilities}}
	}
	hubRoute := func(ws, name, app, host, path string) *v1alpha1.FleetAppRoute {
		return &v1alpha1.FleetAppRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}, Spec: v1alpha1.FleetAppRouteSpec{App: app,
			Mode: v1alpha1.RouteHub, Host: host, Path: path, Service: v1alpha1.RouteBackend{Name: "hello", Port: 80}}}
	}
	worksOf := func(cluster, ws string) []string {
		t.Helper()
		var works workv1.ManifestWorkList
		if err := c.List(ctx, &works, client.InNamespace(cluster), client.MatchingLabels{hub.WorkspaceLabel: ws}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, w := range works.Items {
			names = append(names, w.Name)
		}
		return names
	}
	clusterMeta := func(name string) (map[string]string, map[string]string) {
		t.Helper()
		var mc clusterv1.ManagedCluster
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
			t.Fatal(err)
		}
		return mc.Labels, mc.Annotations
	}

	t.Run("the unbound workspace: its join labels nothing, its app writes no work", func(t *testing.T) {
		labels, annotations := clusterMeta(pullCluster)
		create(site(wsOut, "lab", "out.example.test", "203.0.113.9"), join(wsOut, pullCluster, "lab", "gpu"),
			app(wsOut, "web", pullCluster, "shop-out", "outsider"))
		notBound := []string{"cluster " + pullCluster + " is in no ManagedClusterSet bound to workspace " + wsOut, "(edge)"}
		awaitCondition(t, c, join(wsOut, pullCluster, ""), v1alpha1.JoinedCondition, "False/NotBound", notBound...)
		awaitCondition(t, c, app(wsOut, "web", "", "", ""), v1alpha1.DeliveredCondition, "False/NotBound", notBound...)
		if got, gotAnn := clusterMeta(pullCluster); !maps.Equal(got, labels) || !maps.Equal(gotAnn, annotations) {
			t.Errorf("the unbound join changed %s: labels %v → %v, annotations %v → %v", pullCluster, labels, got, annotations, gotAnn)
		}
		if got := worksOf(pullCluster, wsOut); len(got) != 0 {
			t.Errorf("works of the unbound workspace in %s: %v, want none", pullCluster, got)
		}
	})

	webA, webB := app(wsA, "web", pullCluster, "shop-a", "from-a"), app(wsB, "default-web", pullCluster, "shop-b", "from-b")
	t.Run("colliding names: two works, two releases", func(t *testing.T) {
		start := time.Now()
		// An app is delivered once its cluster is joined to a site; eu-01 joins workspace A's.
		create(site(wsA, "a", "a.example.test", "203.0.113.7"), join(wsA, pullCluster, "a"), webA, webB)
		for _, tc := range []struct {
			app             *v1alpha1.FleetApp
			work, configMap string
			greeting        string
		}{
			{webA, "app." + wsA + ".web", "shop-a/web-hello", "from-a"},
			{webB, "app." + wsB + ".default-web", "shop-b/default-web-hello", "from-b"},
		} {
			a := awaitApp(t, p, tc.app, v1alpha1.AppDeployed)
			if a.Status.WorkName != tc.work || a.Status.Revision != 1 {
				t.Errorf("app %s/%s: work %q revision %d, want %q at revision 1", a.Namespace, a.Name, a.Status.WorkName, a.Status.Revision, tc.work)
			}
			ns, name, _ := strings.Cut(tc.configMap, "/")
			var cm corev1.ConfigMap
			if err := spoke.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil || cm.Data["greeting"] != tc.greeting {
				t.Errorf("release ConfigMap %s on %s: %v, greeting %q, want %q", tc.configMap, pullCluster, err, cm.Data["greeting"], tc.greeting)
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: pullCluster, Name: "app-" + wsA + "-web"}, &workv1.ManifestWork{}); !apierrors.IsNotFound(err) {
			t.Errorf("work of the old, colliding name: %v", err)
		}
		t.Logf("both apps Deployed in %v", time.Since(start).Round(time.Millisecond))
	})

	t.Run("the apiserver refuses hostile route paths", func(t *testing.T) {
		for _, path := range []string{"/x`) || Host(`shop.a.example.test`) && PathPrefix(`/", "/a/../admin", "/x') || Host('y"} {
			err := c.Create(ctx, hubRoute(wsB, "hostile", "default-web", "web.b.example.test", path))
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.path") {
				t.Errorf("route with path %q: %v, want Invalid naming spec.path", path, err)
			}
		}
	})

	aShop, bWeb := controller.GatewayName(wsA, "shop"), controller.GatewayName(wsB, "web")
	t.Run("hosts: another workspace's is taken, one outside the domain refused", func(t *testing.T) {
		// The gateway reaches eu-02 at the address its registration reports.
		testkit.Update(t, c, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: gatewayless}}, func(mc *clusterv1.ManagedCluster) {
			mc.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: "https://203.0.113.8:6443"}}
		})
		create(site(wsB, "b", "b.example.test", "203.0.113.8"), join(wsB, gatewayless, "b"),
			app(wsB, "gw", gatewayless, "shop-b", "gateway"),
			hubRoute(wsA, "shop", "web", "shop.a.example.test", "/"))
		awaitRoute(t, c, wsA, "shop", "True/Published", "http://shop.a.example.test/")
		time.Sleep(1100 * time.Millisecond) // wsB's claims are a second younger: the host is wsA's by creation
		create(hubRoute(wsB, "web", "gw", "web.b.example.test", "/"),
			hubRoute(wsB, "steal", "gw", "shop.a.example.test", "/admin"),
			hubRoute(wsB, "outside", "gw", "pay.a.example.test", "/"))
		awaitRoute(t, c, wsB, "web", "True/Published", "http://web.b.example.test/")
		awaitRoute(t, c, wsB, "steal", "False/HostTaken", "", "belongs to workspace "+wsA, "FleetAppRoute "+wsA+"/shop")
		awaitRoute(t, c, wsB, "outside", "False/HostOutsideDomain", "", `"b.example.test"`)
	})

	t.Run("the gateway reads only its namespace: a tenant's ConfigMap hijacks nothing", func(t *testing.T) {
		planted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: wsB, Name: "planted", Labels: map[string]string{hub.GatewayLabel: hub.GatewayTraefik}},
			Data: map[string]string{controller.TraefikKey: "http:\n  routers:\n    planted:\n      rule: Host(`shop.a.example.test`)\n      service: planted\n" +
				"  services:\n    planted:\n      loadBalancer:\n        servers:\n          - url: http://203.0.113.8\n"}}
		create(planted)
		time.Sleep(2 * time.Second) // what the controller would do with it
		fragments := testkit.GatewayFragments(t, c)
		if names, want := slices.Sorted(maps.Keys(fragments)), []string{aShop + ".yaml", bWeb + ".yaml"}; !slices.Equal(names, want) {
			t.Fatalf("gateway fragments %v, want %v", names, want)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: controller.DefaultGatewayNamespace, Name: planted.Name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("the tenant's ConfigMap in the gateway namespace: %v, want NotFound", err)
		}
		cases := map[string]string{ // URL → the service Traefik must reach, "" for none
			"http://shop.a.example.test/":      aShop,
			"http://shop.a.example.test/admin": aShop, // wsB's attempt: still wsA's
			"http://web.b.example.test/":       bWeb,
			"http://pay.a.example.test/":       "",
		}
		routes, problems := testbed.TraefikRoutes(t, fragments, slices.Sorted(maps.Keys(cases))...)
		if len(problems) > 0 {
			t.Errorf("Traefik reports problems in the controller's fragments: %v", problems)
		}
		for u, svc := range cases {
			if routes[u].Service != svc {
				t.Errorf("Traefik sends %s to %+v, want service %q", u, routes[u], svc)
			}
		}
	})

	t.Run("the agent leaves a release it did not install alone", func(t *testing.T) {
		// `helm install byhand` by the cluster's administrator, in wsA's release namespace.
		cfg := new(action.Configuration)
		if err := cfg.Init(kube.GetConfig(p.fleet.Cluster(pullCluster).Kubeconfig, "", "shop-a"), "shop-a", "secret", func(string, ...any) {}); err != nil {
			t.Fatal(err)
		}
		chrt, err := loader.LoadArchive(bytes.NewReader(chart))
		if err != nil {
			t.Fatal(err)
		}
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = "byhand", "shop-a"
		if _, err := install.RunWithContext(ctx, chrt, map[string]any{"greeting": "by-hand"}); err != nil {
			t.Fatal(err)
		}
		create(app(wsA, "byhand", pullCluster, "shop-a", "from-the-app"))
		a := awaitApp(t, p, app(wsA, "byhand", "", "", ""), v1alpha1.AppOwnedElsewhere)
		if !strings.Contains(a.Status.Message, "not installed by fleet-controller agent") {
			t.Errorf("message %q, want it to say the agent did not install the release", a.Status.Message)
		}
		var cm corev1.ConfigMap
		if err := spoke.Get(ctx, client.ObjectKey{Namespace: "shop-a", Name: "byhand-hello"}, &cm); err != nil || cm.Data["greeting"] != "by-hand" {
			t.Errorf("the hand-installed release's ConfigMap: %v, greeting %q, want by-hand", err, cm.Data["greeting"])
		}
		if h, err := action.NewHistory(cfg).Run("byhand"); err != nil || len(h) != 1 {
			t.Errorf("revisions of the hand-installed release: %d (%v), want 1", len(h), err)
		}
	})

	t.Run("the agent that deployed them holds only the chart's roles", func(t *testing.T) {
		agentClient, err := client.New(p.fleet.Cluster(pullCluster).AgentConfig, client.Options{Scheme: testbed.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		if err := agentClient.List(ctx, &corev1.SecretList{}, client.InNamespace(ocichain.Namespace)); err != nil {
			t.Errorf("the agent lists the chains in %s: %v", ocichain.Namespace, err)
		}
		for what, try := range map[string]func() error{
			"Secrets of shop-a":  func() error { return agentClient.List(ctx, &corev1.SecretList{}, client.InNamespace("shop-a")) },
			"Secrets everywhere": func() error { return agentClient.List(ctx, &corev1.SecretList{}) },
			"a ClusterRole": func() error {
				return agentClient.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-wide"}})
			},
		} {
			if err := try(); !apierrors.IsForbidden(err) {
				t.Errorf("the agent reads or writes %s: %v, want Forbidden", what, err)
			}
		}
	})

	t.Run("a tenant with the shipped roles reads nothing of another workspace", func(t *testing.T) {
		roles, err := rbac.Tenant()
		if err != nil {
			t.Fatal(err)
		}
		user := "tenant-" + wsB
		subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
		create(&roles[0], &roles[1],
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: wsB, Name: "tenant"}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roles[0].Name}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-clusters-" + wsB}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roles[1].Name}})
		cfg := rest.CopyConfig(p.fleet.Hub.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		tenant, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		// Its own workspace's view: the RBAC works at all.
		testkit.Eventually(t, converge, "the tenant reads its chain's status on "+pullCluster, func() error {
			return tenant.Get(ctx, client.ObjectKey{Namespace: wsB, Name: pullCluster}, &v1alpha1.ClusterOCIStorage{})
		})
		if err := tenant.List(ctx, &v1alpha1.FleetAppList{}, client.InNamespace(wsB)); err != nil {
			t.Errorf("the tenant lists its apps: %v", err)
		}
		for what, try := range map[string]func() error{
			"another workspace's chain status": func() error {
				return tenant.Get(ctx, client.ObjectKey{Namespace: wsA, Name: pullCluster}, &v1alpha1.ClusterOCIStorage{})
			},
			"another workspace's chain work": func() error {
				return tenant.Get(ctx, client.ObjectKey{Namespace: pullCluster, Name: controller.WorkName(wsA)}, &workv1.ManifestWork{})
			},
			"the ManifestWorks of " + pullCluster: func() error {
				return tenant.List(ctx, &workv1.ManifestWorkList{}, client.InNamespace(pullCluster))
			},
			"another workspace's registry Secret": func() error {
				return tenant.Get(ctx, client.ObjectKey{Namespace: wsA, Name: "source"}, &corev1.Secret{})
			},
			"another workspace's apps": func() error { return tenant.List(ctx, &v1alpha1.FleetAppList{}, client.InNamespace(wsA)) },
			"a binding of a set to its own workspace": func() error {
				return tenant.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: wsB, Name: "airgap-stores"},
					Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "airgap-stores"}})
			},
		} {
			if err := try(); !apierrors.IsForbidden(err) {
				t.Errorf("the tenant of %s reads or writes %s: %v, want Forbidden", wsB, what, err)
			}
		}
	})

	t.Run("a route no duration can hold stops no other workspace's routes", func(t *testing.T) {
		restore := testkit.LoosenCRD(t, c, "ocistorageroutes."+v1alpha1.GroupVersion.Group, "replicationWait")
		raw := &unstructured.Unstructured{Object: map[string]any{ // a typed client would decode the answer
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "OCIStorageRoute",
			"metadata": map[string]any{"name": "overflow", "namespace": wsB},
			"spec":     map[string]any{"priority": int64(7), "clusterNames": []any{pullCluster}, "registries": []any{"source"}, "replicationWait": "3000000h"},
		}}
		testkit.Eventually(t, converge, "the loosened CRD to store the overflowing route", func() error { return c.Create(ctx, raw.DeepCopy()) })
		restore()
		awaitCondition(t, c, route(wsB, "overflow", v1alpha1.OCIStorageRouteSpec{}), v1alpha1.SpecValidCondition, "False/InvalidSpec", "spec.replicationWait")
		for _, r := range []*v1alpha1.OCIStorageRoute{route(wsA, "eu", v1alpha1.OCIStorageRouteSpec{}), route(wsB, "all", v1alpha1.OCIStorageRouteSpec{})} {
			awaitCondition(t, c, r, v1alpha1.ReadyCondition, "True/Ready")
		}
		// Routing goes on: a new route of the other workspace reaches the cluster.
		create(route(wsA, "later", v1alpha1.OCIStorageRouteSpec{Priority: 5, ClusterNames: []string{pullCluster}, Registries: []string{"source"}}))
		awaitCondition(t, c, route(wsA, "later", v1alpha1.OCIStorageRouteSpec{}), v1alpha1.ReadyCondition, "True/Ready")
		p.awaitChain(t, "source")
	})

	t.Run("settled: the hub writes nothing", func(t *testing.T) {
		var objs []client.Object
		for _, cluster := range []string{pullCluster, gatewayless} {
			for _, ws := range []string{wsA, wsB} {
				for _, name := range worksOf(cluster, ws) {
					objs = append(objs, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}})
				}
			}
		}
		objs = append(objs, webA, webB, app(wsA, "byhand", "", "", ""), app(wsOut, "web", "", "", ""), app(wsB, "gw", "", "", ""),
			join(wsA, pullCluster, ""), join(wsB, gatewayless, ""), join(wsOut, pullCluster, ""),
			hubRoute(wsA, "shop", "", "", ""), hubRoute(wsB, "web", "", "", ""), hubRoute(wsB, "steal", "", "", ""), hubRoute(wsB, "outside", "", "", ""),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controller.DefaultGatewayNamespace, Name: aShop}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controller.DefaultGatewayNamespace, Name: bWeb}},
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: pullCluster}})
		t.Logf("watching %d objects", len(objs))
		testkit.Settled(t, c, 10*time.Second, objs...)
	})
}

// awaitApp waits until app, at its generation, is in phase, and returns it.
func awaitApp(t *testing.T, p *pullFleet, app *v1alpha1.FleetApp, phase v1alpha1.AppPhase) *v1alpha1.FleetApp {
	t.Helper()
	var a v1alpha1.FleetApp
	testkit.Eventually(t, converge, fmt.Sprintf("app %s/%s %s", app.Namespace, app.Name, phase), func() error {
		if err := p.hub.Get(p.ctx, client.ObjectKeyFromObject(app), &a); err != nil {
			return err
		}
		if a.Status.ObservedGeneration != a.Generation || a.Status.Phase != phase {
			return fmt.Errorf("observed generation %d of %d, phase %s (%s): %s", a.Status.ObservedGeneration, a.Generation, a.Status.Phase, a.Status.Reason, a.Status.Message)
		}
		return nil
	}, func() string { return p.explainApp(&a) })
	return &a
}

// awaitRoute waits until the app route's Ready condition, at its generation, is statusReason
// with each of parts in its message, and its URL is url.
func awaitRoute(t *testing.T, c client.Client, ws, name, statusReason, url string, parts ...string) {
	t.Helper()
	r := &v1alpha1.FleetAppRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}
	awaitCondition(t, c, r, v1alpha1.ReadyCondition, statusReason, parts...)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(r), r); err != nil || r.Status.URL != url {
		t.Errorf("route %s/%s: %v, url %q, want %q", ws, name, err, r.Status.URL, url)
	}
}

// awaitCondition waits until obj's status, at its generation (status.observedGeneration), has a
// condition typ of statusReason ("True/Ready") whose message holds each of parts.
func awaitCondition(t *testing.T, c client.Client, obj client.Object, typ, statusReason string, parts ...string) {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	what := fmt.Sprintf("%s %s/%s: %s %s", gvk.Kind, obj.GetNamespace(), obj.GetName(), typ, statusReason)
	testkit.Eventually(t, converge, what, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), u); err != nil {
			return err
		}
		if observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); observed != u.GetGeneration() {
			return fmt.Errorf("observed generation %d of %d", observed, u.GetGeneration())
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, raw := range conds {
			cond, _ := raw.(map[string]any)
			if cond["type"] != typ {
				continue
			}
			msg, _ := cond["message"].(string)
			if got := fmt.Sprintf("%v/%v", cond["status"], cond["reason"]); got != statusReason {
				return fmt.Errorf("%s is %s (%s)", typ, got, msg)
			}
			for _, part := range parts {
				if !strings.Contains(msg, part) {
					return fmt.Errorf("%s message %q lacks %q", typ, msg, part)
				}
			}
			return nil
		}
		return fmt.Errorf("no %s condition among %v", typ, conds)
	})
}
