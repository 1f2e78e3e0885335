package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/fleetrules"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetclusterjoins,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetclusterjoins/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetclusterjoins/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetsites,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters,verbs=get;list;watch;patch

// What the cluster-joins and sites reconcilers write, for the writes metric.
const (
	kindClusterJoin    = "fleetclusterjoin"
	kindManagedCluster = "managedcluster"
	kindSite           = "fleetsite"
	kindConfigMap      = "configmap"
	verbPatch          = "patch"
)

// joinFinalizer lets the reconciler remove the join's labels from its cluster before the join goes.
const joinFinalizer = "fleet.umkim.io/cluster-join"

// Cache indexes of FleetClusterJoins.
const (
	joinSiteIndex    = "joinSite"    // FleetClusterJoin → spec.site
	joinClusterIndex = "joinCluster" // FleetClusterJoin → spec.cluster
)

// ClusterJoinReconciler labels each FleetClusterJoin's ManagedCluster with its site
// (fleet.site=<site>) and one label per capability (capability.fleet.umkim.io/<name>=true), and
// reports Joined and Ready.
//
// A join acts only on a cluster its workspace may use (inventory.Access: a ManagedClusterSet
// bound to the join's namespace holds it, the join's own labels not counted); any other is not
// Joined (NotBound) and gets no label.
//
// It touches only the labels it set: the ManagedCluster's fleet.umkim.io/join-labels annotation
// lists them and fleet.umkim.io/joined-by names the join, so that dropping a capability or the join
// removes exactly those labels and no one else's. A label the cluster already has with another
// value that the join did not set is never overwritten: the join is not Joined (LabelConflict,
// naming the label and its value). Every change is a JSON merge patch of those labels and
// annotations with the cluster's resourceVersion, sent only when they differ.
//
// A cluster is joined by one FleetClusterJoin, the one fleetrules.JoinOf picks of the live joins
// naming it whose workspace may use it: the join its joined-by annotation names, else the oldest;
// every other is not Joined (ClusterAlreadyJoined) and sets no labels.
// A port_forward ingress entry serves one cluster: of the joins bound to it, the one created
// first (then by name) holds it (fleetrules.EntryHolder), and every other is not Ready
// (IngressTaken, naming the holder).
type ClusterJoinReconciler struct {
	client.Client
}

// Reconcile labels one join's cluster and reports the join's conditions.
func (r *ClusterJoinReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var j v1alpha1.FleetClusterJoin
	if err := r.Get(ctx, req.NamespacedName, &j); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !j.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&j, joinFinalizer) {
			return ctrl.Result{}, nil
		}
		if err := r.unlabel(ctx, &j); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(&j, joinFinalizer)
		Writes.WithLabelValues(kindClusterJoin, verbUpdate).Inc()
		return ctrl.Result{}, client.IgnoreNotFound(r.Update(ctx, &j))
	}
	if controllerutil.AddFinalizer(&j, joinFinalizer) {
		Writes.WithLabelValues(kindClusterJoin, verbUpdate).Inc()
		if err := r.Update(ctx, &j); err != nil {
			return ctrl.Result{}, err
		}
	}

	// One status write, at the end, when the reconcile reached an account of the join.
	patch := kube.BeginStatus(&j, &j.Status)
	report := false
	defer func() {
		err = errors.Join(err, patch.Write(ctx, r.Client, report, countStatusWrite(kindClusterJoin)))
	}()
	var result ctrl.Result
	result, report, err = r.join(ctx, &j)
	return result, err
}

// join labels j's cluster and sets j.Status; report says whether the status is an account of
// the join to write (false when what it needs could not be read: the reconcile is retried).
func (r *ClusterJoinReconciler) join(ctx context.Context, j *v1alpha1.FleetClusterJoin) (ctrl.Result, bool, error) {
	st := &j.Status
	st.ObservedGeneration = j.Generation
	set := func(typ string, ok bool, reason, msg string) {
		setCondition(&st.Conditions, j.Generation, typ, ok, reason, msg)
	}

	cluster := managedClusterMetadata()
	err := r.Get(ctx, types.NamespacedName{Name: j.Spec.Cluster}, cluster)
	if apierrors.IsNotFound(err) {
		st.Labels = nil
		return notJoined(st, j.Generation, v1alpha1.ReasonClusterNotFound, fmt.Sprintf("no ManagedCluster %q on the hub: it joins once OCM registers it", j.Spec.Cluster))
	}
	if err != nil {
		return ctrl.Result{}, false, err
	}
	key := fleetrules.Key(j)
	owner := cluster.GetAnnotations()[v1alpha1.JoinedByAnnotation]
	ca, err := clusterAccess(ctx, r.Client, j.Namespace, withoutJoinLabels(cluster, key))
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if !ca.Allowed() {
		// The workspace may not use the cluster: nothing is labelled, and what this join set
		// before (its workspace lost the binding) goes.
		if owner == key {
			if _, err := r.label(ctx, cluster, key, nil); err != nil {
				return ctrl.Result{}, false, err
			}
		}
		st.Labels = nil
		return notJoined(st, j.Generation, v1alpha1.ReasonNotBound, ca.NotBound())
	}
	candidates, err := joinCandidates(ctx, r.Client, cluster)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if holder := fleetrules.JoinOf(j.Spec.Cluster, owner, candidates); holder != nil && fleetrules.Key(holder) != key {
		st.Labels = nil
		msg := fmt.Sprintf("ManagedCluster %s is joined by FleetClusterJoin %s: a cluster joins one site; delete that join first", j.Spec.Cluster, fleetrules.Key(holder))
		if fleetrules.Key(holder) != owner {
			msg = fmt.Sprintf("FleetClusterJoin %s, created first, joins ManagedCluster %s: a cluster joins one site; delete that join first", fleetrules.Key(holder), j.Spec.Cluster)
		}
		return notJoined(st, j.Generation, v1alpha1.ReasonClusterAlreadyJoined, msg)
	}
	// The owner, if any other, is gone or no longer bound: its labels are taken over, and those
	// this join does not want are removed below.

	var site v1alpha1.FleetSite
	err = r.Get(ctx, types.NamespacedName{Namespace: j.Namespace, Name: j.Spec.Site}, &site)
	siteFound := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, false, err
	}
	desired := map[string]string{}
	if siteFound {
		desired = joinLabels(j)
	}
	conflicts, err := r.label(ctx, cluster, key, desired)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	st.Labels = ownedLabels(cluster)
	if !siteFound {
		return notJoined(st, j.Generation, v1alpha1.ReasonSiteNotFound, fmt.Sprintf("no FleetSite %s/%s: the cluster is labelled once the site exists", j.Namespace, j.Spec.Site))
	}
	if len(conflicts) > 0 {
		return notJoined(st, j.Generation, v1alpha1.ReasonLabelConflict, fmt.Sprintf("ManagedCluster %s has %s, which this join did not set and does not overwrite: remove %s from the cluster, or join another cluster",
			j.Spec.Cluster, strings.Join(conflicts, ", "), plural(len(conflicts), "that label", "those labels")))
	}
	if !siteFound {
		return notJoined(st, j.Generation, v1alpha1.ReasonSiteNotFound, fmt.Sprintf("no FleetSite %s/%s: the cluster is labelled once the site exists", j.Namespace, j.Spec.Site))
	}
	set(v1alpha1.JoinedCondition, true, v1alpha1.ReasonLabelled,
		fmt.Sprintf("ManagedCluster %s is labelled %s", j.Spec.Cluster, strings.Join(labelPairs(desired), ", ")))

	id := j.IngressID()
	st.IngressMethod = ""
	if id == "" {
		set(v1alpha1.ReadyCondition, true, v1alpha1.ReasonReady, fmt.Sprintf("joined to site %s without an ingress entry", j.Spec.Site))
		return ctrl.Result{}, true, nil
	}
	entry, ok := site.Entry(id)
	if !ok {
		set(v1alpha1.ReadyCondition, false, v1alpha1.ReasonIngressNotFound,
			fmt.Sprintf("site %s has no ingress entry %q (it has: %s)", j.Spec.Site, id, strings.Join(fleetrules.EntryIDs(&site), ", ")))
		return ctrl.Result{}, true, nil
	}
	st.IngressMethod = entry.Method
	if entry.Method == v1alpha1.IngressPortForward {
		holder, err := r.entryHolder(ctx, j.Namespace, j.Spec.Site, id)
		if err != nil {
			return ctrl.Result{}, false, err
		}
		if holder != nil && holder.Name != j.Name {
			set(v1alpha1.ReadyCondition, false, v1alpha1.ReasonIngressTaken,
				fmt.Sprintf("ingress entry %q of site %s is a port_forward entry, which serves one cluster, and FleetClusterJoin %s (cluster %s) holds it: bind this join to another entry, or use a reverse_proxy entry",
					id, j.Spec.Site, fleetrules.Key(holder), holder.Spec.Cluster))
			return ctrl.Result{}, true, nil
		}
	}
	set(v1alpha1.ReadyCondition, true, v1alpha1.ReasonReady, fmt.Sprintf("joined to site %s through %s entry %q (%s)", j.Spec.Site, entry.Method, id, entry.Address))
	return ctrl.Result{}, true, nil
}

// notJoined sets the status of a join that does not join its cluster (reason, msg): not Joined,
// not Ready, no ingress method; the status is to be written.
func notJoined(st *v1alpha1.FleetClusterJoinStatus, gen int64, reason, msg string) (ctrl.Result, bool, error) {
	st.IngressMethod = ""
	setCondition(&st.Conditions, gen, v1alpha1.JoinedCondition, false, reason, msg)
	setCondition(&st.Conditions, gen, v1alpha1.ReadyCondition, false, reason, msg)
	return ctrl.Result{}, true, nil
}

// joinLabels are the labels a join puts on its cluster.
func joinLabels(j *v1alpha1.FleetClusterJoin) map[string]string {
	l := map[string]string{v1alpha1.SiteLabel: j.Spec.Site}
	for _, c := range j.Spec.Capabilities {
		l[v1alpha1.CapabilityLabelPrefix+c] = "true"
	}
	return l
}

func labelPairs(l map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(l) {
		out = append(out, k+"="+l[k])
	}
	return out
}

// ownedLabels reads the label keys a join set from the cluster's annotation.
func ownedLabels(obj metav1.Object) []string {
	v := obj.GetAnnotations()[v1alpha1.JoinLabelsAnnotation]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// label makes the join's labels on cluster desired, as far as they are the join's to set: labels
// listed as the join's that it no longer wants are removed; a wanted label the cluster has with
// another value that the join did not set (by hand, or another join's) is left and returned in
// conflicts as key=value; one that already has the wanted value is left too and not recorded as
// the join's, so that removing the join leaves it. An empty desired releases the cluster.
func (r *ClusterJoinReconciler) label(ctx context.Context, cluster client.Object, owner string, desired map[string]string) (conflicts []string, err error) {
	orig := cluster.DeepCopyObject().(client.Object)
	labels, annotations := cluster.GetLabels(), cluster.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	owned := map[string]bool{}
	for _, k := range ownedLabels(cluster) {
		owned[k] = true
		if _, keep := desired[k]; !keep {
			delete(labels, k)
		}
	}
	var mine []string
	for _, k := range sortedKeys(desired) {
		cur, exists := labels[k]
		switch {
		case owned[k] || !exists:
			labels[k] = desired[k]
			mine = append(mine, k)
		case cur != desired[k]:
			conflicts = append(conflicts, k+"="+cur)
		}
	}
	delete(annotations, v1alpha1.JoinedByAnnotation)
	delete(annotations, v1alpha1.JoinLabelsAnnotation)
	if len(desired) > 0 {
		annotations[v1alpha1.JoinedByAnnotation] = owner
		if len(mine) > 0 {
			annotations[v1alpha1.JoinLabelsAnnotation] = strings.Join(mine, ",")
		}
	}
	cluster.SetLabels(labels)
	cluster.SetAnnotations(annotations)
	if equality.Semantic.DeepEqual(orig.GetLabels(), cluster.GetLabels()) && equality.Semantic.DeepEqual(orig.GetAnnotations(), cluster.GetAnnotations()) ||
		len(orig.GetLabels()) == 0 && len(labels) == 0 && len(orig.GetAnnotations()) == 0 && len(annotations) == 0 {
		return conflicts, nil
	}
	Writes.WithLabelValues(kindManagedCluster, verbPatch).Inc()
	return conflicts, r.Patch(ctx, cluster, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// unlabel removes the join's labels from its cluster, if the join still owns them.
func (r *ClusterJoinReconciler) unlabel(ctx context.Context, j *v1alpha1.FleetClusterJoin) error {
	cluster := managedClusterMetadata()
	err := r.Get(ctx, types.NamespacedName{Name: j.Spec.Cluster}, cluster)
	if absent(err) { // the cluster, or the ManagedCluster kind, is gone: nothing to unlabel
		return nil
	}
	if err != nil {
		return err
	}
	if cluster.GetAnnotations()[v1alpha1.JoinedByAnnotation] != fleetrules.Key(j) {
		return nil
	}
	_, err = r.label(ctx, cluster, fleetrules.Key(j), nil)
	return err
}

// entryHolder is the join that holds a port_forward entry (fleetrules.EntryHolder).
func (r *ClusterJoinReconciler) entryHolder(ctx context.Context, ns, site, id string) (*v1alpha1.FleetClusterJoin, error) {
	var list v1alpha1.FleetClusterJoinList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{joinSiteIndex: site}); err != nil {
		return nil, err
	}
	return fleetrules.EntryHolder(list.Items, site, id), nil
}

// SetupWithManager registers the reconciler: a join is reconciled on its own changes (its
// status included: statusChanged), on its site's, on those of the other joins of its site (a
// port_forward entry freed or taken) and on its cluster's labels and annotations.
func (r *ClusterJoinReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.FleetClusterJoin{}, joinSiteIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.FleetClusterJoin).Spec.Site}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.FleetClusterJoin{}, joinClusterIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.FleetClusterJoin).Spec.Cluster}
	}); err != nil {
		return err
	}
	b := newController(mgr, "cluster-joins").
		For(&v1alpha1.FleetClusterJoin{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, resync,
			statusChanged(func(j *v1alpha1.FleetClusterJoin) any { return &j.Status })))).
		Watches(&v1alpha1.FleetClusterJoin{}, handler.EnqueueRequestsFromMapFunc(r.siteMates),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted{}))).
		Watches(&v1alpha1.FleetSite{}, handler.EnqueueRequestsFromMapFunc(r.joinsOfSite), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(managedClusterMetadata(), handler.EnqueueRequestsFromMapFunc(r.joinsOfCluster),
			builder.WithPredicates(predicate.Or[client.Object](predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	return build(watchAccess(b, r.Client, r.joinsNaming, false), r)
}

// joinsNaming maps a change of access to the joins of ns ("" for all) naming cluster ("" for any).
func (r *ClusterJoinReconciler) joinsNaming(ctx context.Context, ns, cluster string) []ctrl.Request {
	var list v1alpha1.FleetClusterJoinList
	if err := r.List(ctx, &list, inNamespace(ns)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing joins")
		return nil
	}
	return requestsOf(list.Items, func(j *v1alpha1.FleetClusterJoin) bool { return cluster == "" || j.Spec.Cluster == cluster })
}

// deletionStarted passes the update that sets an object's deletionTimestamp.
type deletionStarted struct{ predicate.Funcs }

func (deletionStarted) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

func (r *ClusterJoinReconciler) requests(ctx context.Context, field, value string, opts ...client.ListOption) []ctrl.Request {
	var list v1alpha1.FleetClusterJoinList
	if err := r.List(ctx, &list, append(opts, client.MatchingFields{field: value})...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing joins", field, value)
		return nil
	}
	var out []ctrl.Request
	for _, j := range list.Items {
		out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: j.Namespace, Name: j.Name}})
	}
	return out
}

func (r *ClusterJoinReconciler) siteMates(ctx context.Context, obj client.Object) []ctrl.Request {
	j := obj.(*v1alpha1.FleetClusterJoin)
	out := r.requests(ctx, joinSiteIndex, j.Spec.Site, client.InNamespace(j.Namespace))
	// A join that moved to another site, or another cluster's: the cluster's other joins too.
	for _, req := range r.requests(ctx, joinClusterIndex, j.Spec.Cluster) {
		if !slices.Contains(out, req) {
			out = append(out, req)
		}
	}
	return out
}

func (r *ClusterJoinReconciler) joinsOfSite(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.requests(ctx, joinSiteIndex, obj.GetName(), client.InNamespace(obj.GetNamespace()))
}

func (r *ClusterJoinReconciler) joinsOfCluster(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.requests(ctx, joinClusterIndex, obj.GetName())
}
