package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/fleetrules"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
)

// Every reconciler that acts on a named cluster reads the bindings and sets to decide whether the
// object's workspace may use it.
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters;managedclustersets;managedclustersetbindings,verbs=get;list;watch

// clusterAccess reads from the cache whether workspace ws may use cluster (of which only the name
// and labels are read): inventory.Access, the decision the routing reconciler makes for every
// cluster of a workspace.
func clusterAccess(ctx context.Context, c client.Reader, ws string, cluster metav1.Object) (inventory.ClusterAccess, error) {
	var bindings clusterv1beta2.ManagedClusterSetBindingList
	if err := c.List(ctx, &bindings, client.InNamespace(ws)); err != nil {
		return inventory.ClusterAccess{}, fmt.Errorf("reading the ManagedClusterSetBindings of %s: %w", ws, err)
	}
	// Every set, also for a workspace bound to none: they name the sets to bind.
	var sets clusterv1beta2.ManagedClusterSetList
	if err := c.List(ctx, &sets, client.UnsafeDisableDeepCopy); err != nil {
		return inventory.ClusterAccess{}, fmt.Errorf("reading the ManagedClusterSets: %w", err)
	}
	return inventory.NewAccess(ws, inventory.BoundSets(bindings.Items), sets.Items).Of(cluster), nil
}

// withoutJoinLabels is cluster's metadata without the labels join set on it (by the cluster's
// join annotations): a join's own labels never count towards its workspace's access, or a join
// could pull any cluster into a label-selector set bound to its workspace.
func withoutJoinLabels(cluster metav1.Object, join string) metav1.Object {
	if cluster.GetAnnotations()[v1alpha1.JoinedByAnnotation] != join {
		return cluster
	}
	m := &metav1.ObjectMeta{Name: cluster.GetName(), Labels: map[string]string{}}
	for k, v := range cluster.GetLabels() {
		m.Labels[k] = v
	}
	for _, k := range ownedLabels(cluster) {
		delete(m.Labels, k)
	}
	return m
}

// joinOfCluster is the FleetClusterJoin that counts for cluster (fleetrules.JoinOf): of the live
// joins naming it in workspaces that may use it, the one its joined-by annotation names, else
// the oldest. nil when none, or when the cluster is not on the hub.
func joinOfCluster(ctx context.Context, c client.Reader, cluster string) (*v1alpha1.FleetClusterJoin, error) {
	mc := managedClusterMetadata()
	if err := c.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	candidates, err := joinCandidates(ctx, c, mc)
	if err != nil {
		return nil, err
	}
	return fleetrules.JoinOf(cluster, mc.GetAnnotations()[v1alpha1.JoinedByAnnotation], candidates), nil
}

// joinCandidates are the live joins naming cluster whose workspace may use it.
func joinCandidates(ctx context.Context, c client.Reader, cluster metav1.Object) ([]v1alpha1.FleetClusterJoin, error) {
	var joins v1alpha1.FleetClusterJoinList
	if err := c.List(ctx, &joins); err != nil {
		return nil, err
	}
	access := map[string]bool{}
	var out []v1alpha1.FleetClusterJoin
	for _, j := range joins.Items {
		if j.Spec.Cluster != cluster.GetName() || !j.DeletionTimestamp.IsZero() {
			continue
		}
		key := fleetrules.Key(&j)
		ok, seen := access[key]
		if !seen {
			ca, err := clusterAccess(ctx, c, j.Namespace, withoutJoinLabels(cluster, key))
			if err != nil {
				return nil, err
			}
			ok = ca.Allowed()
			access[key] = ok
		}
		if ok {
			out = append(out, j)
		}
	}
	return out, nil
}

// getClusterMetadata reads a ManagedCluster's metadata from the cache; nil when there is none.
func getClusterMetadata(ctx context.Context, c client.Reader, name string) (metav1.Object, error) {
	mc := managedClusterMetadata()
	err := c.Get(ctx, types.NamespacedName{Name: name}, mc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return mc, nil
}

// accessRequests maps a change of access to the reconciler's objects: those of namespace ns
// ("" for every namespace) that name cluster ("" for any cluster).
type accessRequests func(ctx context.Context, ns, cluster string) []ctrl.Request

// watchAccess adds to b the watches that re-queue objects whose workspace's access to clusters
// may have changed: a ManagedClusterSetBinding of their namespace, a ManagedClusterSet bound to
// it, and, unless the reconciler maps cluster changes itself (watchClusters false), the
// registration, removal, labels, annotations and spec of the cluster they name (clusterChanged).
func watchAccess(b *builder.Builder, c client.Reader, requests accessRequests, watchClusters bool) *builder.Builder {
	b = b.Watches(&clusterv1beta2.ManagedClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
		return requests(ctx, obj.GetNamespace(), "")
	})).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
			var bindings clusterv1beta2.ManagedClusterSetBindingList
			if err := c.List(ctx, &bindings); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing cluster-set bindings")
				return nil
			}
			var out []ctrl.Request
			seen := map[string]bool{}
			for _, bd := range bindings.Items {
				if bd.Spec.ClusterSet == obj.GetName() && !seen[bd.Namespace] {
					seen[bd.Namespace] = true
					out = append(out, requests(ctx, bd.Namespace, "")...)
				}
			}
			return out
		}))
	if watchClusters {
		b = b.Watches(managedClusterMetadata(), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
			return requests(ctx, "", obj.GetName())
		}), builder.WithPredicates(clusterChanged))
	}
	return b
}

// requestsOf are the requests of items, of which keep selects.
func requestsOf[T any, P interface {
	*T
	client.Object
}](items []T, keep func(P) bool) []ctrl.Request {
	var out []ctrl.Request
	for i := range items {
		if o := P(&items[i]); keep(o) {
			out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
		}
	}
	return out
}

// inNamespace is the list option of ns, none for "".
func inNamespace(ns string) []client.ListOption {
	if ns == "" {
		return nil
	}
	return []client.ListOption{client.InNamespace(ns)}
}
