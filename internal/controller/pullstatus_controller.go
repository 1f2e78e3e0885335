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
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
)

// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=clusterocistorages/status,verbs=get;patch

// PullStatusReconciler projects what clusters report about their pulls onto their
// ClusterOCIStorages: the agents' OCIPull statuses come back through the status feedback of the
// pull works (internal/pullwork) in each cluster's namespace, and each ClusterOCIStorage gets
// its cluster's counts by state, the active registry and the last pull. A request is a
// ClusterOCIStorage: the workspace namespace and the cluster's name.
//
// It writes only those fields, with a merge patch, so that it and the routing reconciler, which
// writes the rest of the status, never undo each other.
type PullStatusReconciler struct {
	client.Client
}

// Reconcile summarises the pull works of one cluster in one workspace.
func (r *PullStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obs v1alpha1.ClusterOCIStorage
	if err := r.Get(ctx, req.NamespacedName, &obs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // the cluster has no route: nothing to show
	}
	var works workv1.ManifestWorkList
	if err := r.List(ctx, &works, client.InNamespace(req.Name), client.MatchingLabels{hub.WorkspaceLabel: req.Namespace}); err != nil {
		return ctrl.Result{}, err
	}
	var pulls []pullwork.Pull
	for i := range works.Items {
		if !carriesPulls(&works.Items[i]) {
			continue
		}
		p, err := pullwork.Read(&works.Items[i])
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "skipping a pull work that does not decode", "work", works.Items[i].Name)
			continue
		}
		pulls = append(pulls, p...)
	}
	s := pullwork.Summarize(pulls)
	desired := obs.DeepCopy()
	st := &desired.Status
	st.Active, st.Pulled, st.Waiting, st.Failed, st.Unknown, st.LastPull = s.Active, s.Pulled, s.Waiting, s.Failed, s.Unknown, s.LastPull
	st.Pulls, st.PullsOmitted = pullwork.Listed(pulls, maxListedPulls)
	if equality.Semantic.DeepEqual(obs.Status, desired.Status) {
		return ctrl.Result{}, nil
	}
	Writes.WithLabelValues(kindStorage, verbStatus).Inc()
	return ctrl.Result{}, r.Status().Patch(ctx, desired, client.MergeFrom(&obs))
}

// maxListedPulls bounds ClusterOCIStorage.status.pulls (its CRD's maxItems).
const maxListedPulls = 100

// carriesPulls selects the works whose OCIPulls a ClusterOCIStorage shows: pull works and apps'
// works, which pull the chart.
func carriesPulls(o client.Object) bool {
	c := o.GetLabels()[hub.ComponentLabel]
	return c == pullwork.Component || c == appwork.Component
}

// SetupWithManager registers the reconciler: a ClusterOCIStorage is summarised when it is created
// and whenever a work carrying pulls of its cluster and workspace changes, status included.
func (r *PullStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return build(newController(mgr, "pull-status").
		For(&v1alpha1.ClusterOCIStorage{}, builder.WithPredicates(predicate.Or[client.Object](predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false }, // status writes, its own included
		}, resync))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(storageOfPullWork), builder.WithPredicates(predicate.NewPredicateFuncs(carriesPulls))),
		r)
}

// storageOfPullWork maps a pull work to the ClusterOCIStorage of its cluster and workspace.
func storageOfPullWork(_ context.Context, obj client.Object) []ctrl.Request {
	ws := obj.GetLabels()[hub.WorkspaceLabel]
	if ws == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ws, Name: obj.GetNamespace()}}}
}

// component selects the works of one component.
func component(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[hub.ComponentLabel] == name })
}
