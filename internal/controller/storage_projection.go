package controller

import (
	"context"

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
)

// A storage projection is a reconciler that projects the status feedback of one cluster's works
// of one workspace onto fields of that cluster's ClusterOCIStorage: the pull-status reconciler
// (OCIPull feedback) and the probe-status reconciler (RegistryProbe feedback). Each owns its
// fields and writes only those, with a merge patch, so that the projections and the routing
// reconciler, which writes the rest of the status, never undo each other. A request is a
// ClusterOCIStorage: the workspace namespace and the cluster's name.

// projectStorage reads req's ClusterOCIStorage and lets project set the fields it owns on a copy
// of its status (obs is the object as read, not to be changed); the copy is written only when it
// differs, so a steady fleet costs no write. A ClusterOCIStorage that is gone is no error: its
// cluster has no route, so there is nothing to show.
func projectStorage(ctx context.Context, c client.Client, req ctrl.Request,
	project func(obs *v1alpha1.ClusterOCIStorage, st *v1alpha1.ClusterOCIStorageStatus) error,
) (ctrl.Result, error) {
	var obs v1alpha1.ClusterOCIStorage
	if err := c.Get(ctx, req.NamespacedName, &obs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	desired := obs.DeepCopy()
	if err := project(&obs, &desired.Status); err != nil {
		return ctrl.Result{}, err
	}
	if equality.Semantic.DeepEqual(obs.Status, desired.Status) {
		return ctrl.Result{}, nil
	}
	Writes.WithLabelValues(kindStorage, verbStatus).Inc()
	return ctrl.Result{}, c.Status().Patch(ctx, desired, client.MergeFrom(&obs))
}

// storageProjection is a projection's controller: a ClusterOCIStorage is read again when it is
// created, on resync, on an update for which changed is true (nil: none, as the projection's own
// status writes are updates too), and whenever a work that works selects changes, status
// included, in its cluster's namespace with its workspace's label.
func storageProjection(mgr ctrl.Manager, name string, changed func(old, new *v1alpha1.ClusterOCIStorage) bool, works predicate.Predicate) *builder.Builder {
	update := func(event.UpdateEvent) bool { return false }
	if changed != nil {
		update = func(e event.UpdateEvent) bool {
			return changed(e.ObjectOld.(*v1alpha1.ClusterOCIStorage), e.ObjectNew.(*v1alpha1.ClusterOCIStorage))
		}
	}
	return newController(mgr, name).
		For(&v1alpha1.ClusterOCIStorage{}, builder.WithPredicates(predicate.Or[client.Object](predicate.Funcs{UpdateFunc: update}, resync))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(storageOfPullWork), builder.WithPredicates(works))
}

// storageOfPullWork maps a work to the ClusterOCIStorage of its cluster and workspace.
func storageOfPullWork(_ context.Context, obj client.Object) []ctrl.Request {
	ws := obj.GetLabels()[hub.WorkspaceLabel]
	if ws == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ws, Name: obj.GetNamespace()}}}
}
