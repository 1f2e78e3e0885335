package controller

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/probework"
)

// ProbeStatusReconciler projects what clusters' agents report about their registries onto their
// ClusterOCIStorages: the agent probes every registry of the chain (agent.RegistryProbeReconciler)
// and its RegistryProbe's feedback comes back in the status of the chain's ManifestWork; each
// ClusterOCIStorage gets status.reachability, one entry per registry of its chain. It is a
// storage projection (storage_projection.go).
//
// It writes only that field, and only when it changes: the agent reports a change at once and an
// unchanged result at most every --probe-refresh, so a steady fleet costs one write per cluster,
// workspace and refresh bound.
type ProbeStatusReconciler struct {
	client.Client
}

// Reconcile reads the reachability in one cluster's chain work of one workspace.
func (r *ProbeStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return projectStorage(ctx, r.Client, req, func(obs *v1alpha1.ClusterOCIStorage, st *v1alpha1.ClusterOCIStorageStatus) error {
		var w workv1.ManifestWork
		err := r.Get(ctx, types.NamespacedName{Namespace: req.Name, Name: WorkName(req.Namespace)}, &w)
		st.Reachability = nil
		switch {
		case err == nil && w.Labels[hub.WorkspaceLabel] == req.Namespace:
			st.Reachability = probework.Read(&w, req.Namespace, obs.Status.Chain)
		case client.IgnoreNotFound(err) != nil:
			return err
		}
		return nil
	})
}

// chainWorks selects the works that carry chains.
var chainWorks = component(componentOCIChain)

// SetupWithManager registers the reconciler: a ClusterOCIStorage is read again when it is
// created, when its chain changes (the routing reconciler's write) and whenever its cluster's
// chain work of its workspace changes, status included.
func (r *ProbeStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return build(storageProjection(mgr, "probe-status", func(o, n *v1alpha1.ClusterOCIStorage) bool {
		return !slices.Equal(o.Status.Chain, n.Status.Chain)
	}, chainWorks), r)
}
