package controller_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// injectedPath is issue 19's path: pasted into main's rule, it makes the route's router match
// every request for the victim's host.
const injectedPath = "/x`) || Host(`shop.a.example.com`) && PathPrefix(`/"

// gatewayTenant sets up a workspace whose app runs on its own cluster (reached at address),
// joined to a site whose hub gateway serves domain.
func gatewayTenant(t *testing.T, c client.Client, ws, cluster, address, domain string) routeView {
	v := routeView{appView{t, c, ws, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "https://"+address+":6443")
	v.create(v.app("web", "hello"),
		&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "site"},
			Spec: v1alpha1.FleetSiteSpec{HubGateway: &v1alpha1.HubGateway{Enabled: true, Domain: domain}}},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster},
			Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "site"}})
	return v
}

func (v routeView) hubRoute(name, host, path string) *v1alpha1.FleetAppRoute {
	r := v.route(name, "web", v1alpha1.RouteHub, host, nil)
	r.Spec.Path = path
	return r
}

// serverOf is the server URL of service name in fragments.
func serverOf(t *testing.T, fragments map[string]string, service string) string {
	t.Helper()
	for _, f := range fragments {
		var doc struct {
			HTTP struct {
				Services map[string]struct {
					LoadBalancer struct{ Servers []struct{ URL string } } `json:"loadBalancer"`
				}
			}
		}
		if err := yaml.Unmarshal([]byte(f), &doc); err != nil {
			t.Fatal(err)
		}
		if s, ok := doc.HTTP.Services[service]; ok && len(s.LoadBalancer.Servers) == 1 {
			return s.LoadBalancer.Servers[0].URL
		}
	}
	return ""
}

// TestGatewayTenancy: two workspaces, a and b, publish through the hub gateway; b also tries
// every way into a's host. The apiserver refuses issue 19's injected path. b's route on a's
// host under another path is HostTaken naming a's route, one on a name of a's domain that a
// does not use is HostOutsideDomain, a wildcard WildcardHost; a's second route on the same host
// and path is HostTaken, while a's route on the same host under another path publishes. A
// ConfigMap of the gateway's name that the controller did not write is not overwritten (ConfigMapTaken), and a
// ConfigMap with the gateway label that b writes in its own namespace is not in the gateway
// namespace. Traefik's own router, loading every fragment of the gateway namespace, sends each
// of a's URLs to a's cluster and b's to b's, and no URL b published or attempted reaches a's
// backend except through a's routes; once a has no route on the host, b's claims hold it. The
// same router on main's rule format is hijacked by the
// injected path, which shows the check can fail.
func TestGatewayTenancy(t *testing.T) {
	_, c := startHub(t)
	ctx := t.Context()
	gatewayNamespace(t, c)
	a := gatewayTenant(t, c, "gw-a", "gw-a-01", "192.0.2.31", "a.example.com")
	b := gatewayTenant(t, c, "gw-b", "gw-b-01", "192.0.2.32", "b.example.com")
	gw := controller.DefaultGatewayNamespace

	// The injected path never reaches the hub: the CRD refuses it.
	err := c.Create(ctx, b.hubRoute("inject", "web.b.example.com", injectedPath))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.path") {
		t.Fatalf("create route with path %q: %v, want Invalid naming spec.path", injectedPath, err)
	}

	// A ConfigMap in the gateway namespace under a route's name, written by someone else.
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gw, Name: controller.GatewayName("gw-b", "squat")}, Data: map[string]string{"keep": "me"}}
	// A tenant's own ConfigMap with the gateway label: the gateway does not read b's namespace.
	planted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gw-b", Name: "planted", Labels: map[string]string{hub.GatewayLabel: hub.GatewayTraefik}},
		Data: map[string]string{controller.TraefikKey: "http:\n  routers:\n    planted:\n      rule: Host(`shop.a.example.com`)\n      service: planted\n"}}
	a.create(foreign, planted)

	defer runControllers(t, sharedHub.Config, "app-routes")()
	start := time.Now()
	a.create(a.hubRoute("shop", "shop.a.example.com", "/"))
	a.routeIs("shop", "True/Published", gw+"/"+controller.GatewayName("gw-a", "shop"), "http://shop.a.example.com/")
	time.Sleep(1100 * time.Millisecond) // the others are created a second later: a's holds the host by creation
	a.create(a.hubRoute("api", "shop.a.example.com", "/api"), a.hubRoute("shop-copy", "shop.a.example.com", "/"))
	b.create(b.hubRoute("web", "web.b.example.com", "/"),
		b.hubRoute("admin", "shop.a.example.com", "/admin"),
		b.hubRoute("shop", "shop.a.example.com", "/"),
		b.hubRoute("outside", "pay.a.example.com", "/"),
		b.hubRoute("wild", "*.a.example.com", "/"),
		b.hubRoute("squat", "squat.b.example.com", "/"))

	a.routeIs("api", "True/Published", gw+"/"+controller.GatewayName("gw-a", "api"), "http://shop.a.example.com/api")
	a.routeIs("shop-copy", "False/HostTaken", "", "", "FleetAppRoute gw-a/shop")
	b.routeIs("web", "True/Published", gw+"/"+controller.GatewayName("gw-b", "web"), "http://web.b.example.com/")
	b.routeIs("admin", "False/HostTaken", "", "", "belongs to workspace gw-a", "FleetAppRoute gw-a/shop")
	b.routeIs("shop", "False/HostTaken", "", "", "belongs to workspace gw-a")
	b.routeIs("outside", "False/HostOutsideDomain", "", "", `"b.example.com"`)
	b.routeIs("wild", "False/WildcardHost", "", "", "wildcard")
	b.routeIs("squat", "False/ConfigMapTaken", "", "", "not this route's", "not overwritten")
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), &got); err != nil || !maps.Equal(got.Data, foreign.Data) || len(got.Labels) != 0 {
		t.Errorf("foreign ConfigMap: %v, data %v labels %v, want untouched", err, got.Data, got.Labels)
	}
	t.Logf("routes settled in %v", time.Since(start))

	fragments := testkit.GatewayFragments(t, c)
	names := slices.Sorted(maps.Keys(fragments))
	want := []string{controller.GatewayName("gw-a", "api") + ".yaml", controller.GatewayName("gw-a", "shop") + ".yaml", controller.GatewayName("gw-b", "web") + ".yaml"}
	if !slices.Equal(names, want) {
		t.Fatalf("gateway fragments %v, want %v", names, want)
	}
	aShop, aAPI, bWeb := controller.GatewayName("gw-a", "shop"), controller.GatewayName("gw-a", "api"), controller.GatewayName("gw-b", "web")
	for svc, server := range map[string]string{aShop: "http://192.0.2.31", aAPI: "http://192.0.2.31", bWeb: "http://192.0.2.32"} {
		if got := serverOf(t, fragments, svc); got != server {
			t.Errorf("service %s forwards to %q, want %q", svc, got, server)
		}
	}

	cases := map[string]string{ // URL → the service Traefik must reach, "" for none (404)
		"http://shop.a.example.com/":          aShop,
		"http://shop.a.example.com/admin":     aShop, // b's attempt: still a's
		"http://shop.a.example.com/api/v1":    aAPI,
		"http://shop.a.example.com/x":         aShop,
		"http://web.b.example.com/":           bWeb,
		"http://web.b.example.com/x":          bWeb,
		"http://pay.a.example.com/":           "",
		"http://any.a.example.com/":           "",
		"http://squat.b.example.com/":         "",
		"http://victim.example.com/":          "",
		"http://shop.a.example.com.evil.com/": "",
	}
	routes, problems := testbed.TraefikRoutes(t, fragments, slices.Sorted(maps.Keys(cases))...)
	if len(problems) > 0 {
		t.Errorf("Traefik reports problems in the controller's fragments: %v", problems)
	}
	for u, svc := range cases {
		if routes[u].Service != svc {
			t.Errorf("Traefik sends %s to %v, want service %q", u, routes[u], svc)
		}
	}

	// Main's rule format, with b's route carrying the injected path (as the apiserver accepted
	// it then): Traefik sends a's host to b's backend.
	mainRule := fmt.Sprintf("Host(`%s`) && PathPrefix(`%s`)", "web.b.example.com", injectedPath)
	hijack := map[string]string{
		"a.yaml": fragments[controller.GatewayName("gw-a", "shop")+".yaml"],
		"b.yaml": "http:\n  routers:\n    gw-b-inject:\n      rule: '" + mainRule + "'\n      service: gw-b-inject\n" +
			"  services:\n    gw-b-inject:\n      loadBalancer:\n        servers:\n          - url: http://192.0.2.32\n",
	}
	routes, problems = testbed.TraefikRoutes(t, hijack, "http://shop.a.example.com/")
	if len(problems) > 0 {
		t.Fatalf("main's rule format: Traefik reports %v", problems)
	}
	if r := routes["http://shop.a.example.com/"]; r.Service != "gw-b-inject" {
		t.Errorf("main's rule format: Traefik sends a's host to %v, want b's gw-b-inject (the hijack this test guards against)", r)
	} else {
		t.Logf("main's rule format: Traefik sends http://shop.a.example.com/ to %v (hijacked)", r)
	}

	// b's planted ConfigMap is still where b put it, never copied into the gateway namespace.
	var p corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: gw, Name: planted.Name}, &p); !apierrors.IsNotFound(err) {
		t.Errorf("tenant ConfigMap in the gateway namespace: %v", err)
	}

	// a's holder goes: the host stays a's (api still holds it), and a's copy takes over "/";
	// b's routes on it stay HostTaken.
	if err := c.Delete(ctx, a.hubRoute("shop", "", "")); err != nil {
		t.Fatal(err)
	}
	a.routeIs("shop-copy", "True/Published", gw+"/"+controller.GatewayName("gw-a", "shop-copy"), "http://shop.a.example.com/")
	b.routeIs("shop", "False/HostTaken", "", "", "FleetAppRoute gw-a/api")
	a.gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gw, Name: aShop}})

	// Steady state writes nothing.
	time.Sleep(2 * time.Second)
	snap := func() map[string]float64 {
		m := map[string]float64{}
		for _, r := range []string{"fleetapproute", "manifestwork", "configmap"} {
			for _, vb := range []string{"create", "update", "status", "delete", "patch"} {
				m[r+" "+vb] = writes(r, vb)
			}
		}
		return m
	}
	before, beforeAll := snap(), writes("", "")
	time.Sleep(3 * time.Second)
	if after, afterAll := snap(), writes("", ""); afterAll != beforeAll {
		t.Errorf("steady state wrote %v times: before %v, after %v", afterAll-beforeAll, before, after)
	}

	// Once a has no route on the host, it is b's (its oldest claim's), whose routes are then
	// stopped only by its gateway's domain.
	for _, n := range []string{"api", "shop-copy"} {
		if err := c.Delete(ctx, a.hubRoute(n, "", "")); err != nil {
			t.Fatal(err)
		}
	}
	b.routeIs("admin", "False/HostOutsideDomain", "", "", `"b.example.com"`)
	b.routeIs("shop", "False/HostOutsideDomain", "", "", `"b.example.com"`)
	t.Logf("done in %v", time.Since(start))
}

// TestRouteMigration: a hub-mode route's ConfigMap from before the gateway namespace, in the
// route's namespace and owned by it, is deleted once the route publishes into the gateway
// namespace; one the route does not own is left alone.
func TestRouteMigration(t *testing.T) {
	_, c := startHub(t)
	gatewayNamespace(t, c)
	v := gatewayTenant(t, c, "gw-mig", "gw-mig-01", "192.0.2.33", "m.example.com")
	route := v.hubRoute("web", "web.m.example.com", "/")
	v.create(route)
	truth := true
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gw-mig", Name: "fleet-route-web",
		Labels:          map[string]string{hub.ComponentLabel: controller.RouteComponent, hub.GatewayLabel: hub.GatewayTraefik},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FleetAppRoute", Name: "web", UID: route.UID, Controller: &truth}}}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gw-mig", Name: "fleet-route-api",
		Labels: map[string]string{hub.ComponentLabel: controller.RouteComponent}}}
	v.create(owned, other)
	defer runControllers(t, sharedHub.Config, "app-routes")()
	v.routeIs("web", "True/Published", controller.DefaultGatewayNamespace+"/"+controller.GatewayName("gw-mig", "web"), "http://web.m.example.com/")
	v.gone(owned)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(other), other); err != nil {
		t.Errorf("ConfigMap no route owns: %v, want kept", err)
	}
}
