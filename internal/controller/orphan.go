package controller

import (
	"cmp"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// The orphan policy, one for every finalizer that waits for a cluster: a deleted object whose
// ManifestWork is left waits for its cluster to confirm that the work is gone, unless the cluster
// cannot answer (wayOut.unanswered); then it goes without, saying what may be left on the cluster
// (letGo). A missing ManifestWork or ManagedCluster kind on the hub counts as gone (absent).

// DefaultOrphanAfter is how long a deleted app or storage deployment waits for its work to go
// while its cluster exists but is not available, before it goes without it (Options.OrphanAfter).
const DefaultOrphanAfter = 2 * time.Minute

// requeueDeleting bounds how late a deleted object waiting for its work looks again: the work's
// deletion is watched, this covers the cluster's availability and the bound.
const requeueDeleting = 5 * time.Second

// absent is true when err says an object is gone: not found, or its kind not served by the hub
// (a CRD removed: meta.IsNoMatchError), so that no finalizer waits on a kind the hub lacks.
func absent(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

// ignoreAbsent is err unless absent(err).
func ignoreAbsent(err error) error {
	if absent(err) {
		return nil
	}
	return err
}

// noWorkKind is why a deleted object goes when the hub serves no ManifestWork.
const noWorkKind = "the hub has no ManifestWork kind (the work CRD is missing), so no work of it can remain on the hub"

// wayOut decides when a deleted object whose work is left on cluster may stop waiting for it.
type wayOut struct {
	// Reader reads the ManagedCluster and the cluster's namespace uncached.
	Reader client.Reader
	// After bounds the wait on a cluster that exists but is not available; 0 means
	// DefaultOrphanAfter.
	After time.Duration
}

// release deletes owner's works of keys (never another's, deleteOwnedWork) for a deleted obj
// whose works live in cluster's namespace, and says whether obj's finalizer may go: done when
// none is left; else why it goes without its cluster's confirmation (unanswered, or no
// ManifestWork kind on the hub), or "" while it waits, and how soon it looks again.
func (w wayOut) release(ctx context.Context, c client.Client, obj client.Object, cluster, owner string, keys ...types.NamespacedName) (done bool, why string, wait time.Duration, err error) {
	left := false
	for _, key := range keys {
		owned, err := deleteOwnedWork(ctx, c, key, owner)
		if meta.IsNoMatchError(err) {
			return false, noWorkKind, 0, nil
		}
		if err != nil {
			return false, "", 0, err
		}
		left = left || owned
	}
	if !left {
		return true, "", 0, nil
	}
	why, wait, err = w.unanswered(ctx, obj, cluster)
	return false, why, wait, err
}

// unanswered says why cluster will not confirm that obj's work is gone: obj carries
// hub.OrphanOnDeleteAnnotation, the ManagedCluster is gone (or its kind), its namespace is gone or
// terminating, or it has not been available since After past obj's deletion. "" while obj waits,
// and how soon it looks again.
func (w wayOut) unanswered(ctx context.Context, obj client.Object, cluster string) (string, time.Duration, error) {
	if obj.GetAnnotations()[hub.OrphanOnDeleteAnnotation] == "true" {
		return fmt.Sprintf("it was deleted with annotation %s=true (the provider's force_destroy)", hub.OrphanOnDeleteAnnotation), 0, nil
	}
	var mc clusterv1.ManagedCluster
	err := w.Reader.Get(ctx, types.NamespacedName{Name: cluster}, &mc)
	if absent(err) {
		return fmt.Sprintf("ManagedCluster %q is gone", cluster), 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	var ns corev1.Namespace
	err = w.Reader.Get(ctx, types.NamespacedName{Name: cluster}, &ns)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the namespace %q of cluster %q is gone", cluster, cluster), 0, nil
	case err != nil:
		return "", 0, err
	case !ns.DeletionTimestamp.IsZero():
		return fmt.Sprintf("the namespace %q of cluster %q is terminating", cluster, cluster), 0, nil
	}
	if meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
		return "", requeueDeleting, nil
	}
	bound := cmp.Or(w.After, DefaultOrphanAfter)
	waited := time.Since(obj.GetDeletionTimestamp().Time)
	if waited >= bound {
		return fmt.Sprintf("ManagedCluster %q is not available (condition %s not True) and the work was not gone %v after the deletion",
			cluster, clusterv1.ManagedClusterConditionAvailable, bound), 0, nil
	}
	return "", min(requeueDeleting, bound-waited), nil
}

// letGo lets a deleted object go without its cluster's confirmation: Deleted=False/Orphaned with
// msg (what may be left on the cluster) in its status (desired, a copy of current holding
// conditions), a Warning Event with msg, then its finalizer dropped.
func letGo[S any](ctx context.Context, c client.Client, rec events.EventRecorder, obj client.Object, current, desired *S,
	conditions *[]metav1.Condition, kind, finalizer, msg string) (ctrl.Result, error) {
	setCondition(conditions, obj.GetGeneration(), v1alpha1.DeletedCondition, false, v1alpha1.ReasonOrphaned, msg)
	if err := writeStatus(ctx, c, obj, current, desired, kind); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rec != nil {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonOrphaned, "Delete", "%s", msg)
	}
	return ctrl.Result{}, client.IgnoreNotFound(patchFinalizers(ctx, c, obj, kind, finalizer, controllerutil.RemoveFinalizer))
}
