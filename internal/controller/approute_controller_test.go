package controller_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

type routeView struct{ appView }

func (v routeView) route(name, app string, mode v1alpha1.RouteMode, host string, tls *v1alpha1.RouteTLS) *v1alpha1.FleetAppRoute {
	return &v1alpha1.FleetAppRoute{ObjectMeta: metav1.ObjectMeta{Namespace: v.ws, Name: name}, Spec: v1alpha1.FleetAppRouteSpec{
		App: app, Mode: mode, Host: host, Path: "/", Service: v1alpha1.RouteBackend{Name: "web", Port: 8080}, TLS: tls}}
}

// routeIs waits until route name's Ready condition, at its generation, is status/reason with a
// message containing each of parts, and the route's published and url are as given.
func (v routeView) routeIs(name, statusReason, published, url string, parts ...string) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, "route "+name+" "+statusReason, func() error {
		var r v1alpha1.FleetAppRoute
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.ws, Name: name}, &r); err != nil {
			return err
		}
		if r.Status.ObservedGeneration != r.Generation {
			return fmt.Errorf("observedGeneration %d of %d", r.Status.ObservedGeneration, r.Generation)
		}
		c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition)
		if c == nil || string(c.Status)+"/"+c.Reason != statusReason {
			return fmt.Errorf("Ready %+v, want %s", c, statusReason)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("Ready message %q lacks %q", c.Message, p)
			}
		}
		if r.Status.Published != published || r.Status.URL != url {
			return fmt.Errorf("published %q url %q, want %q %q", r.Status.Published, r.Status.URL, published, url)
		}
		return nil
	})
}

// applied writes the status of route name's work as OCM's work agent does once it applied the
// Ingress: Applied and Available True at the work's generation. Call it once the route reports
// WorkPending, so that the work is the one of the route's generation.
func (v routeView) applied(name string) {
	v.t.Helper()
	v.workStatus(name, func(w *workv1.ManifestWork) []metav1.Condition {
		return []metav1.Condition{
			{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "Apply manifest work complete", ObservedGeneration: w.Generation},
			{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "ResourcesAvailable", Message: "All resources are available", ObservedGeneration: w.Generation},
		}
	})
}

// workStatus sets the conditions of route name's work's status to what conds returns for it.
func (v routeView) workStatus(name string, conds func(*workv1.ManifestWork) []metav1.Condition) {
	v.t.Helper()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: v.cluster, Name: "route." + v.ws + "." + name}}
	err := retryStatus(v.appView, w, func(w *workv1.ManifestWork) {
		w.Status.Conditions = nil
		for _, c := range conds(w) {
			meta.SetStatusCondition(&w.Status.Conditions, c)
		}
	})
	if err != nil {
		v.t.Fatal(err)
	}
}

// ingress waits until route name's work in the cluster's namespace exists and returns the
// Ingress it carries.
func (v routeView) ingress(name string) networkingv1.Ingress {
	v.t.Helper()
	var ing networkingv1.Ingress
	testkit.Eventually(v.t, converge, "work of route "+name, func() error {
		var w workv1.ManifestWork
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.cluster, Name: "route." + v.ws + "." + name}, &w); err != nil {
			return err
		}
		if l := w.Labels; l[hub.ManagedByLabel] != hub.ControllerManager || l[hub.WorkspaceLabel] != v.ws || l[hub.ComponentLabel] != controller.RouteComponent {
			return fmt.Errorf("labels %v", l)
		}
		if len(w.Spec.Workload.Manifests) != 1 {
			return fmt.Errorf("%d manifests", len(w.Spec.Workload.Manifests))
		}
		return json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &ing)
	})
	return ing
}

// gatewayNamespace creates the controller's gateway namespace unless it exists.
func gatewayNamespace(t *testing.T, c client.Client) {
	t.Helper()
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultGatewayNamespace}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// gone waits until obj is deleted.
func (v routeView) gone(obj client.Object) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, fmt.Sprintf("%T %s gone", obj, obj.GetName()), func() error {
		if err := v.c.Get(v.t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// TestRoutes: site mode publishes an Ingress work (host, path, backend, ACME TLS); site → none
// removes it; none → hub needs the site's hubGateway (NoHubGateway) and a host under its domain
// (HostOutsideDomain), then publishes the work and the Traefik ConfigMap in the gateway
// namespace (rule, server URL from the ManagedCluster, owner annotation); hub → site removes the
// ConfigMap; a cluster without an ingress entry is NoIngress, one without a join NotJoined; a
// second route on the same host and path is HostTaken naming the first, and takes over once the
// first is deleted (its work removed); steady state writes nothing.
func TestRoutes(t *testing.T) {
	const ws, cluster = "routes-ws", "route-01"
	_, c := startHub(t)
	ctx := t.Context()
	v := routeView{appView{t, c, ws, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	gatewayNamespace(t, c)
	managedCluster(t, c, ws, cluster, "https://192.0.2.10:6443")
	defer runControllers(t, sharedHub.Config, "app-routes")()

	start := time.Now()
	v.create(v.app("web", "hello"),
		&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "berlin"}, Spec: siteSpec()},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster},
			Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin", Edge: &v1alpha1.ClusterJoinEdge{IngressID: "wan"}}},
		v.route("web", "web", v1alpha1.RouteSite, "shop.example.com", &v1alpha1.RouteTLS{ACMEIssuer: "letsencrypt"}))
	work := cluster + "/route." + ws + ".web"
	v.routeIs("web", "False/WorkPending", work, "https://shop.example.com/", "ManifestWork "+work, "cluster "+cluster)
	v.applied("web")
	v.routeIs("web", "True/Published", work, "https://shop.example.com/", `ingress entry "wan"`)
	var got v1alpha1.FleetAppRoute
	if err := c.Get(ctx, types.NamespacedName{Namespace: ws, Name: "web"}, &got); err != nil || got.Status.Cluster != cluster {
		t.Errorf("route status cluster %q (%v), want %s", got.Status.Cluster, err, cluster)
	}
	ing := v.ingress("web")
	rule := ing.Spec.Rules[0]
	p := rule.HTTP.Paths[0]
	if ing.Name != "route."+ws+".web" || ing.Namespace != "shop" || rule.Host != "shop.example.com" || p.Path != "/" || *p.PathType != networkingv1.PathTypePrefix ||
		p.Backend.Service.Name != "web" || p.Backend.Service.Port.Number != 8080 {
		t.Errorf("ingress %s/%s rule %+v path %+v", ing.Namespace, ing.Name, rule, p)
	}
	if ing.Annotations["cert-manager.io/cluster-issuer"] != "letsencrypt" || len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "route-tls."+ws+".web" ||
		strings.Join(ing.Spec.TLS[0].Hosts, ",") != "shop.example.com" {
		t.Errorf("ingress TLS %+v annotations %v", ing.Spec.TLS, ing.Annotations)
	}
	t.Logf("site route published in %v", time.Since(start))

	// Site → none removes the work.
	route := v.route("web", "", "", "", nil)
	testkit.Update(t, c, route, func(r *v1alpha1.FleetAppRoute) { r.Spec.Mode = v1alpha1.RouteNone })
	v.routeIs("web", "True/Unpublished", "", "")
	v.gone(&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "route." + ws + ".web"}})

	// None → hub: refused until the site enables its hub gateway.
	testkit.Update(t, c, route, func(r *v1alpha1.FleetAppRoute) {
		r.Spec.Mode, r.Spec.TLS = v1alpha1.RouteHub, &v1alpha1.RouteTLS{SecretName: "shop-cert"}
	})
	v.routeIs("web", "False/NoHubGateway", "", "", ws+"/berlin")
	site := &v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "berlin"}}
	testkit.Update(t, c, site, func(s *v1alpha1.FleetSite) {
		s.Spec.HubGateway = &v1alpha1.HubGateway{Enabled: true, Domain: "apps.example.com"}
	})
	// The host must be the gateway's domain or below it.
	v.routeIs("web", "False/HostOutsideDomain", "", "", `"apps.example.com"`)
	testkit.Update(t, c, route, func(r *v1alpha1.FleetAppRoute) { r.Spec.Host = "shop.apps.example.com" })
	gw, cmName := controller.DefaultGatewayNamespace, controller.GatewayName(ws, "web")
	v.routeIs("web", "True/Published", gw+"/"+cmName, "https://shop.apps.example.com/", "192.0.2.10")
	if ing := v.ingress("web"); ing.Spec.TLS[0].SecretName != "shop-cert" || ing.Annotations["cert-manager.io/cluster-issuer"] != "" {
		t.Errorf("hub-mode ingress TLS %+v annotations %v", ing.Spec.TLS, ing.Annotations)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: gw, Name: cmName}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Labels[hub.GatewayLabel] != hub.GatewayTraefik || cm.Annotations[hub.OwnerAnnotation] != ws+"/web" || len(cm.OwnerReferences) != 0 {
		t.Errorf("ConfigMap labels %v annotations %v owners %+v", cm.Labels, cm.Annotations, cm.OwnerReferences)
	}
	var fragment struct {
		HTTP struct {
			Routers map[string]struct {
				Rule, Service string
				TLS           *struct{} `json:"tls"`
			}
			Services map[string]struct {
				LoadBalancer struct {
					PassHostHeader bool `json:"passHostHeader"`
					Servers        []struct{ URL string }
				} `json:"loadBalancer"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(cm.Data[controller.TraefikKey]), &fragment); err != nil {
		t.Fatal(err)
	}
	router, svc := fragment.HTTP.Routers[cmName], fragment.HTTP.Services[cmName]
	if router.Rule != "Host(`shop.apps.example.com`) && PathPrefix(`/`)" || router.Service != cmName || router.TLS == nil {
		t.Errorf("router %+v in\n%s", router, cm.Data[controller.TraefikKey])
	}
	if !svc.LoadBalancer.PassHostHeader || len(svc.LoadBalancer.Servers) != 1 || svc.LoadBalancer.Servers[0].URL != "http://192.0.2.10" {
		t.Errorf("service %+v in\n%s", svc, cm.Data[controller.TraefikKey])
	}

	// Hub → site removes the ConfigMap and keeps the work.
	testkit.Update(t, c, route, func(r *v1alpha1.FleetAppRoute) { r.Spec.Mode = v1alpha1.RouteSite })
	v.routeIs("web", "False/WorkPending", work, "https://shop.apps.example.com/", "cluster "+cluster)
	v.applied("web")
	v.routeIs("web", "True/Published", work, "https://shop.apps.example.com/")
	v.gone(&cm)

	// No ingress entry, no join, a host already taken.
	managedCluster(t, c, ws, "route-02", "")
	managedCluster(t, c, ws, "route-03", "")
	v.create(&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "route-02"}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: "route-02", Site: "berlin"}},
		v.app("api", "hello", func(a *v1alpha1.FleetApp) { a.Spec.Cluster = "route-02" }),
		v.app("lab", "hello", func(a *v1alpha1.FleetApp) { a.Spec.Cluster = "route-03" }),
		v.route("api", "api", v1alpha1.RouteSite, "api.example.com", nil),
		v.route("lab", "lab", v1alpha1.RouteSite, "lab.example.com", nil),
		v.route("web-copy", "web", v1alpha1.RouteSite, "shop.apps.example.com", nil))
	v.routeIs("api", "False/NoIngress", "", "", "route-02")
	v.routeIs("lab", "False/NotJoined", "", "", "route-03")
	v.routeIs("web-copy", "False/HostTaken", "", "", "FleetAppRoute "+ws+"/web")

	// Steady state: nothing more is written.
	time.Sleep(2 * time.Second)
	before := writes("", "")
	time.Sleep(3 * time.Second)
	if after := writes("", ""); after != before {
		t.Errorf("steady state wrote %v times", after-before)
	}

	// Deleting the holder removes its work; the other route takes the host over.
	if err := c.Delete(ctx, route); err != nil {
		t.Fatal(err)
	}
	v.gone(route)
	v.routeIs("web-copy", "False/WorkPending", cluster+"/route."+ws+".web-copy", "http://shop.apps.example.com/")
	v.applied("web-copy")
	v.routeIs("web-copy", "True/Published", cluster+"/route."+ws+".web-copy", "http://shop.apps.example.com/")
	v.gone(&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "route." + ws + ".web"}})
	t.Logf("done in %v", time.Since(start))
}
