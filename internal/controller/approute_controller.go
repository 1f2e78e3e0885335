package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

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
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
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

// RouteConfigMapName is the name of the hub gateway's ConfigMap of a route, in its namespace.
func RouteConfigMapName(route string) string { return "fleet-route-" + route }

// Reasons of a FleetAppRoute's Ready condition.
const (
	reasonPublished     = "Published"
	reasonAppNotFound   = "AppNotFound"
	reasonNotJoined     = "NotJoined"
	reasonNoHubGateway  = "NoHubGateway"
	reasonNoIngress     = "NoIngress"
	reasonHostTaken     = "HostTaken"
	reasonUnpublished   = "Unpublished"
	reasonPublishFailed = "PublishFailed"
)

const (
	kindAppRoute = "fleetapproute"
	// routeFinalizer lets the reconciler delete the route's work, in the cluster's namespace,
	// before the route goes.
	routeFinalizer = "fleet.umkim.io/app-route"
	// Cache indexes of FleetAppRoutes.
	routeHostIndex = "routeHost" // host and path, of routes that publish
	routeAppIndex  = "routeApp"  // <namespace>/<spec.app>
)

// AppRouteReconciler publishes each FleetAppRoute as its mode says:
//   - site: a ManifestWork in the app cluster's namespace carries an Ingress, named after the
//     route, in the app's namespace on the cluster: host and path (Prefix) to the Service's port;
//     tls.secretName in spec.tls, tls.acmeIssuer as the cert-manager.io/cluster-issuer annotation
//     with the certificate in Secret <route>-tls. The cluster must be joined (a FleetClusterJoin of
//     the workspace names it) and bound to an ingress entry of its site.
//   - hub: the same Ingress (the site's ingress controller serves the host behind the hub), and a
//     ConfigMap fleet-route-<route> in the route's namespace on the hub, labelled
//     fleet.umkim.io/gateway=traefik, whose key traefik.yaml is a Traefik v3 dynamic-configuration
//     fragment (file provider): router <namespace>-<route> for Host(`host`) && PathPrefix(`path`)
//     to service <namespace>-<route>, which forwards, host header kept, to http://<address>, the
//     host of the ManagedCluster's first managedClusterClientConfigs URL (how the hub reaches the
//     cluster over the fleet's overlay). The hub's Traefik mounts these ConfigMaps into its file
//     provider's directory (docs/guides/app-routes.md). The cluster's site must enable hubGateway.
//   - none: nothing.
//
// What the route no longer wants (after a mode change, or on deletion) is deleted. Two routes
// claiming one host and path: the one created first (then by namespace/name) holds it, the other
// publishes nothing and is not Ready (HostTaken, naming the holder).
type AppRouteReconciler struct {
	client.Client
	// Reader reads the hub ConfigMaps, which the manager does not cache.
	Reader client.Reader
}

// routePublication is what a route publishes: nothing, a work, or a work and a ConfigMap.
type routePublication struct {
	cluster   string
	work      *workv1.ManifestWork
	configMap *corev1.ConfigMap
}

// Reconcile publishes one route and reports it.
func (r *AppRouteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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

	pub, reason, msg, err := r.publication(ctx, &route)
	if err != nil {
		return ctrl.Result{}, err
	}
	st := route.Status.DeepCopy()
	st.ObservedGeneration, st.Cluster, st.URL, st.Published = route.Generation, pub.cluster, "", ""
	err = r.unpublish(ctx, &route, pub)
	if err == nil && pub.work != nil {
		var observed workv1.ManifestWork
		if err = r.Get(ctx, client.ObjectKeyFromObject(pub.work), &observed); client.IgnoreNotFound(err) == nil {
			_, err = applyWork(ctx, r.Client, &observed, pub.work)
		}
		st.Published = pub.work.Namespace + "/" + pub.work.Name
	}
	if err == nil && pub.configMap != nil {
		err = r.applyConfigMap(ctx, pub.configMap)
		st.Published = pub.configMap.Namespace + "/" + pub.configMap.Name
	}
	if tl := tooLarge(err); tl != nil { // a stall: nothing was written
		st.Published = ""
		setCondition(&st.Conditions, route.Generation, v1alpha1.ReadyCondition, false, v1alpha1.ReasonWorkTooLarge, tl.Error())
		return ctrl.Result{}, writeStatus(ctx, r.Client, &route, &route.Status, st, kindAppRoute)
	}
	if err != nil {
		st.Published = ""
		setCondition(&st.Conditions, route.Generation, v1alpha1.ReadyCondition, false, reasonPublishFailed, err.Error())
		return ctrl.Result{}, errors.Join(err, writeStatus(ctx, r.Client, &route, &route.Status, st, kindAppRoute))
	}
	if st.Published != "" {
		scheme := "http"
		if route.Spec.TLS != nil {
			scheme = "https"
		}
		st.URL = scheme + "://" + route.Spec.Host + route.Spec.Path
	}
	setCondition(&st.Conditions, route.Generation, v1alpha1.ReadyCondition, reason == reasonPublished || reason == reasonUnpublished, reason, msg)
	return ctrl.Result{}, writeStatus(ctx, r.Client, &route, &route.Status, st, kindAppRoute)
}

// publication is what route should publish now, with the Ready reason and message that say so.
func (r *AppRouteReconciler) publication(ctx context.Context, route *v1alpha1.FleetAppRoute) (pub routePublication, reason, msg string, err error) {
	if route.Spec.Mode == v1alpha1.RouteNone {
		return pub, reasonUnpublished, "mode none: nothing is published", nil
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
	holder, err := r.hostHolder(ctx, route)
	if err != nil {
		return pub, "", "", err
	}
	if holder != nil && holder.UID != route.UID {
		return pub, reasonHostTaken, fmt.Sprintf("host %s path %s is held by FleetAppRoute %s/%s, created first: give this route another host or path, or delete that one",
			route.Spec.Host, route.Spec.Path, holder.Namespace, holder.Name), nil
	}
	join, err := r.joinOf(ctx, route.Namespace, app.Spec.Cluster)
	if err != nil {
		return pub, "", "", err
	}
	if join == nil {
		return pub, reasonNotJoined, fmt.Sprintf("no FleetClusterJoin in %s names cluster %s: join the app's cluster to a site", route.Namespace, app.Spec.Cluster), nil
	}
	work, err := routeWork(route, &app)
	if err != nil {
		return pub, "", "", err
	}
	if route.Spec.Mode == v1alpha1.RouteSite {
		if join.IngressID() == "" {
			return pub, reasonNoIngress, fmt.Sprintf("FleetClusterJoin %s binds cluster %s to no ingress entry: set its edge.ingressId, or use mode hub",
				join.Name, app.Spec.Cluster), nil
		}
		pub.work = work
		return pub, reasonPublished, fmt.Sprintf("Ingress %s/%s on cluster %s, through ingress entry %q of site %s",
			app.Spec.Namespace, route.Name, app.Spec.Cluster, join.IngressID(), join.Spec.Site), nil
	}

	var site v1alpha1.FleetSite
	err = r.Get(ctx, types.NamespacedName{Namespace: route.Namespace, Name: join.Spec.Site}, &site)
	if client.IgnoreNotFound(err) != nil {
		return pub, "", "", err
	}
	if err != nil || site.Spec.HubGateway == nil || !site.Spec.HubGateway.Enabled {
		return pub, reasonNoHubGateway, fmt.Sprintf("site %s/%s of cluster %s does not enable hubGateway: enable it, or use mode site", route.Namespace, join.Spec.Site, app.Spec.Cluster), nil
	}
	var cluster clusterv1.ManagedCluster
	if err := r.Get(ctx, types.NamespacedName{Name: app.Spec.Cluster}, &cluster); client.IgnoreNotFound(err) != nil {
		return pub, "", "", err
	}
	address := clusterAddress(&cluster)
	if address == "" {
		return pub, reasonNoHubGateway, fmt.Sprintf("ManagedCluster %s has no spec.managedClusterClientConfigs URL: the hub gateway has no address to reach it by", app.Spec.Cluster), nil
	}
	cm, err := traefikConfigMap(route, address)
	if err != nil {
		return pub, "", "", err
	}
	pub.work, pub.configMap = work, cm
	return pub, reasonPublished, fmt.Sprintf("hub gateway (Traefik) forwards to %s, where Ingress %s/%s of cluster %s serves it", address, app.Spec.Namespace, route.Name, app.Spec.Cluster), nil
}

// hostHolder is the route holding route's host and path: of the live routes that publish them,
// the one created first, then by namespace/name. Nil when route publishes no host.
func (r *AppRouteReconciler) hostHolder(ctx context.Context, route *v1alpha1.FleetAppRoute) (*v1alpha1.FleetAppRoute, error) {
	key := routeHostKey(route)
	if key == "" {
		return nil, nil
	}
	var routes v1alpha1.FleetAppRouteList
	if err := r.List(ctx, &routes, client.MatchingFields{routeHostIndex: key}); err != nil {
		return nil, err
	}
	var holder *v1alpha1.FleetAppRoute
	for i := range routes.Items {
		c := &routes.Items[i]
		if holder == nil || cmp.Or(c.CreationTimestamp.Compare(holder.CreationTimestamp.Time), cmp.Compare(c.Namespace, holder.Namespace), cmp.Compare(c.Name, holder.Name)) < 0 {
			holder = c
		}
	}
	return holder, nil
}

// routeHostKey is the host and path route claims: none for a route that publishes nothing or is
// being deleted.
func routeHostKey(route *v1alpha1.FleetAppRoute) string {
	if route.Spec.Mode == v1alpha1.RouteNone || route.Spec.Host == "" || !route.DeletionTimestamp.IsZero() {
		return ""
	}
	return route.Spec.Host + route.Spec.Path
}

// joinOf is the join of ws that names cluster: a Joined one first, else the oldest; nil if none.
func (r *AppRouteReconciler) joinOf(ctx context.Context, ws, cluster string) (*v1alpha1.FleetClusterJoin, error) {
	var joins v1alpha1.FleetClusterJoinList
	if err := r.List(ctx, &joins, client.InNamespace(ws)); err != nil {
		return nil, err
	}
	var best *v1alpha1.FleetClusterJoin
	rank := func(j *v1alpha1.FleetClusterJoin) bool {
		return meta.IsStatusConditionTrue(j.Status.Conditions, v1alpha1.JoinedCondition)
	}
	for i := range joins.Items {
		j := &joins.Items[i]
		if j.Spec.Cluster != cluster || !j.DeletionTimestamp.IsZero() {
			continue
		}
		if best == nil || rank(j) && !rank(best) || rank(j) == rank(best) && j.CreationTimestamp.Before(&best.CreationTimestamp) {
			best = j
		}
	}
	return best, nil
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
		ObjectMeta: metav1.ObjectMeta{Name: route.Name, Namespace: app.Spec.Namespace},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: route.Spec.Host, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: route.Spec.Path, PathType: &pathType,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: route.Spec.Service.Name,
					Port: networkingv1.ServiceBackendPort{Number: route.Spec.Service.Port}}}}}},
		}}}},
	}
	if tls := route.Spec.TLS; tls != nil {
		secret := tls.SecretName
		if tls.ACMEIssuer != "" {
			secret = route.Name + "-tls"
			ing.Annotations = map[string]string{"cert-manager.io/cluster-issuer": tls.ACMEIssuer}
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{route.Spec.Host}, SecretName: secret}}
	}
	raw, err := json.Marshal(ing)
	if err != nil {
		return nil, err
	}
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: appwork.Name("route", route.Namespace, route.Name), Namespace: app.Spec.Cluster,
			Labels:      map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.WorkspaceLabel: route.Namespace, hub.ComponentLabel: RouteComponent},
			Annotations: map[string]string{hub.OwnerAnnotation: route.Namespace + "/" + route.Name}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}, nil
}

// traefikConfigMap is route's hub ConfigMap: a Traefik dynamic-configuration fragment that
// routes its host and path to address.
func traefikConfigMap(route *v1alpha1.FleetAppRoute, address string) (*corev1.ConfigMap, error) {
	name := route.Namespace + "-" + route.Name
	router := map[string]any{
		"rule":    fmt.Sprintf("Host(`%s`) && PathPrefix(`%s`)", route.Spec.Host, route.Spec.Path),
		"service": name,
	}
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
	truth := true
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: RouteConfigMapName(route.Name), Namespace: route.Namespace,
			Labels: map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.ComponentLabel: RouteComponent, hub.GatewayLabel: hub.GatewayTraefik},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FleetAppRoute", Name: route.Name, UID: route.UID,
				Controller: &truth, BlockOwnerDeletion: &truth}}},
		Data: map[string]string{TraefikKey: string(data)},
	}, nil
}

// unpublish deletes what route published that pub does not: its works elsewhere, its ConfigMap.
func (r *AppRouteReconciler) unpublish(ctx context.Context, route *v1alpha1.FleetAppRoute, pub routePublication) error {
	var works workv1.ManifestWorkList
	if err := r.List(ctx, &works, client.MatchingLabels{hub.ComponentLabel: RouteComponent, hub.WorkspaceLabel: route.Namespace}); err != nil {
		return err
	}
	for i := range works.Items {
		w := &works.Items[i]
		if w.Annotations[hub.OwnerAnnotation] != route.Namespace+"/"+route.Name || !w.DeletionTimestamp.IsZero() ||
			pub.work != nil && w.Namespace == pub.work.Namespace && w.Name == pub.work.Name {
			continue
		}
		Writes.WithLabelValues(kindWork, verbDelete).Inc()
		if err := client.IgnoreNotFound(r.Delete(ctx, w)); err != nil {
			return err
		}
	}
	if pub.configMap != nil {
		return nil
	}
	var cm corev1.ConfigMap
	err := r.Reader.Get(ctx, types.NamespacedName{Namespace: route.Namespace, Name: RouteConfigMapName(route.Name)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cm.Labels[hub.ComponentLabel] != RouteComponent {
		return nil // not ours
	}
	Writes.WithLabelValues(kindConfigMap, verbDelete).Inc()
	return client.IgnoreNotFound(r.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}))
}

// applyConfigMap creates desired, or updates the ConfigMap when its data, labels or owners differ.
func (r *AppRouteReconciler) applyConfigMap(ctx context.Context, desired *corev1.ConfigMap) error {
	var cm corev1.ConfigMap
	err := r.Reader.Get(ctx, client.ObjectKeyFromObject(desired), &cm)
	if apierrors.IsNotFound(err) {
		Writes.WithLabelValues(kindConfigMap, verbCreate).Inc()
		return r.Create(ctx, desired)
	}
	if err != nil {
		return err
	}
	upToDate := equality.Semantic.DeepEqual(cm.Data, desired.Data) && equality.Semantic.DeepEqual(cm.OwnerReferences, desired.OwnerReferences)
	for k, v := range desired.Labels {
		upToDate = upToDate && cm.Labels[k] == v
	}
	if upToDate {
		return nil
	}
	for k, v := range desired.Labels {
		metav1.SetMetaDataLabel(&cm.ObjectMeta, k, v)
	}
	cm.Data, cm.OwnerReferences = desired.Data, desired.OwnerReferences
	Writes.WithLabelValues(kindConfigMap, verbUpdate).Inc()
	return r.Update(ctx, &cm)
}

// SetupWithManager registers the reconciler: a route is reconciled on its spec's changes, on
// those of the routes that claim its host, and on any change of its app, the joins and sites of
// its namespace.
func (r *AppRouteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.FleetAppRoute{}, routeHostIndex, func(o client.Object) []string {
		if key := routeHostKey(o.(*v1alpha1.FleetAppRoute)); key != "" {
			return []string{key}
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
	return ctrl.NewControllerManagedBy(mgr).
		Named("app-routes").
		For(&v1alpha1.FleetAppRoute{}, specOrDeletion).
		Watches(&v1alpha1.FleetAppRoute{}, handler.EnqueueRequestsFromMapFunc(r.routesClaimingHost), specOrDeletion).
		Watches(&v1alpha1.FleetApp{}, handler.EnqueueRequestsFromMapFunc(r.routesOfApp), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.FleetClusterJoin{}, handler.EnqueueRequestsFromMapFunc(r.routesOfNamespace)).
		Watches(&v1alpha1.FleetSite{}, handler.EnqueueRequestsFromMapFunc(r.routesOfNamespace), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// routesClaimingHost maps a route to the other routes of its host and path (a deleted or moved
// holder frees it).
func (r *AppRouteReconciler) routesClaimingHost(ctx context.Context, obj client.Object) []ctrl.Request {
	route := obj.(*v1alpha1.FleetAppRoute)
	if route.Spec.Host == "" {
		return nil
	}
	return r.routes(ctx, client.MatchingFields{routeHostIndex: route.Spec.Host + route.Spec.Path})
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
