package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
)

// +kubebuilder:rbac:groups=storage.simplyblock.io,resources=storagesitedeployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=storage.simplyblock.io,resources=storagesitedeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=storage.simplyblock.io,resources=storagesitedeployments/finalizers,verbs=update

// Requeue cadence of a StorageSiteDeployment: the site answers through the work's status, which
// is watched, so these only bound how stale a missed change can get. Until it is Online the
// request waits (kube.Wait): looked at again after storageRequeueInProgress, then twice as long
// each time, up to kube.BackoffMax; Online, every storageRequeueOnline.
const (
	storageRequeueInProgress = 15 * time.Second
	storageRequeueOnline     = 2 * time.Minute
	// storageFinalizer lets the reconciler release the work before the request goes.
	storageFinalizer = "storage.simplyblock.io/hub-deploy"
)

// StorageSiteReconciler carries each StorageSiteDeployment to its site in one ManifestWork
// (internal/storagework), when the request's workspace may use the cluster (else it is Pending,
// NotBound), and projects the site's draft, StorageCluster and nodes back into its
// status. It is the hub side of the simplyblock operator's StorageSiteDeployment: run it only on
// a hub where that operator does not run its own (--controllers without storage-site).
//
// The work is sbsd.<namespace>.<name> (storagework.WorkName); one of that name that another
// object owns is never written (the request is Pending, not Delivered, not Ready: NameTaken,
// naming the holder), and the request's work of the legacy name is replaced (migration.go).
//
// Deleting a request deletes its work, whose delete option orphans what it made: the site keeps
// its discovery, draft and storage cluster. The request's finalizer goes once the site's work
// agent confirms (the work is gone), or, when the cluster cannot answer (the orphan policy,
// orphan.go), at once or after OrphanAfter with Deleted=False/Orphaned and a Warning Event.
type StorageSiteReconciler struct {
	client.Client
	// Reader reads works that are not fleet-controller's, which the manager does not cache, and,
	// for a deleted request whose work is left, its ManagedCluster and the cluster's namespace.
	Reader client.Reader
	// Recorder receives the Warning Event of a request that goes without its site's answer; nil
	// records none.
	Recorder events.EventRecorder
	// OrphanAfter bounds how long a deleted request waits for its work on a cluster that is not
	// available; 0 means DefaultOrphanAfter.
	OrphanAfter time.Duration
}

// release deletes a deleted request's works (never another's) and lets the request go once they
// are gone, or when its cluster cannot answer (wayOut.release), without them (letGo).
func (r *StorageSiteReconciler) release(ctx context.Context, d *storagev1alpha2.StorageSiteDeployment, keys ...types.NamespacedName) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(d, storageFinalizer) {
		return ctrl.Result{}, nil
	}
	done, why, wait, err := wayOut{Reader: r.Reader, After: r.OrphanAfter}.release(ctx, r.Client, d, d.Spec.Cluster, storagework.Owner(d.Namespace, d.Name), keys...)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case done:
		return ctrl.Result{}, client.IgnoreNotFound(patchFinalizers(ctx, r.Client, d, kindStorageSite, storageFinalizer, controllerutil.RemoveFinalizer))
	case why == "":
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	msg := fmt.Sprintf("%s: the storage deployment goes without waiting; ManifestWork %s/%s is deleted on the hub but its removal is not confirmed by the site, "+
		"so the discovery, draft %s and storage cluster%s in namespace %s stay on cluster %q (as on every deletion: they are orphaned, never deleted) "+
		"and the site's work agent may still hold them; if the cluster comes back, check them there",
		why, d.Spec.Cluster, keys[0].Name, d.Spec.DraftName, storageClusterName(d), d.Spec.SiteNamespace, d.Spec.Cluster)
	st := d.Status.DeepCopy()
	return letGo(ctx, r.Client, r.Recorder, d, &d.Status, st, &st.Conditions, kindStorageSite, storageFinalizer, msg)
}

// storageClusterName is " <name>" of the storage cluster d's site reported, or "".
func storageClusterName(d *storagev1alpha2.StorageSiteDeployment) string {
	if sc := d.Status.StorageCluster; sc != nil && sc.Name != "" {
		return " " + sc.Name
	}
	return ""
}

// Reconcile delivers one request and reports what its site answered.
func (r *StorageSiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var d storagev1alpha2.StorageSiteDeployment
	if err := r.Get(ctx, req.NamespacedName, &d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	workKey := types.NamespacedName{Namespace: d.Spec.Cluster, Name: storagework.WorkName(d.Namespace, d.Name)}
	legacyKey := types.NamespacedName{Namespace: d.Spec.Cluster, Name: legacyStorageWorkName(d.Namespace, d.Name)}
	if !d.DeletionTimestamp.IsZero() {
		return r.release(ctx, &d, workKey, legacyKey)
	}
	if !controllerutil.ContainsFinalizer(&d, storageFinalizer) {
		if err := patchFinalizers(ctx, r.Client, &d, kindStorageSite, storageFinalizer, controllerutil.AddFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}

	// One status write, at the end, when the reconcile reached an account of the request; Stalled
	// (and Ready following it) from how the reconcile ended.
	patch := kube.BeginStatus(&d, &d.Status)
	report := false
	defer func() {
		if report {
			kube.SetStalled(&d.Status.Conditions, d.Generation, err)
		}
		err = errors.Join(err, patch.Write(ctx, r.Client, report, countStatusWrite(kindStorageSite)))
	}()
	var result ctrl.Result
	result, report, err = r.deliver(ctx, &d, workKey, legacyKey)
	return result, err
}

// deliver writes d's work and sets d.Status from what its site reported; report says whether the
// status is an account of the request to write (false when what it needs could not be read: the
// reconcile is retried).
func (r *StorageSiteReconciler) deliver(ctx context.Context, d *storagev1alpha2.StorageSiteDeployment, workKey, legacyKey types.NamespacedName) (ctrl.Result, bool, error) {
	st, gen := &d.Status, d.Generation
	cluster := managedClusterMetadata()
	err := r.Get(ctx, types.NamespacedName{Name: d.Spec.Cluster}, cluster)
	if apierrors.IsNotFound(err) {
		st.ObservedGeneration, st.Phase = gen, storagev1alpha2.PhasePending
		st.Message = fmt.Sprintf("no ManagedCluster %q on the hub: join the site's cluster, or fix spec.cluster (which means a new request)", d.Spec.Cluster)
		setCondition(&st.Conditions, gen, storagev1alpha2.DeliveredCondition, false, storagev1alpha2.ReasonClusterNotFound, st.Message)
		return ctrl.Result{}, true, kube.Wait(storageRequeueInProgress, storagev1alpha2.ReasonClusterNotFound, errors.New(st.Message))
	}
	if err != nil {
		return ctrl.Result{}, false, err
	}
	// A cluster the workspace may not use gets no work; one delivered before it lost the binding
	// is left as it is (the site keeps its storage cluster either way).
	ca, err := clusterAccess(ctx, r.Client, d.Namespace, cluster)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if !ca.Allowed() {
		st.ObservedGeneration, st.Phase, st.Message = gen, storagev1alpha2.PhasePending, ca.NotBound()
		setCondition(&st.Conditions, gen, storagev1alpha2.DeliveredCondition, false, v1alpha1.ReasonNotBound, st.Message)
		setCondition(&st.Conditions, gen, storagev1alpha2.ReadyCondition, false, v1alpha1.ReasonNotBound, st.Message)
		return ctrl.Result{}, true, nil
	}

	// What the site reported: through the work, or, until there is one, through the request's
	// work of the legacy name; never through another's.
	var observed, legacy workv1.ManifestWork
	if err := r.Get(ctx, workKey, &observed); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, false, err
	}
	from := &observed
	if observed.UID == "" {
		if err := r.Get(ctx, legacyKey, &legacy); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, false, err
		}
		from = &legacy
	}
	var report storagework.Report
	if from.UID != "" && checkOwner(from, storagework.Owner(d.Namespace, d.Name)) == nil {
		if report, err = storagework.Read(from); err != nil {
			return ctrl.Result{}, false, err
		}
	}
	request, err := storageRequest(d)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	desired, err := storagework.New(request, report)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	d.Status = *storageStatus(d, report, workKey.Name)
	_, err = applyWork(ctx, r.Client, r.Reader, &observed, desired)
	if tl := tooLarge(err); tl != nil { // a stall: nothing was written, and Stalled says why
		setCondition(&st.Conditions, gen, storagev1alpha2.DeliveredCondition, false, v1alpha1.ReasonWorkTooLarge, tl.Error())
		return ctrl.Result{}, true, kube.Stall(v1alpha1.ReasonWorkTooLarge, tl)
	}
	if taken, ok := nameTaken(err); ok {
		st.WorkName, st.Phase, st.Message = "", storagev1alpha2.PhasePending, taken.Error()
		setCondition(&st.Conditions, gen, storagev1alpha2.DeliveredCondition, false, v1alpha1.ReasonNameTaken, taken.Error())
		setCondition(&st.Conditions, gen, storagev1alpha2.ReadyCondition, false, v1alpha1.ReasonNameTaken, taken.Error())
		return ctrl.Result{}, true, kube.Wait(nameTakenRequeue, v1alpha1.ReasonNameTaken, taken)
	}
	if err == nil {
		// The new work is written: the deployment's work of the legacy name goes (migration.go).
		_, err = deleteOwnedWork(ctx, r.Client, legacyKey, storagework.Owner(d.Namespace, d.Name))
	}
	if err != nil {
		setCondition(&st.Conditions, gen, storagev1alpha2.DeliveredCondition, false, storagev1alpha2.ReasonDeliveryFailed,
			fmt.Sprintf("writing ManifestWork %s: %v", workKey, err))
		return ctrl.Result{}, true, err
	}
	// While the site's cluster does not report, what the hub shows of it is as of then.
	silent, err := reportingOf(ctx, r.Client, d.Spec.Cluster)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	setNotReporting(&st.Conditions, gen, silent, string(st.Phase), st.Message)
	if st.Phase != storagev1alpha2.PhaseOnline {
		return ctrl.Result{}, true, kube.Wait(storageRequeueInProgress, string(st.Phase), errors.New(st.Message))
	}
	return ctrl.Result{RequeueAfter: storageRequeueOnline}, true, nil
}

// storageRequest is what d asks of its site, in the operator's JSON shape.
func storageRequest(d *storagev1alpha2.StorageSiteDeployment) (storagework.Request, error) {
	r := storagework.Request{Namespace: d.Namespace, Name: d.Name, Cluster: d.Spec.Cluster, SiteNamespace: d.Spec.SiteNamespace,
		DraftName: d.Spec.DraftName, Approved: d.Spec.Approved}
	for _, f := range []struct {
		from any
		into *map[string]any
	}{{d.Spec.Discover, &r.Discover}, {d.Spec.Sizing, &r.Sizing}} {
		raw, err := json.Marshal(f.from)
		if err != nil {
			return r, err
		}
		if err := json.Unmarshal(raw, f.into); err != nil {
			return r, err
		}
	}
	return r, nil
}

// storageStatus is d's status from what its site reported: plain inputs, no I/O.
func storageStatus(d *storagev1alpha2.StorageSiteDeployment, rep storagework.Report, work string) *storagev1alpha2.StorageSiteDeploymentStatus {
	st := d.Status.DeepCopy()
	gen := d.Generation
	st.ObservedGeneration, st.WorkName = gen, work
	set := func(t string, ok bool, reason, msg string) { setCondition(&st.Conditions, gen, t, ok, reason, msg) }

	if rep.Delivered {
		set(storagev1alpha2.DeliveredCondition, true, storagev1alpha2.ReasonWorkApplied, fmt.Sprintf("ManifestWork %s/%s is applied on the site", d.Spec.Cluster, work))
	} else {
		set(storagev1alpha2.DeliveredCondition, false, storagev1alpha2.ReasonWorkPending,
			fmt.Sprintf("waiting for the site's work agent to apply ManifestWork %s/%s%s", d.Spec.Cluster, work, suffix(rep.DeliveryMessage)))
	}

	dr := rep.Draft
	st.Draft = nil
	if dr.Exists {
		st.Draft = &storagev1alpha2.DraftStatus{Name: d.Spec.DraftName, Phase: storagev1alpha2.DraftPhase(dr.Phase), Message: dr.Message,
			Approved: dr.Approved, Cluster: dr.Cluster, NodeSets: dr.NodeSets, NodeRefs: dr.NodeRefs, Omitted: dr.Omitted}
	}
	draftFailed := dr.Phase == string(storagev1alpha2.DraftPhaseFailed)
	runFailed := rep.Run.Phase == "Failed"
	hasNodes := len(dr.NodeRefs) > 0
	switch {
	case draftFailed || runFailed:
		set(storagev1alpha2.DiscoveredCondition, false, storagev1alpha2.ReasonDraftFailed, cmp.Or(dr.Message, rep.Run.Message, "the site's discovery failed"))
	case hasNodes:
		msg := fmt.Sprintf("draft %s names %d nodes", d.Spec.DraftName, len(dr.NodeRefs))
		if len(dr.Omitted) > 0 {
			msg += fmt.Sprintf("; not shown on the hub, too large for OCM's status feedback (see status.draft.omitted): %s", strings.Join(dr.Omitted, ", "))
		}
		set(storagev1alpha2.DiscoveredCondition, true, storagev1alpha2.ReasonDraftHasNodes, msg)
	case dr.Exists:
		set(storagev1alpha2.DiscoveredCondition, false, storagev1alpha2.ReasonDraftHasNoNodes, fmt.Sprintf("draft %s names no nodes%s", d.Spec.DraftName, suffix(dr.Message)))
	default:
		set(storagev1alpha2.DiscoveredCondition, false, storagev1alpha2.ReasonWaitingForSite,
			fmt.Sprintf("discovery %s has not written draft %s yet%s", rep.Run.Name, d.Spec.DraftName, suffix(rep.Run.Phase)))
	}
	switch {
	case !d.Spec.Approved:
		set(storagev1alpha2.ApprovedCondition, false, storagev1alpha2.ReasonNotApproved, "spec.approved is false: review status.draft, then approve")
	case dr.Approved:
		set(storagev1alpha2.ApprovedCondition, true, storagev1alpha2.ReasonDraftApproved, fmt.Sprintf("draft %s is approved on the site", d.Spec.DraftName))
	default:
		set(storagev1alpha2.ApprovedCondition, false, storagev1alpha2.ReasonApprovalDelivered, "the approval is delivered once the draft names nodes; waiting for the site's draft to carry it")
	}

	s := rep.Storage
	st.StorageCluster = nil
	if s.Name != "" {
		st.StorageCluster = &storagev1alpha2.StorageClusterStatus{Name: s.Name, UUID: s.UUID, Phase: s.Phase, Pool: s.Pool, Nodes: s.Nodes}
	}
	online := s.Phase == "Online"
	switch {
	case online:
		set(storagev1alpha2.ReadyCondition, true, storagev1alpha2.ReasonOnline, fmt.Sprintf("storage cluster %s (%s) is Online with %d nodes", s.Name, s.UUID, len(s.Nodes)))
	case s.Phase == "Failed":
		set(storagev1alpha2.ReadyCondition, false, storagev1alpha2.ReasonStorageClusterFailed, fmt.Sprintf("storage cluster %s failed", s.Name))
	case draftFailed || runFailed:
		set(storagev1alpha2.ReadyCondition, false, storagev1alpha2.ReasonDraftFailed, "the site's draft failed")
	case d.Spec.Approved && hasNodes:
		set(storagev1alpha2.ReadyCondition, false, storagev1alpha2.ReasonDeploying, fmt.Sprintf("the approved draft is expanding (%s)", cmp.Or(dr.Phase, "waiting")))
	default:
		set(storagev1alpha2.ReadyCondition, false, storagev1alpha2.ReasonWaitingForSite, "no storage cluster yet")
	}

	switch {
	case draftFailed || runFailed || s.Phase == "Failed":
		st.Phase = storagev1alpha2.PhaseFailed
		st.Message = cmp.Or(dr.Message, rep.Run.Message, "the site reported a failure")
	case online:
		st.Phase, st.Message = storagev1alpha2.PhaseOnline, fmt.Sprintf("storage cluster %s is Online: uuid %s, pool %s", s.Name, s.UUID, s.Pool)
	case d.Spec.Approved && hasNodes:
		st.Phase, st.Message = storagev1alpha2.PhaseDeploying, fmt.Sprintf("draft %s is approved and expanding on the site", d.Spec.DraftName)
	case hasNodes:
		st.Phase, st.Message = storagev1alpha2.PhaseDrafted, fmt.Sprintf("draft %s names %d nodes: review status.draft, then set approved", d.Spec.DraftName, len(dr.NodeRefs))
	case rep.Delivered:
		st.Phase, st.Message = storagev1alpha2.PhaseDiscovering, fmt.Sprintf("discovery %s runs on the site%s", rep.Run.Name, suffix(rep.Run.Phase))
	default:
		st.Phase, st.Message = storagev1alpha2.PhasePending, "waiting for the site's work agent to apply the request"
	}
	return st
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// SetupWithManager registers the reconciler: a request is reconciled on its own changes (its
// status included: statusChanged), on any change of its work, status included, on changes of its workspace's access, and when its
// cluster starts or stops reporting (availabilityChanged).
func (r *StorageSiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := newController(mgr, "storage-site").
		For(&storagev1alpha2.StorageSiteDeployment{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, resync, deleting,
			statusChanged(func(d *storagev1alpha2.StorageSiteDeployment) any { return &d.Status })))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(deploymentOfWork), builder.WithPredicates(component(storagework.Component))).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
			return r.deploymentsNaming(ctx, "", obj.GetName())
		}), builder.WithPredicates(availabilityChanged))
	return build(watchAccess(b, r.Client, r.deploymentsNaming, true), r)
}

// deploymentsNaming maps a change of access to the requests of ns ("" for all) naming cluster
// ("" for any).
func (r *StorageSiteReconciler) deploymentsNaming(ctx context.Context, ns, cluster string) []ctrl.Request {
	var list storagev1alpha2.StorageSiteDeploymentList
	if err := r.List(ctx, &list, inNamespace(ns)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing StorageSiteDeployments")
		return nil
	}
	return requestsOf(list.Items, func(d *storagev1alpha2.StorageSiteDeployment) bool { return cluster == "" || d.Spec.Cluster == cluster })
}

// deploymentOfWork maps a storage work to its StorageSiteDeployment.
func deploymentOfWork(_ context.Context, obj client.Object) []ctrl.Request {
	l := obj.GetLabels()
	if l[storagework.DeploymentNameLabel] == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: l[storagework.DeploymentNamespaceLabel], Name: l[storagework.DeploymentNameLabel]}}}
}
