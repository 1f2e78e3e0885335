package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetsites,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetsites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetclusterjoins,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update;delete

// SiteComponent is the app.kubernetes.io/component of a site's edge ConfigMap.
const SiteComponent = "site-edge"

// EdgeConfigMapName is the name of site's edge ConfigMap, in the site's namespace.
func EdgeConfigMapName(site string) string { return "fleet-site-" + site + "-edge" }

// SiteReconciler keeps each FleetSite's status (joinedClusters: the Ready joins bound to it; Ready;
// WANPath) and its edge ConfigMap, fleet-site-<name>-edge in the site's namespace, which carries
// the site's ingress data for whatever configures a cluster's edge (EdgeData lists the keys). The
// ConfigMap is owned by the site (garbage-collected with it) and deleted by the reconciler when
// the site is gone, for hubs without a garbage collector. ConfigMaps are read uncached (Reader),
// by name, so the controller neither lists nor watches them.
type SiteReconciler struct {
	client.Client
	// Reader reads the edge ConfigMaps: the manager's API reader.
	Reader client.Reader
}

// Reconcile writes one site's edge ConfigMap and status.
func (r *SiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	cmKey := types.NamespacedName{Namespace: req.Namespace, Name: EdgeConfigMapName(req.Name)}
	var site v1alpha1.FleetSite
	if err := r.Get(ctx, req.NamespacedName, &site); apierrors.IsNotFound(err) {
		var cm corev1.ConfigMap
		if err := r.Reader.Get(ctx, cmKey, &cm); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if cm.Labels[hub.ManagedByLabel] != ManagedBy || cm.Labels[hub.ComponentLabel] != SiteComponent {
			return ctrl.Result{}, nil
		}
		Writes.WithLabelValues(kindConfigMap, verbDelete).Inc()
		return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}))
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if !site.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var joins v1alpha1.FleetClusterJoinList
	if err := r.List(ctx, &joins, client.InNamespace(site.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	ready := readyJoinsOf(&site, joins.Items)

	// One status write, at the end: the site's account of its edge, also when writing it failed.
	patch := kube.BeginStatus(&site, &site.Status)
	defer func() { err = errors.Join(err, patch.Write(ctx, r.Client, true, countStatusWrite(kindSite))) }()
	st := &site.Status
	gen := site.Generation
	st.ObservedGeneration, st.JoinedClusters, st.EdgeConfigMap = gen, int32(len(ready)), cmKey.Name
	if site.HasWANPath() {
		setCondition(&st.Conditions, gen, v1alpha1.WANPathCondition, true, v1alpha1.ReasonHasWANPath,
			fmt.Sprintf("%d ingress entries, hub gateway %s", len(site.Spec.Edge.Ingress), gatewayState(&site)))
	} else {
		setCondition(&st.Conditions, gen, v1alpha1.WANPathCondition, false, v1alpha1.ReasonNoWANPath,
			"the site has no ingress entry and no enabled hub gateway: no fleet-managed WAN path reaches its clusters")
	}
	if err := r.applyEdge(ctx, &site, cmKey, EdgeData(&site, ready)); err != nil {
		setCondition(&st.Conditions, gen, v1alpha1.ReadyCondition, false, v1alpha1.ReasonEdgeWriteFailed, fmt.Sprintf("writing ConfigMap %s: %v", cmKey, err))
		return ctrl.Result{}, err
	}
	setCondition(&st.Conditions, gen, v1alpha1.ReadyCondition, true, v1alpha1.ReasonEdgePublished,
		fmt.Sprintf("ConfigMap %s carries the site's edge; %d clusters joined", cmKey.Name, len(ready)))
	return ctrl.Result{}, nil
}

func gatewayState(s *v1alpha1.FleetSite) string {
	if s.Spec.HubGateway != nil && s.Spec.HubGateway.Enabled {
		return "enabled (" + s.Spec.HubGateway.Domain + ")"
	}
	return "disabled"
}

// readyJoinsOf are the joins bound to site whose Ready condition is True for their generation.
func readyJoinsOf(site *v1alpha1.FleetSite, joins []v1alpha1.FleetClusterJoin) []v1alpha1.FleetClusterJoin {
	var out []v1alpha1.FleetClusterJoin
	for _, j := range joins {
		if j.Spec.Site != site.Name || !j.DeletionTimestamp.IsZero() || j.Status.ObservedGeneration != j.Generation {
			continue
		}
		for _, c := range j.Status.Conditions {
			if c.Type == v1alpha1.ReadyCondition && c.Status == metav1.ConditionTrue {
				out = append(out, j)
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Spec.Cluster < out[b].Spec.Cluster })
	return out
}

// EdgeData is the content of a site's edge ConfigMap:
//
//	site                      the site's name
//	displayName               its display name (when set)
//	wanPath                   "true" or "false": whether an ingress entry or the hub gateway reaches it
//	clusters                  the clusters of its Ready joins, comma-separated, sorted
//	ingress                   the ids of its ingress entries, comma-separated, in spec order
//	ingress.<id>.method       port_forward or reverse_proxy
//	ingress.<id>.address      the entry's public address or host
//	ingress.<id>.http         the Traefik HTTP NodePort it forwards to (when set)
//	ingress.<id>.https        the Traefik HTTPS NodePort it forwards to (when set)
//	ingress.<id>.clusters     the clusters of the Ready joins bound to the entry
//	hubGateway.domain         the hub gateway's domain (when enabled)
//
// No credential is ever in it: the jumphost is left out.
func EdgeData(site *v1alpha1.FleetSite, ready []v1alpha1.FleetClusterJoin) map[string]string {
	d := map[string]string{"site": site.Name, "wanPath": strconv.FormatBool(site.HasWANPath())}
	if site.Spec.DisplayName != "" {
		d["displayName"] = site.Spec.DisplayName
	}
	var all, ids []string
	for _, j := range ready {
		all = append(all, j.Spec.Cluster)
	}
	d["clusters"] = strings.Join(all, ",")
	for _, e := range site.Spec.Edge.Ingress {
		ids = append(ids, e.ID)
		p := "ingress." + e.ID + "."
		d[p+"method"], d[p+"address"] = string(e.Method), e.Address
		if e.Ports != nil && e.Ports.HTTP != 0 {
			d[p+"http"] = strconv.Itoa(int(e.Ports.HTTP))
		}
		if e.Ports != nil && e.Ports.HTTPS != 0 {
			d[p+"https"] = strconv.Itoa(int(e.Ports.HTTPS))
		}
		var bound []string
		for _, j := range ready {
			if j.IngressID() == e.ID {
				bound = append(bound, j.Spec.Cluster)
			}
		}
		d[p+"clusters"] = strings.Join(bound, ",")
	}
	d["ingress"] = strings.Join(ids, ",")
	if g := site.Spec.HubGateway; g != nil && g.Enabled {
		d["hubGateway.domain"] = g.Domain
	}
	return d
}

// applyEdge creates the site's edge ConfigMap, or updates it when its data, labels or owner differ.
func (r *SiteReconciler) applyEdge(ctx context.Context, site *v1alpha1.FleetSite, key types.NamespacedName, data map[string]string) error {
	owner := metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FleetSite", Name: site.Name, UID: site.UID}
	labels := map[string]string{hub.ManagedByLabel: ManagedBy, hub.ComponentLabel: SiteComponent}
	var cm corev1.ConfigMap
	err := r.Reader.Get(ctx, key, &cm)
	if apierrors.IsNotFound(err) {
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{owner}}, Data: data}
		Writes.WithLabelValues(kindConfigMap, verbCreate).Inc()
		return r.Create(ctx, &cm)
	}
	if err != nil {
		return err
	}
	upToDate := equality.Semantic.DeepEqual(cm.Data, data) && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0] == owner
	for k, v := range labels {
		upToDate = upToDate && cm.Labels[k] == v
	}
	if upToDate {
		return nil
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	for k, v := range labels {
		cm.Labels[k] = v
	}
	cm.Data, cm.OwnerReferences = data, []metav1.OwnerReference{owner}
	Writes.WithLabelValues(kindConfigMap, verbUpdate).Inc()
	return r.Update(ctx, &cm)
}

// SetupWithManager registers the reconciler: a site is reconciled on its spec's changes, on a
// change of its status (its own write reaching the cache: statusChanged) and on any change of a
// join that names it (its Ready condition included).
func (r *SiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return build(newController(mgr, "sites").
		For(&v1alpha1.FleetSite{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, resync,
			statusChanged(func(s *v1alpha1.FleetSite) any { return &s.Status })))).
		Watches(&v1alpha1.FleetClusterJoin{}, handler.EnqueueRequestsFromMapFunc(siteOfJoin)),
		r)
}

// siteOfJoin maps a join to the site it names.
func siteOfJoin(_ context.Context, obj client.Object) []ctrl.Request {
	j := obj.(*v1alpha1.FleetClusterJoin)
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: j.Namespace, Name: j.Spec.Site}}}
}
