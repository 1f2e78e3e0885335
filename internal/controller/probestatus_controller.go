package controller

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/probework"
)

// ProbeStatusReconciler projects what clusters' agents report about their registries onto their
// ClusterOCIStorages: the agent probes every registry of the chain (agent.RegistryProbeReconciler)
// and its RegistryProbe's feedback comes back in the status of the chain's ManifestWork; each
// ClusterOCIStorage gets status.reachability, one entry per registry of its chain. A request is
// a ClusterOCIStorage: the workspace namespace and the cluster's name.
//
// It writes only that field, with a merge patch, and only when it changes: the agent reports a
// change at once and an unchanged result at most every --probe-refresh, so a steady fleet costs
// one write per cluster, workspace and refresh bound.
type ProbeStatusReconciler struct {
	client.Client
}

// Reconcile reads the reachability in one cluster's chain work of one workspace.
func (r *ProbeStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obs v1alpha1.ClusterOCIStorage
	if err := r.Get(ctx, req.NamespacedName, &obs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var reach []v1alpha1.RegistryReachability
	var w workv1.ManifestWork
	err := r.Get(ctx, types.NamespacedName{Namespace: req.Name, Name: WorkName(req.Namespace)}, &w)
	switch {
	case err == nil && w.Labels[hub.WorkspaceLabel] == req.Namespace:
		reach = probework.Read(&w, req.Namespace, obs.Status.Chain)
	case client.IgnoreNotFound(err) != nil:
		return ctrl.Result{}, err
	}
	if equality.Semantic.DeepEqual(obs.Status.Reachability, reach) {
		return ctrl.Result{}, nil
	}
	desired := obs.DeepCopy()
	desired.Status.Reachability = reach
	Writes.WithLabelValues(kindStorage, verbStatus).Inc()
	return ctrl.Result{}, r.Status().Patch(ctx, desired, client.MergeFrom(&obs))
}

// chainWorks selects the works that carry chains.
var chainWorks = component(componentOCIChain)

// SetupWithManager registers the reconciler: a ClusterOCIStorage is read again when it is
// created, when its chain changes (the routing reconciler's write) and whenever its cluster's
// chain work of its workspace changes, status included.
func (r *ProbeStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return build(newController(mgr, "probe-status").
		For(&v1alpha1.ClusterOCIStorage{}, builder.WithPredicates(predicate.Or[client.Object](predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, n := e.ObjectOld.(*v1alpha1.ClusterOCIStorage), e.ObjectNew.(*v1alpha1.ClusterOCIStorage)
				return !slices.Equal(o.Status.Chain, n.Status.Chain)
			},
		}, resync))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(storageOfPullWork), builder.WithPredicates(chainWorks)),
		r)
}
