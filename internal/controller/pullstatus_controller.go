package controller

import (
	"context"

	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// its cluster's counts by state, the active registry and the last pull. It is a storage
// projection (storage_projection.go): it writes only those fields.
type PullStatusReconciler struct {
	client.Client
}

// Reconcile summarises the pull works of one cluster in one workspace.
func (r *PullStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return projectStorage(ctx, r.Client, req, func(_ *v1alpha1.ClusterOCIStorage, st *v1alpha1.ClusterOCIStorageStatus) error {
		var works workv1.ManifestWorkList
		if err := r.List(ctx, &works, client.InNamespace(req.Name), client.MatchingLabels{hub.WorkspaceLabel: req.Namespace}); err != nil {
			return err
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
		st.Active, st.Pulled, st.Waiting, st.Failed, st.Unknown, st.LastPull = s.Active, s.Pulled, s.Waiting, s.Failed, s.Unknown, s.LastPull
		st.Pulls, st.PullsOmitted = pullwork.Listed(pulls, maxListedPulls)
		return nil
	})
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
	return build(storageProjection(mgr, "pull-status", nil, predicate.NewPredicateFuncs(carriesPulls)), r)
}

// component selects the works of one component.
func component(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[hub.ComponentLabel] == name })
}
