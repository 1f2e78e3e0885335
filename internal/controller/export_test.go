package controller

import (
	"context"

	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// MapClusterEventsToAllWorkspaces makes the routing reconcilers set up after it map every
// ManagedCluster event to every workspace with a cluster-set binding, as before
// workspacesHolding: the baseline the label-flip test and benchmark measure against. undo puts
// the real mapping back.
func MapClusterEventsToAllWorkspaces() (undo func()) {
	prev := routingClusterHandler
	routingClusterHandler = func(r *RoutingReconciler) handler.EventHandler {
		return clusterHandler(func(ctx context.Context, _ ...client.Object) []ctrl.Request {
			var bindings clusterv1beta2.ManagedClusterSetBindingList
			if err := r.List(ctx, &bindings); err != nil {
				return nil
			}
			return workspaceRequests(bindings.Items)
		})
	}
	return func() { routingClusterHandler = prev }
}
