package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/replication"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,resources=clusterocistorages,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=ocireplications,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=ocireplications/status,verbs=get;update;patch

// kindReplication is OCIReplication, for the writes metric.
const kindReplication = "ocireplication"

// ReplicationReconciler measures the replication lag of each registry of a workspace from what
// its clusters report about their pulls, which the pull-status reconciler lists on their
// ClusterOCIStorages, and writes it on one OCIReplication per registry, named after it
// (internal/replication has the rules). A request is a workspace: its namespace, no name.
//
// An OCIReplication is created once a cluster asked its registry for an artifact, and its status
// keeps the first times it observed, so that it writes nothing while the reports stay the same;
// it is written again when an artifact leaves the window, without a report. It is deleted when
// its registry is in no cluster's chain of the workspace any more (the routes stopped naming it,
// or were deleted, or no cluster matches them), and only created while the registry is in one.
// A registry Secret deleted while a route still names it stays in the chains delivered before
// (the routing reconciler keeps the last good chain), so clusters still pull through it and its
// OCIReplication stays until the route stops naming it.
type ReplicationReconciler struct {
	client.Client
	// Window is how far back pushed artifacts count; 0 means replication.DefaultWindow.
	Window time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Reconcile measures the registries of one workspace.
func (r *ReplicationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ws := req.Namespace
	var storages v1alpha1.ClusterOCIStorageList
	if err := r.List(ctx, &storages, client.InNamespace(ws)); err != nil {
		return ctrl.Result{}, err
	}
	var reps v1alpha1.OCIReplicationList
	if err := r.List(ctx, &reps, client.InNamespace(ws)); err != nil {
		return ctrl.Result{}, err
	}
	pulls := replicationPulls(storages.Items)
	existing := map[string]*v1alpha1.OCIReplication{}
	inChain := chainRegistries(storages.Items)
	registries := slices.DeleteFunc(replication.Registries(pulls), func(reg string) bool { return !inChain[reg] })
	for i := range reps.Items {
		existing[reps.Items[i].Name] = &reps.Items[i]
		registries = append(registries, reps.Items[i].Name)
	}
	slices.Sort(registries)
	window := cmp0(r.Window, replication.DefaultWindow)
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	var next time.Time
	var errs []error
	for _, reg := range slices.Compact(registries) {
		obj := existing[reg]
		if !inChain[reg] {
			errs = append(errs, r.deleteReplication(ctx, obj))
			continue
		}
		var prev v1alpha1.OCIReplicationStatus
		if obj != nil {
			prev = obj.Status
		}
		st, at := replication.Observe(reg, prev, pulls, now(), window)
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
		if obj == nil {
			if len(st.Artifacts) == 0 {
				continue // no cluster asked it for anything: no figures to show
			}
			obj = &v1alpha1.OCIReplication{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: reg, Labels: map[string]string{hub.ManagedByLabel: hub.ControllerManager}}}
			if err := r.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, err)
				continue
			} else if err != nil {
				continue // the cache is behind: its event brings the object back
			}
		}
		patch := kube.BeginStatus(obj, &obj.Status)
		obj.Status = st
		errs = append(errs, patch.Write(ctx, r.Client, true, countStatusWrite(kindReplication)))
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(time.Until(next), time.Second)}, nil
}

// replicationPulls are the pulls the ClusterOCIStorages of a workspace list, each with its
// cluster's chain.
func replicationPulls(storages []v1alpha1.ClusterOCIStorage) []replication.Pull {
	var pulls []replication.Pull
	for i := range storages {
		s := &storages[i]
		for _, cp := range s.Status.Pulls {
			p := pullwork.FromListed(s.Name, cp)
			pulls = append(pulls, replication.Pull{Cluster: s.Name, Chain: s.Status.Chain, Repository: p.Spec.Repository, Status: p.Status})
		}
	}
	return pulls
}

// chainRegistries are the registries in some chain of storages.
func chainRegistries(storages []v1alpha1.ClusterOCIStorage) map[string]bool {
	in := map[string]bool{}
	for i := range storages {
		for _, reg := range storages[i].Status.Chain {
			in[reg] = true
		}
	}
	return in
}

// deleteReplication deletes obj, the one read (a newer one of the same name is left alone).
func (r *ReplicationReconciler) deleteReplication(ctx context.Context, obj *v1alpha1.OCIReplication) error {
	Writes.WithLabelValues(kindReplication, verbDelete).Inc()
	return client.IgnoreNotFound(r.Delete(ctx, obj, client.Preconditions{UID: &obj.UID}))
}

func cmp0(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// SetupWithManager registers the reconciler: a workspace is measured whenever one of its
// ClusterOCIStorages changes (their pulls and chains come with their status) and when one of its
// OCIReplications is deleted or resynced.
func (r *ReplicationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toWorkspace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace()}}}
	})
	return build(newController(mgr, "replication").
		Watches(&v1alpha1.ClusterOCIStorage{}, toWorkspace).
		Watches(&v1alpha1.OCIReplication{}, toWorkspace, builder.WithPredicates(predicate.Or[client.Object](predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false }, // its own status writes
		}, resync))),
		r)
}
