package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/fleetrules"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetapproutes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetapproutes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetapproutes/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetclusterjoins,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetsites,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;delete

// RouteComponent is the hub.ComponentLabel value of a route's ManifestWork and hub ConfigMap.
const RouteComponent = "app-route"

// TraefikKey is the key of a route's hub ConfigMap that holds its Traefik fragment.
const TraefikKey = "traefik.yaml"

// DefaultGatewayNamespace is where the hub gateway's ConfigMaps are written unless
// --gateway-namespace says otherwise.
const DefaultGatewayNamespace = "fleet-system"

// GatewayName is the name of route's ConfigMap in the gateway namespace, and of the Traefik
// router and service its fragment declares: route.<workspace>.<route>, which no other route of
// any workspace shares.
func GatewayName(workspace, route string) string {
	return v1alpha1.WorkspaceObjectName("route", workspace, route, v1alpha1.MaxSubdomain)
}

// legacyConfigMapName is the name of the ConfigMap a route had in its own namespace before the
// gateway namespace; the reconciler deletes it.
func legacyConfigMapName(route string) string { return "fleet-route-" + route }

// Names of what a route writes, none of which another (workspace, route) pair shares
// (v1alpha1.WorkspaceObjectName): a prefix per kind of object.

// RouteWorkName is the name of route's work in its app cluster's namespace on the hub:
// route.<workspace>.<route>.
func RouteWorkName(route *v1alpha1.FleetAppRoute) string {
	return v1alpha1.WorkspaceObjectName("route", route.Namespace, route.Name, v1alpha1.MaxSubdomain)
}

// RouteIngressName is the name of route's Ingress in its app's namespace on the cluster, which
// routes of other workspaces may share: route.<workspace>.<route>.
func RouteIngressName(route *v1alpha1.FleetAppRoute) string {
	return v1alpha1.WorkspaceObjectName("route", route.Namespace, route.Name, v1alpha1.MaxSubdomain)
}

// routeTLSSecretName is the Secret cert-manager fills for route's acmeIssuer:
// route-tls.<workspace>.<route>, bounded to a label value, since cert-manager names the
// Certificate after it and labels what it makes with that name.
func routeTLSSecretName(route *v1alpha1.FleetAppRoute) string {
	return v1alpha1.WorkspaceObjectName("route-tls", route.Namespace, route.Name, v1alpha1.MaxLabel)
}

// Reasons of a FleetAppRoute's Ready condition.
const (
	reasonPublished      = "Published"
	reasonAppNotFound    = "AppNotFound"
	reasonNoHubGateway   = "NoHubGateway"
	reasonNoIngress      = "NoIngress"
	reasonHostTaken      = "HostTaken"
	reasonInvalidPath    = "InvalidPath"
	reasonWildcardHost   = "WildcardHost"
	reasonOutsideDomain  = "HostOutsideDomain"
	reasonUnpublished    = "Unpublished"
	reasonPublishFailed  = "PublishFailed"
	reasonConfigMapTaken = "ConfigMapTaken"
)

const (
	kindAppRoute = "fleetapproute"
	// routeFinalizer lets the reconciler delete the route's work, in the cluster's namespace,
	// before the route goes.
	routeFinalizer = "fleet.umkim.io/app-route"
	// Cache indexes of FleetAppRoutes.
	routeHostIndex = "routeHost" // host, of routes that claim it (fleetrules.ClaimsHost)
	routeAppIndex  = "routeApp"  // <namespace>/<spec.app>
)

// AppRouteReconciler publishes each FleetAppRoute as its mode says:
//   - site: a ManifestWork route.<namespace>.<route> in the app cluster's namespace carries an
//     Ingress route.<namespace>.<route> in the app's namespace on the cluster: host and path
//     (Prefix) to the Service's port; tls.secretName in spec.tls, tls.acmeIssuer as the
//     cert-manager.io/cluster-issuer annotation with the certificate in Secret
//     route-tls.<namespace>.<route>. The cluster must be one the workspace may use (else
//     NotBound), joined by a FleetClusterJoin of the workspace (the one that counts for the
//     cluster, fleetrules.JoinOf) and bound to an ingress entry of its site. A work of that name
//     that another object owns is never written: the route is not Ready (NameTaken, naming the
//     holder). The route is Published once the cluster's work agent applied the work at its
//     generation (Delivered, work.Applied); until then it is not Ready (WorkPending).
//   - hub: the same Ingress (the site's ingress controller serves the host behind the hub), and a
//     ConfigMap GatewayName(<namespace>, <route>) in the gateway namespace (GatewayNamespace, which
//     tenants cannot write), labelled fleet.umkim.io/gateway=traefik and annotated with its owner,
//     whose key traefik.yaml is a Traefik v3 dynamic-configuration fragment (file provider):
//     router GatewayName for Host(`host`) && PathPrefix(`path`) to the service of that name, which
//     forwards, host header kept, to http://<address>, the host of the ManagedCluster's first
//     managedClusterClientConfigs URL (how the hub reaches the cluster over the fleet's overlay).
//     The hub's Traefik reads these ConfigMaps into its file provider's directory
//     (docs/guides/app-routes.md). The cluster's site must enable hubGateway, and the host must be
//     its domain or below it, not a wildcard. A ConfigMap of that name owned by anything else is
//     never overwritten: the route publishes nothing (ConfigMapTaken) and looks again a minute
//     later.
//   - none: nothing.
//
// A path fleetrules.CheckRoutePath refuses publishes nothing (InvalidPath; the CRD refuses it
// first). What the route no longer wants (after a mode change, or on deletion) is deleted: every
// route work it owns but the one it publishes, a work of the legacy name included (migration.go),
// and the ConfigMap it had in its own namespace before the gateway namespace. A host belongs to
// one workspace at a time (fleetrules.HostBlocker): a route blocked by another publishes nothing
// and is not Ready (HostTaken, naming the holder).
type AppRouteReconciler struct {
	client.Client
	// Reader reads the hub ConfigMaps, which the manager does not cache.
	Reader client.Reader
	// GatewayNamespace holds the gateway's ConfigMaps; empty means DefaultGatewayNamespace.
	GatewayNamespace string
}

// routePublication is what a route publishes: nothing, a work, or a work and a ConfigMap.
type routePublication struct {
	cluster   string
	work      *workv1.ManifestWork
	configMap *corev1.ConfigMap
	// observed is the ConfigMap of configMap's name on the hub, nil when there is none.
	observed *corev1.ConfigMap
}

// Reconcile publishes one route and reports it.
func (r *AppRouteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var route v1alpha1.FleetAppRoute
	if err := r.Get(ctx, req.NamespacedName, &route); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !route.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&route, routeFinalizer) {
			return ctrl.Result{}, nil
		}
		if err := r.unpublish(ctx, &route, routePublication{}); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, client.IgnoreNotFound(patchFinalizers(ctx, r.Client, &route, kindAppRoute, routeFinalizer, controllerutil.RemoveFinalizer))
	}
	if !controllerutil.ContainsFinalizer(&route, routeFinalizer) {
		if err := patchFinalizers(ctx, r.Client, &route, kindAppRoute, routeFinalizer, controllerutil.AddFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}

	// One status write, at the end, when the reconcile reached an account of the route; Stalled
	// (and Ready following it) from how the reconcile ended.
	patch := kube.BeginStatus(&route, &route.Status)
	report := false
	defer func() {
		if report {
			kube.SetStalled(&route.Status.Conditions, route.Generation, err)
		}
		err = errors.Join(err, patch.Write(ctx, r.Client, report, countStatusWrite(kindAppRoute)))
	}()
	report, err = r.publish(ctx, &route)
	return ctrl.Result{}, err
}

// appRouteSummary declares what a route's Ready is derived from: what the route publishes
// written on the hub, then (site mode) applied on the cluster. Hub mode sets no Delivered: its
// publication is the gateway's ConfigMap, which the controller writes itself.
var appRouteSummary = kube.Summary{
	{Type: v1alpha1.WrittenCondition, Polarity: kube.NormalTrue},
	{Type: v1alpha1.DeliveredCondition, Polarity: kube.NormalTrue},
}

// publish publishes route as it asks now and sets route.Status to say so; report says whether
// the status is an account of the route to write (false when what it needs could not be read).
// Written says whether what the route publishes is written on the hub (False with the reason
// it is not: AppNotFound, HostTaken, NameTaken, ...); in site mode Delivered says whether the
// cluster's work agent applied the route's work at its generation (work.Applied); Ready follows
// the first of them that is not True, and is True (Published, or Unpublished in mode none)
// when none is.
func (r *AppRouteReconciler) publish(ctx context.Context, route *v1alpha1.FleetAppRoute) (bool, error) {
	pub, reason, msg, err := r.publication(ctx, route)
	if err != nil {
		return false, err
	}
	st, gen := &route.Status, route.Generation
	st.ObservedGeneration, st.Cluster, st.URL, st.Published = gen, pub.cluster, "", ""
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.DeliveredCondition)
	okReason, okMsg := reason, msg
	current, err := r.write(ctx, route, pub)
	taken, isTaken := nameTaken(err)
	tl := tooLarge(err)
	switch {
	case isTaken:
		reason, msg, err = v1alpha1.ReasonNameTaken, taken.Error(), kube.Wait(nameTakenRequeue, v1alpha1.ReasonNameTaken, taken)
	case tl != nil: // a stall: nothing was written, and Stalled says why
		reason, msg, err = v1alpha1.ReasonWorkTooLarge, tl.Error(), kube.Stall(v1alpha1.ReasonWorkTooLarge, tl)
	case err != nil:
		reason, msg = reasonPublishFailed, err.Error()
	case reason == reasonConfigMapTaken: // ConfigMaps are not watched: look again for its removal
		err = kube.Wait(nameTakenRequeue, reason, errors.New(msg))
	}
	written := err == nil && (reason == reasonPublished || reason == reasonUnpublished)
	switch {
	case !written:
		setCondition(&st.Conditions, gen, v1alpha1.WrittenCondition, false, reason, msg)
	case pub.configMap != nil:
		st.Published = pub.configMap.Namespace + "/" + pub.configMap.Name
		setCondition(&st.Conditions, gen, v1alpha1.WrittenCondition, true, v1alpha1.ReasonWritten,
			fmt.Sprintf("ManifestWork %s/%s and the gateway's ConfigMap %s are written on the hub", pub.work.Namespace, pub.work.Name, st.Published))
	case pub.work != nil:
		st.Published = pub.work.Namespace + "/" + pub.work.Name
		setCondition(&st.Conditions, gen, v1alpha1.WrittenCondition, true, v1alpha1.ReasonWritten, fmt.Sprintf("ManifestWork %s is written on the hub", st.Published))
		if applied, why := work.Applied(current); applied {
			setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, true, v1alpha1.ReasonWorkApplied,
				fmt.Sprintf("ManifestWork %s is applied on cluster %s", st.Published, pub.cluster))
		} else {
			setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonWorkPending,
				fmt.Sprintf("ManifestWork %s is written on the hub, but cluster %s has not applied it yet: %s", st.Published, pub.cluster, why))
		}
	default:
		setCondition(&st.Conditions, gen, v1alpha1.WrittenCondition, true, reason, msg)
	}
	if st.Published != "" {
		scheme := "http"
		if route.Spec.TLS != nil {
			scheme = "https"
		}
		st.URL = scheme + "://" + route.Spec.Host + route.Spec.Path
	}
	appRouteSummary.Ready(&st.Conditions, gen, okReason, okMsg)
	return true, err
}

// write deletes what route published that pub does not, then writes pub's work and ConfigMap;
// it returns the work as the hub now has it (nil when pub has none).
func (r *AppRouteReconciler) write(ctx context.Context, route *v1alpha1.FleetAppRoute, pub routePublication) (*workv1.ManifestWork, error) {
	if err := r.unpublish(ctx, route, pub); err != nil || pub.work == nil {
		return nil, err
	}
	var observed workv1.ManifestWork
	if err := r.Get(ctx, client.ObjectKeyFromObject(pub.work), &observed); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	current, err := applyWork(ctx, r.Client, r.Reader, &observed, pub.work)
	if err != nil || pub.configMap == nil {
		return current, err
	}
	return current, r.applyConfigMap(ctx, pub.observed, pub.configMap)
}

// publication is what route should publish now, with the Ready reason and message that say so.
func (r *AppRouteReconciler) publication(ctx context.Context, route *v1alpha1.FleetAppRoute) (pub routePublication, reason, msg string, err error) {
	if route.Spec.Mode == v1alpha1.RouteNone {
		return pub, reasonUnpublished, "mode none: nothing is published", nil
	}
	if err := fleetrules.CheckRoutePath(fleetrules.RoutePath(route)); err != nil {
		return pub, reasonInvalidPath, err.Error() + ": fix spec.path", nil //nolint:nilerr // an invalid path is a Ready reason, not a reconcile error
	}
	var app v1alpha1.FleetApp
	err = r.Get(ctx, types.NamespacedName{Namespace: route.Namespace, Name: route.Spec.App}, &app)
	if apierrors.IsNotFound(err) {
		return pub, reasonAppNotFound, fmt.Sprintf("no FleetApp %s/%s: create it, or fix spec.app", route.Namespace, route.Spec.App), nil
	}
	if err != nil {
		return pub, "", "", err
	}
	pub.cluster = app.Spec.Cluster
	var claims v1alpha1.FleetAppRouteList
	if err := r.List(ctx, &claims, client.MatchingFields{routeHostIndex: route.Spec.Host}); err != nil {
		return pub, "", "", err
	}
	if blocker := fleetrules.HostBlocker(claims.Items, route); blocker != nil {
		return pub, reasonHostTaken, fleetrules.HostTakenMessage(route, blocker), nil
	}
	mc, err := getClusterMetadata(ctx, r.Client, app.Spec.Cluster)
	if err != nil {
		return pub, "", "", err
	}
	if mc == nil {
		return pub, v1alpha1.ReasonClusterNotFound, fmt.Sprintf("no ManagedCluster %q, the cluster of FleetApp %s/%s, on the hub", app.Spec.Cluster, route.Namespace, app.Name), nil
	}
	ca, err := clusterAccess(ctx, r.Client, route.Namespace, mc)
	if err != nil {
		return pub, "", "", err
	}
	if !ca.Allowed() {
		return pub, v1alpha1.ReasonNotBound, ca.NotBound(), nil
	}
	join, err := joinOfCluster(ctx, r.Client, app.Spec.Cluster)
	if err != nil {
		return pub, "", "", err
	}
	if join == nil || join.Namespace != route.Namespace {
		return pub, v1alpha1.ReasonNotJoined, fmt.Sprintf("no FleetClusterJoin of %s joins cluster %s: join the app's cluster to a site", route.Namespace, app.Spec.Cluster), nil
	}
	rw, err := routeWork(route, &app)
	if err != nil {
		return pub, "", "", err
	}
	if route.Spec.Mode == v1alpha1.RouteSite {
		if join.IngressID() == "" {
			return pub, reasonNoIngress, fmt.Sprintf("FleetClusterJoin %s binds cluster %s to no ingress entry: set its edge.ingressId, or use mode hub",
				join.Name, app.Spec.Cluster), nil
		}
		pub.work = rw
		return pub, reasonPublished, fmt.Sprintf("Ingress %s/%s on cluster %s, through ingress entry %q of site %s",
			app.Spec.Namespace, RouteIngressName(route), app.Spec.Cluster, join.IngressID(), join.Spec.Site), nil
	}

	var site v1alpha1.FleetSite
	err = r.Get(ctx, types.NamespacedName{Namespace: route.Namespace, Name: join.Spec.Site}, &site)
	if client.IgnoreNotFound(err) != nil {
		return pub, "", "", err
	}
	if err != nil || site.Spec.HubGateway == nil || !site.Spec.HubGateway.Enabled {
		return pub, reasonNoHubGateway, fmt.Sprintf("site %s/%s of cluster %s does not enable hubGateway: enable it, or use mode site", route.Namespace, join.Spec.Site, app.Spec.Cluster), nil //nolint:nilerr // err is NotFound here: a missing site is a Ready reason
	}
	if err := fleetrules.CheckHubHost(route.Spec.Host, site.Spec.HubGateway.Domain); err != nil {
		reason := reasonOutsideDomain
		if fleetrules.CheckHubHostName(route.Spec.Host) != nil {
			reason = reasonWildcardHost
		}
		return pub, reason, fmt.Sprintf("site %s/%s of cluster %s: %v", route.Namespace, site.Name, app.Spec.Cluster, err), nil
	}
	var cluster clusterv1.ManagedCluster
	if err := r.Get(ctx, types.NamespacedName{Name: app.Spec.Cluster}, &cluster); client.IgnoreNotFound(err) != nil {
		return pub, "", "", err
	}
	address := clusterAddress(&cluster)
	if address == "" {
		return pub, reasonNoHubGateway, fmt.Sprintf("ManagedCluster %s has no spec.managedClusterClientConfigs URL: the hub gateway has no address to reach it by", app.Spec.Cluster), nil
	}
	cm, err := traefikConfigMap(route, address, r.gatewayNamespace())
	if err != nil {
		return pub, reasonInvalidPath, err.Error(), nil //nolint:nilerr // a rule Traefik cannot take is a Ready reason, not a reconcile error
	}
	var observed corev1.ConfigMap
	switch err := r.Reader.Get(ctx, client.ObjectKeyFromObject(cm), &observed); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return pub, "", "", err
	case observed.Annotations[hub.OwnerAnnotation] != cm.Annotations[hub.OwnerAnnotation]:
		return pub, reasonConfigMapTaken, fmt.Sprintf("ConfigMap %s/%s of the gateway namespace exists and is not this route's (owner %q): it is not overwritten; remove it if nothing needs it",
			cm.Namespace, cm.Name, observed.Annotations[hub.OwnerAnnotation]), nil
	default:
		pub.observed = &observed
	}
	pub.work, pub.configMap = rw, cm
	return pub, reasonPublished, fmt.Sprintf("hub gateway (Traefik) forwards to %s, where Ingress %s/%s of cluster %s serves it", address, app.Spec.Namespace, RouteIngressName(route), app.Spec.Cluster), nil
}

// clusterAddress is the host the hub reaches cluster by: that of its first client config URL.
func clusterAddress(cluster *clusterv1.ManagedCluster) string {
	if len(cluster.Spec.ManagedClusterClientConfigs) == 0 {
		return ""
	}
	u, err := url.Parse(cluster.Spec.ManagedClusterClientConfigs[0].URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// routeWork is the work, in app's cluster namespace, that carries route's Ingress.
func routeWork(route *v1alpha1.FleetAppRoute, app *v1alpha1.FleetApp) (*workv1.ManifestWork, error) {
	pathType := networkingv1.PathTypePrefix
	ing := networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: RouteIngressName(route), Namespace: app.Spec.Namespace},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: route.Spec.Host, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: route.Spec.Path, PathType: &pathType,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: route.Spec.Service.Name,
					Port: networkingv1.ServiceBackendPort{Number: route.Spec.Service.Port}}}}}},
		}}}},
	}
	if tls := route.Spec.TLS; tls != nil {
		secret := tls.SecretName
		if tls.ACMEIssuer != "" {
			secret = routeTLSSecretName(route)
			ing.Annotations = map[string]string{"cert-manager.io/cluster-issuer": tls.ACMEIssuer}
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{route.Spec.Host}, SecretName: secret}}
	}
	raw, err := json.Marshal(ing)
	if err != nil {
		return nil, err
	}
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: RouteWorkName(route), Namespace: app.Spec.Cluster,
			Labels:      map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.WorkspaceLabel: route.Namespace, hub.ComponentLabel: RouteComponent},
			Annotations: map[string]string{hub.OwnerAnnotation: route.Namespace + "/" + route.Name}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}, nil
}

func (r *AppRouteReconciler) gatewayNamespace() string {
	return cmp.Or(r.GatewayNamespace, DefaultGatewayNamespace)
}

// traefikRule is the rule of a router for host and path: Host and PathPrefix matchers whose
// arguments are Traefik rule strings (backquoted, which take every character but the backquote
// literally), and an error for a value no such string can hold or that is not a host and a
// path the gateway serves, so that no value changes the rule's structure.
func traefikRule(host, urlPath string) (string, error) {
	if err := fleetrules.CheckRoutePath(urlPath); err != nil {
		return "", err
	}
	h, err := traefikString(host)
	if err != nil {
		return "", fmt.Errorf("host: %w", err)
	}
	p, err := traefikString(urlPath)
	if err != nil {
		return "", fmt.Errorf("path: %w", err)
	}
	return "Host(" + h + ") && PathPrefix(" + p + ")", nil
}

// traefikString quotes s as a backquoted string of Traefik's rule syntax.
func traefikString(s string) (string, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '`' || c < 0x20 || c >= 0x7f {
			return "", fmt.Errorf("%q: character %q at %d cannot be quoted in a Traefik rule", s, c, i)
		}
	}
	return "`" + s + "`", nil
}

// traefikConfigMap is route's ConfigMap in the gateway namespace ns: a Traefik
// dynamic-configuration fragment that routes its host and path to address.
func traefikConfigMap(route *v1alpha1.FleetAppRoute, address, ns string) (*corev1.ConfigMap, error) {
	name := GatewayName(route.Namespace, route.Name)
	rule, err := traefikRule(route.Spec.Host, fleetrules.RoutePath(route))
	if err != nil {
		return nil, err
	}
	router := map[string]any{"rule": rule, "service": name}
	doc := map[string]any{"http": map[string]any{
		"routers":  map[string]any{name: router},
		"services": map[string]any{name: map[string]any{"loadBalancer": map[string]any{"passHostHeader": true, "servers": []any{map[string]any{"url": "http://" + address}}}}},
	}}
	if tls := route.Spec.TLS; tls != nil {
		if tls.ACMEIssuer != "" {
			router["tls"] = map[string]any{"certResolver": tls.ACMEIssuer}
		} else {
			router["tls"] = map[string]any{}
			dir := "/etc/traefik/certs/" + route.Namespace + "/" + tls.SecretName
			doc["tls"] = map[string]any{"certificates": []any{map[string]any{"certFile": dir + "/tls.crt", "keyFile": dir + "/tls.key"}}}
		}
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.ComponentLabel: RouteComponent, hub.GatewayLabel: hub.GatewayTraefik,
				hub.WorkspaceLabel: route.Namespace},
			Annotations: map[string]string{hub.OwnerAnnotation: route.Namespace + "/" + route.Name}},
		Data: map[string]string{TraefikKey: string(data)},
	}, nil
}

// unpublish deletes what route published that pub does not: its works elsewhere, its ConfigMap.
func (r *AppRouteReconciler) unpublish(ctx context.Context, route *v1alpha1.FleetAppRoute, pub routePublication) error {
	var works workv1.ManifestWorkList
	// No ManifestWork kind on the hub: no work of the route is left (absent).
	if err := r.List(ctx, &works, client.MatchingLabels{hub.ComponentLabel: RouteComponent, hub.WorkspaceLabel: route.Namespace}); ignoreAbsent(err) != nil {
		return err
	}
	for i := range works.Items {
		w := &works.Items[i]
		if pub.work != nil && w.Namespace == pub.work.Namespace && w.Name == pub.work.Name {
			continue
		}
		if err := deleteWork(ctx, r.Client, w, route.Namespace+"/"+route.Name); err != nil {
			if _, taken := nameTaken(err); !taken {
				return err
			}
		}
	}
	// The ConfigMap of before the gateway namespace, in the route's namespace: ours when the
	// route owns it.
	err := r.deleteConfigMap(ctx, types.NamespacedName{Namespace: route.Namespace, Name: legacyConfigMapName(route.Name)}, func(cm *corev1.ConfigMap) bool {
		return cm.Labels[hub.ComponentLabel] == RouteComponent && metav1.IsControlledBy(cm, route)
	})
	if err != nil || pub.configMap != nil {
		return err
	}
	return r.deleteConfigMap(ctx, types.NamespacedName{Namespace: r.gatewayNamespace(), Name: GatewayName(route.Namespace, route.Name)}, func(cm *corev1.ConfigMap) bool {
		return cm.Annotations[hub.OwnerAnnotation] == route.Namespace+"/"+route.Name
	})
}

// deleteConfigMap deletes the ConfigMap key when it exists and ours says it is the route's.
func (r *AppRouteReconciler) deleteConfigMap(ctx context.Context, key types.NamespacedName, ours func(*corev1.ConfigMap) bool) error {
	var cm corev1.ConfigMap
	err := r.Reader.Get(ctx, key, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || !ours(&cm) {
		return err
	}
	Writes.WithLabelValues(kindConfigMap, verbDelete).Inc()
	return client.IgnoreNotFound(r.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}))
}

// applyConfigMap creates desired, or updates observed, the route's ConfigMap of that name (nil
// when there is none), when its data or labels differ.
func (r *AppRouteReconciler) applyConfigMap(ctx context.Context, observed, desired *corev1.ConfigMap) error {
	if observed == nil {
		Writes.WithLabelValues(kindConfigMap, verbCreate).Inc()
		return r.Create(ctx, desired)
	}
	upToDate := equality.Semantic.DeepEqual(observed.Data, desired.Data)
	for k, v := range desired.Labels {
		upToDate = upToDate && observed.Labels[k] == v
	}
	if upToDate {
		return nil
	}
	cm := observed.DeepCopy()
	for k, v := range desired.Labels {
		metav1.SetMetaDataLabel(&cm.ObjectMeta, k, v)
	}
	cm.Data = desired.Data
	Writes.WithLabelValues(kindConfigMap, verbUpdate).Inc()
	return r.Update(ctx, cm)
}

// SetupWithManager registers the reconciler: a route is reconciled on its spec's changes, on
// those of the routes that claim its host, on any change of its app, the joins and sites of
// its namespace, and on its work's status (the agent reporting it applied), spec or deletion.
func (r *AppRouteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.FleetAppRoute{}, routeHostIndex, func(o client.Object) []string {
		if rt := o.(*v1alpha1.FleetAppRoute); fleetrules.ClaimsHost(rt) {
			return []string{rt.Spec.Host}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.FleetAppRoute{}, routeAppIndex, func(o client.Object) []string {
		rt := o.(*v1alpha1.FleetAppRoute)
		return []string{rt.Namespace + "/" + rt.Spec.App}
	}); err != nil {
		return err
	}
	specOrDeletion := builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting))
	b := newController(mgr, "app-routes").
		For(&v1alpha1.FleetAppRoute{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting, resync))).
		Watches(&v1alpha1.FleetAppRoute{}, handler.EnqueueRequestsFromMapFunc(r.routesClaimingHost), specOrDeletion).
		Watches(&v1alpha1.FleetApp{}, handler.EnqueueRequestsFromMapFunc(r.routesOfApp), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.FleetClusterJoin{}, handler.EnqueueRequestsFromMapFunc(r.routesOfJoin)).
		Watches(&v1alpha1.FleetSite{}, handler.EnqueueRequestsFromMapFunc(r.routesOfNamespace), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A route's work (its owner annotation names the route): the agent's status (Delivered),
		// a change of its spec by hand, or its deletion; the route's own create wakes it once,
		// and writes nothing then.
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(appOfWork), builder.WithPredicates(component(RouteComponent),
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, statusChanged(func(w *workv1.ManifestWork) any { return &w.Status }))))
	// A ManagedCluster's labels, annotations and spec (the client config) come from its one
	// cache, which watchAccess watches.
	return build(watchAccess(b, r.Client, r.routesOnCluster, true), r)
}

// routesOnCluster maps a change of access to the routes of ns ("" for all) whose app names
// cluster ("" for any). A join of another workspace may change which join counts for a
// cluster, so joins map here too.
func (r *AppRouteReconciler) routesOnCluster(ctx context.Context, ns, cluster string) []ctrl.Request {
	if cluster == "" {
		return r.routes(ctx, inNamespace(ns)...)
	}
	var apps v1alpha1.FleetAppList
	if err := r.List(ctx, &apps, inNamespace(ns)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing apps")
		return nil
	}
	var out []ctrl.Request
	for _, a := range apps.Items {
		if a.Spec.Cluster == cluster {
			out = append(out, r.routes(ctx, client.MatchingFields{routeAppIndex: a.Namespace + "/" + a.Name})...)
		}
	}
	return out
}

// routesOfJoin maps a join to the routes of its namespace and to those on its cluster.
func (r *AppRouteReconciler) routesOfJoin(ctx context.Context, obj client.Object) []ctrl.Request {
	out := r.routesOfNamespace(ctx, obj)
	for _, req := range r.routesOnCluster(ctx, "", obj.(*v1alpha1.FleetClusterJoin).Spec.Cluster) {
		if !slices.Contains(out, req) {
			out = append(out, req)
		}
	}
	return out
}

// routesClaimingHost maps a route to the other routes of its host (a deleted or moved holder
// frees it); for a change, of its old host and of its new one.
func (r *AppRouteReconciler) routesClaimingHost(ctx context.Context, obj client.Object) []ctrl.Request {
	route := obj.(*v1alpha1.FleetAppRoute)
	if route.Spec.Host == "" {
		return nil
	}
	return r.routes(ctx, client.MatchingFields{routeHostIndex: route.Spec.Host})
}

// routesOfApp maps an app to the routes naming it.
func (r *AppRouteReconciler) routesOfApp(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.routes(ctx, client.MatchingFields{routeAppIndex: obj.GetNamespace() + "/" + obj.GetName()})
}

// routesOfNamespace maps a join or a site to every route of its workspace.
func (r *AppRouteReconciler) routesOfNamespace(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.routes(ctx, client.InNamespace(obj.GetNamespace()))
}

func (r *AppRouteReconciler) routes(ctx context.Context, opts ...client.ListOption) []ctrl.Request {
	var routes v1alpha1.FleetAppRouteList
	if err := r.List(ctx, &routes, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing app routes")
		return nil
	}
	out := make([]ctrl.Request, 0, len(routes.Items))
	for _, rt := range routes.Items {
		out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: rt.Namespace, Name: rt.Name}})
	}
	return out
}
