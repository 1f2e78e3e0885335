package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetapps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetapps/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetcharts,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetcharts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=fleetclusterjoins,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;delete

// What the apps reconciler writes, for the writes metric.
const (
	kindApp   = "fleetapp"
	kindChart = "fleetchart"
)

// appFinalizer lets the reconciler delete the app's work, and so uninstall its release, before
// the app goes.
const appFinalizer = "fleet.umkim.io/app"

// Reasons of a FleetApp's conditions (Delivered, Ready) besides its phases.
const (
	reasonChartNotFound        = "ChartNotFound"
	reasonValuesSecretNotFound = "ValuesSecretNotFound"
	reasonWorkApplied          = v1alpha1.ReasonWorkApplied
	reasonWorkPending          = v1alpha1.ReasonWorkPending
)

// Requeue cadence of apps: what the cluster reports comes through the watched work, so these
// only bound how late an app sees what no watch shows: a change of its values Secret (Secrets
// other than registry ones are not cached), or a work being deleted. A missing values Secret is
// a wait (kube.Wait): looked for again after appWaitValues, then twice as long each time, up to
// kube.BackoffMax.
const (
	appRequeueValues = 5 * time.Minute
	appWaitValues    = 5 * time.Second
)

// appChartIndex indexes FleetApps by <namespace>/<spec.chart>.
const appChartIndex = "appChart"

// AppReconciler delivers each FleetApp to its cluster in one ManifestWork (internal/appwork),
// when the app's workspace may use the cluster (else the app is Pending, NotBound) and a
// FleetClusterJoin joins the cluster to a site (fleetrules.JoinOf, of any workspace that may use
// the cluster; else the app is Pending, NotJoined),
// reports the pull's and the release's state from the work's feedback, and keeps each FleetChart's
// status (the digest a cluster pulled, the number of apps naming it).
//
// The work is app.<workspace>.<app> (appwork.NamesOf), or the app's work of the legacy name,
// which it adopts (migration.go). A work of that name that another object owns is never written:
// the app is Pending, not Delivered and not Ready, with reason NameTaken naming the holder.
//
// Deleting an app deletes its work in the foreground; OCM's work agent then deletes the
// FleetRelease on the cluster, whose finalizer has the agent uninstall the release first; the
// app's finalizer goes once the work is gone. Nothing waits forever: when the cluster cannot
// answer (its ManagedCluster or its namespace gone or going, no ManifestWork kind on the hub, the
// cluster not available for OrphanAfter, or the app deleted with hub.OrphanOnDeleteAnnotation)
// the app goes without it (orphan.go), Deleted=False/Orphaned and a
// Warning Event naming what may be left on the cluster.
// Deleting a chart leaves its apps installed.
type AppReconciler struct {
	client.Client
	// Reader reads values Secrets, which the manager's cache (registry Secrets only) does not
	// hold, works that are not fleet-controller's (the cache holds only its own), and, for a
	// deleted app whose work is left, its ManagedCluster and the cluster's namespace.
	Reader client.Reader
	// Recorder receives the Warning Event of an app that goes without its work; nil records none.
	Recorder events.EventRecorder
	// OrphanAfter bounds how long a deleted app waits for its work on a cluster that is not
	// available; 0 means DefaultOrphanAfter.
	OrphanAfter time.Duration
}

// Reconcile delivers one app and reports what its cluster answered.
func (r *AppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var app v1alpha1.FleetApp
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return r.uninstall(ctx, &app)
	}
	if !controllerutil.ContainsFinalizer(&app, appFinalizer) {
		if err := patchFinalizers(ctx, r.Client, &app, kindApp, appFinalizer, controllerutil.AddFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}

	// One status write, at the end, when the reconcile reached an account of the app; Stalled
	// (and Ready following it) from how the reconcile ended.
	patch := kube.BeginStatus(&app, &app.Status)
	report := false
	defer func() {
		if report {
			kube.SetStalled(&app.Status.Conditions, app.Generation, err)
		}
		err = errors.Join(err, patch.Write(ctx, r.Client, report, countStatusWrite(kindApp)))
	}()
	var result ctrl.Result
	result, report, err = r.deliver(ctx, &app)
	return result, err
}

// deliver writes app's work and sets app.Status from what its cluster reported; report says
// whether the status is an account of the app to write (false when what it needs could not be
// read: the reconcile is retried).
func (r *AppReconciler) deliver(ctx context.Context, app *v1alpha1.FleetApp) (ctrl.Result, bool, error) {
	var result ctrl.Result
	st := &app.Status
	st.ObservedGeneration = app.Generation
	gen := app.Generation
	if app.Spec.ValuesSecretRef != nil {
		result.RequeueAfter = appRequeueValues
	}
	// A missing chart or Secret leaves the work as it is: the release stays installed.
	var chart v1alpha1.FleetChart
	err := r.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Spec.Chart}, &chart)
	if apierrors.IsNotFound(err) {
		st.ChartGeneration = 0
		return pending(result, st, gen, reasonChartNotFound, fmt.Sprintf("no FleetChart %s/%s: create it, or fix spec.chart", app.Namespace, app.Spec.Chart))
	}
	if err != nil {
		return ctrl.Result{}, false, err
	}
	st.ChartGeneration = chart.Generation
	var values *corev1.Secret
	if ref := app.Spec.ValuesSecretRef; ref != nil {
		values = &corev1.Secret{}
		err := r.Reader.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: ref.Name}, values)
		if apierrors.IsNotFound(err) {
			return waitPending(appWaitValues, result, st, gen, reasonValuesSecretNotFound, fmt.Sprintf("no Secret %s/%s: create it with key %q, or fix spec.valuesSecretRef", app.Namespace, ref.Name, ref.Key))
		}
		if err != nil {
			return ctrl.Result{}, false, err
		}
		if _, ok := values.Data[ref.Key]; !ok {
			return waitPending(appWaitValues, result, st, gen, reasonValuesSecretNotFound, fmt.Sprintf("Secret %s/%s has no key %q: add it, or fix spec.valuesSecretRef", app.Namespace, ref.Name, ref.Key))
		}
	}
	cluster, err := getClusterMetadata(ctx, r.Client, app.Spec.Cluster)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if cluster == nil {
		msg := fmt.Sprintf("no ManagedCluster %q on the hub: join the cluster, or replace the app with one naming a joined cluster", app.Spec.Cluster)
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonClusterNotFound, msg)
		return pending(result, st, gen, v1alpha1.ReasonClusterNotFound, msg)
	}
	// A cluster the workspace may not use gets no work; one delivered before it lost the binding
	// is left as it is, like a missing chart leaves it, so that the release stays installed.
	ca, err := clusterAccess(ctx, r.Client, app.Namespace, cluster)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if !ca.Allowed() {
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonNotBound, ca.NotBound())
		return pending(result, st, gen, v1alpha1.ReasonNotBound, ca.NotBound())
	}

	// A cluster that no join joins to a site gets no work yet: the app waits, as the plan says.
	// One delivered before its join went is left as it is, like an unbound one.
	join, err := joinOfCluster(ctx, r.Client, app.Spec.Cluster)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if join == nil {
		msg := fmt.Sprintf("cluster %q is not joined to a site: no FleetClusterJoin names it; create one in workspace %s (fleet_cluster_join) naming it, and the app is delivered once it is",
			app.Spec.Cluster, app.Namespace)
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonNotJoined, msg)
		return pending(result, st, gen, v1alpha1.ReasonNotJoined, msg)
	}

	names, observed, err := r.work(ctx, app)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	workKey := types.NamespacedName{Namespace: app.Spec.Cluster, Name: names.Work}
	desired, err := appwork.New(app, &chart, values, names)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	current, err := applyWork(ctx, r.Client, r.Reader, observed, desired, appParts(app, values)...)
	if tl := tooLarge(err); tl != nil { // a stall: nothing was written, and Stalled says why
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonWorkTooLarge, tl.Error())
		result, report, _ := pending(result, st, gen, v1alpha1.ReasonWorkTooLarge, tl.Error())
		if app.Spec.ValuesSecretRef != nil { // no watch shows the Secret shrink: a wait, not a stall
			return result, report, kube.Wait(appRequeueValues, v1alpha1.ReasonWorkTooLarge, tl)
		}
		return result, report, kube.Stall(v1alpha1.ReasonWorkTooLarge, tl)
	}
	if taken, ok := nameTaken(err); ok {
		st.WorkName = ""
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonNameTaken, taken.Error())
		return waitPending(nameTakenRequeue, result, st, gen, v1alpha1.ReasonNameTaken, taken.Error())
	}
	if err != nil {
		msg := fmt.Sprintf("writing ManifestWork %s: %v", workKey, err)
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonDeliveryFailed, msg)
		return ctrl.Result{}, true, err
	}
	rep, err := appwork.Read(current)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	appStatus(st, gen, workKey, rep)
	silent, err := reportingOf(ctx, r.Client, app.Spec.Cluster)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	setNotReporting(&st.Conditions, gen, silent, string(st.Phase), st.Message)
	return result, true, nil
}

// waitPending is pending waited on (kube.Wait): the app is looked at again after after, then
// with back-off, until what it waits for appears.
func waitPending(after time.Duration, result ctrl.Result, st *v1alpha1.FleetAppStatus, gen int64, reason, msg string) (ctrl.Result, bool, error) {
	result, report, _ := pending(result, st, gen, reason, msg)
	return result, report, kube.Wait(after, reason, errors.New(msg))
}

// pending sets the status of an app that waits for reason (msg says what to do): Pending, not
// Ready; the status is to be written.
func pending(result ctrl.Result, st *v1alpha1.FleetAppStatus, gen int64, reason, msg string) (ctrl.Result, bool, error) {
	st.Phase, st.Message = v1alpha1.AppPending, msg
	setCondition(&st.Conditions, gen, v1alpha1.ReadyCondition, false, reason, msg)
	return result, true, nil
}

// appParts are the inputs of an app's work a person can make smaller: its values and its values
// Secret's key.
func appParts(app *v1alpha1.FleetApp, values *corev1.Secret) []work.Part {
	var parts []work.Part
	if app.Spec.Values != nil {
		parts = append(parts, work.Part{What: "the app's spec.values", Size: len(app.Spec.Values.Raw)})
	}
	if ref := app.Spec.ValuesSecretRef; ref != nil && values != nil {
		parts = append(parts, work.Part{What: fmt.Sprintf("key %q of values Secret %s/%s", ref.Key, app.Namespace, ref.Name), Size: len(values.Data[ref.Key])})
	}
	return parts
}

// work is the names of app's work and the work of that name as the cache has it (no UID when
// there is none): the legacy names while a work of the legacy name is the app's (adopted, see
// migration.go), else appwork.NamesOf.
func (r *AppReconciler) work(ctx context.Context, app *v1alpha1.FleetApp) (appwork.Names, *workv1.ManifestWork, error) {
	legacy := legacyAppNames(app)
	var w workv1.ManifestWork
	err := r.Get(ctx, types.NamespacedName{Namespace: app.Spec.Cluster, Name: legacy.Work}, &w)
	switch {
	case err == nil && checkOwner(&w, appwork.Owner(app)) == nil:
		return legacy, &w, nil
	case client.IgnoreNotFound(err) != nil:
		return legacy, nil, err
	}
	names := appwork.NamesOf(app)
	w = workv1.ManifestWork{}
	err = r.Get(ctx, types.NamespacedName{Namespace: app.Spec.Cluster, Name: names.Work}, &w)
	return names, &w, client.IgnoreNotFound(err)
}

// uninstall deletes the app's works (the injective one and an adopted legacy one, never
// another's) and waits until they are gone (the release uninstalled on the cluster), then lets
// the app go; or, when the cluster cannot answer (wayOut.release), lets it go without (letGo).
func (r *AppReconciler) uninstall(ctx context.Context, app *v1alpha1.FleetApp) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(app, appFinalizer) {
		return ctrl.Result{}, nil
	}
	done, why, wait, err := wayOut{Reader: r.Reader, After: r.OrphanAfter}.release(ctx, r.Client, app, app.Spec.Cluster, appwork.Owner(app),
		types.NamespacedName{Namespace: app.Spec.Cluster, Name: appwork.NamesOf(app).Work},
		types.NamespacedName{Namespace: app.Spec.Cluster, Name: legacyAppNames(app).Work})
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case done:
		return ctrl.Result{}, client.IgnoreNotFound(patchFinalizers(ctx, r.Client, app, kindApp, appFinalizer, controllerutil.RemoveFinalizer))
	case why != "":
		return r.orphan(ctx, app, why)
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// orphan lets a deleted app go without its cluster confirming that its work is gone (why),
// naming the release and the work that may be left on the cluster.
func (r *AppReconciler) orphan(ctx context.Context, app *v1alpha1.FleetApp, why string) (ctrl.Result, error) {
	msg := fmt.Sprintf("%s: the app goes without waiting; Helm release %s in namespace %s and what ManifestWork %s/%s delivered may be left on cluster %q, remove them there if the cluster comes back",
		why, app.ReleaseName(), app.Spec.Namespace, app.Spec.Cluster, cmp.Or(app.Status.WorkName, appwork.NamesOf(app).Work), app.Spec.Cluster)
	st := app.Status.DeepCopy()
	return letGo(ctx, r.Client, r.Recorder, app, &app.Status, st, &st.Conditions, kindApp, appFinalizer, msg)
}

// appStatus sets st from what the app's cluster reported through work: plain inputs, no I/O.
func appStatus(st *v1alpha1.FleetAppStatus, gen int64, work types.NamespacedName, rep appwork.Report) {
	st.WorkName = work.Name
	if rep.Delivered {
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, true, reasonWorkApplied, fmt.Sprintf("ManifestWork %s is applied on the cluster", work))
	} else {
		setCondition(&st.Conditions, gen, v1alpha1.DeliveredCondition, false, reasonWorkPending,
			fmt.Sprintf("waiting for the cluster's work agent to apply ManifestWork %s%s", work, suffix(rep.DeliveryMessage)))
	}
	pull, rel := rep.Pull, rep.Release
	ps := pull.Status
	st.Registry, st.Reason, st.Attempts, st.NextRetry = ps.Registry, ps.Reason, ps.Attempts, ps.NextRetry
	if pull.State() == string(v1alpha1.OCIPullPulled) {
		st.Reason, st.NextRetry = "", nil
	}
	if rel.Reported {
		st.Revision = rel.Status.Revision
	}
	// Drift is the agent's finding for the release this generation asks for, or none known.
	st.Drift = nil
	if rel.Fresh && rel.Status.Drift != nil {
		st.Drift = rel.Status.Drift.DeepCopy()
	}
	st.Digest = cmp.Or(ps.Digest, rel.Status.Digest)

	switch {
	case pull.State() == string(v1alpha1.OCIPullFailed):
		st.Phase, st.Message = v1alpha1.AppFailed, fmt.Sprintf("pulling %s failed: %s", pull.Artifact(), cmp.Or(ps.Message, ps.Reason))
	case rel.Phase() == string(v1alpha1.ReleaseOwnedElsewhere):
		st.Phase, st.Message = v1alpha1.AppOwnedElsewhere, "the release is left untouched: "+rel.Status.Message
	case rel.Phase() == string(v1alpha1.ReleaseFailed):
		st.Phase, st.Message = v1alpha1.AppFailed, "the release failed: "+rel.Status.Message
	case pull.State() == pullwork.Unknown:
		st.Phase, st.Message = v1alpha1.AppPending, "waiting for the cluster to report the pull of "+pull.Artifact()
	case pull.State() == string(v1alpha1.OCIPullWaitingForArtifact):
		st.Phase, st.Message = v1alpha1.AppWaitingForArtifact, fmt.Sprintf("%s lacks %s; the pull retries%s", cmp.Or(ps.Registry, "the chain"), pull.Artifact(), suffix(ps.Message))
	case pull.State() != string(v1alpha1.OCIPullPulled):
		st.Phase, st.Message = v1alpha1.AppPulling, fmt.Sprintf("pulling %s (%s)", pull.Artifact(), pull.State())
	case rel.Phase() == string(v1alpha1.ReleaseDeployed) && (rel.Status.Digest == "" || rel.Status.Digest == ps.Digest):
		st.Phase, st.Message = v1alpha1.AppDeployed, fmt.Sprintf("release %s revision %d is deployed%s", rel.Status.Chart, rel.Status.Revision, suffix(rel.Status.Message))
	default:
		st.Phase, st.Message = v1alpha1.AppInstalling, fmt.Sprintf("%s is pulled from %s; Helm installs it%s", pull.Artifact(), ps.Registry, suffix(rel.Status.Message))
	}
	setCondition(&st.Conditions, gen, v1alpha1.ReadyCondition, st.Phase == v1alpha1.AppDeployed, string(st.Phase), st.Message)
}

// ChartStatusReconciler keeps each FleetChart's status: the apps naming it and the digest one of
// them pulled. It runs with the apps reconciler.
type ChartStatusReconciler struct {
	client.Client
}

// Reconcile counts one chart's apps.
func (r *ChartStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var chart v1alpha1.FleetChart
	if err := r.Get(ctx, req.NamespacedName, &chart); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var apps v1alpha1.FleetAppList
	if err := r.List(ctx, &apps, client.MatchingFields{appChartIndex: req.Namespace + "/" + req.Name}); err != nil {
		return ctrl.Result{}, err
	}
	slices.SortFunc(apps.Items, func(a, b v1alpha1.FleetApp) int { return cmp.Compare(a.Name, b.Name) })
	st := chart.Status.DeepCopy()
	st.ObservedGeneration = chart.Generation
	st.Apps = int32(len(apps.Items)) //nolint:gosec // a namespace's apps
	st.Digest = chart.Spec.Digest
	for _, a := range apps.Items {
		// An app reporting the pinned digest, or the tag's digest: the first by name that has one.
		if a.Status.Digest != "" && (chart.Spec.Digest == "" || a.Status.Digest == chart.Spec.Digest) {
			st.Digest = a.Status.Digest
			break
		}
	}
	return ctrl.Result{}, writeStatus(ctx, r.Client, &chart, &chart.Status, st, kindChart)
}

// SetupWithManager registers the apps reconciler and the chart status beside it: an app is
// reconciled on its spec's changes, on a change of its status (its own write reaching the cache,
// or an edit by hand: statusChanged), its chart's and its work's (status included); a chart on
// its spec's changes and on any change of an app naming it.
func (r *AppReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.FleetApp{}, appChartIndex, func(o client.Object) []string {
		a := o.(*v1alpha1.FleetApp)
		return []string{a.Namespace + "/" + a.Spec.Chart}
	}); err != nil {
		return err
	}
	b := newController(mgr, "apps").
		For(&v1alpha1.FleetApp{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting, resync,
			statusChanged(func(a *v1alpha1.FleetApp) any { return &a.Status })))).
		Watches(&v1alpha1.FleetChart{}, handler.EnqueueRequestsFromMapFunc(r.appsOfChart), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(appOfWork), builder.WithPredicates(component(appwork.Component))).
		Watches(&v1alpha1.FleetClusterJoin{}, handler.EnqueueRequestsFromMapFunc(r.appsOfJoin),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting))).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
			return r.appsNaming(ctx, "", obj.GetName())
		}), builder.WithPredicates(availabilityChanged))
	if err := build(watchAccess(b, r.Client, r.appsNaming, true), r); err != nil {
		return err
	}
	return build(newController(mgr, "app-charts").
		For(&v1alpha1.FleetChart{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, resync))).
		Watches(&v1alpha1.FleetApp{}, handler.EnqueueRequestsFromMapFunc(chartOfApp)),
		&ChartStatusReconciler{Client: r.Client})
}

// deleting passes the update that marks an object for deletion, whatever its generation.
var deleting = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}}

// appsOfChart maps a chart to the apps naming it.
func (r *AppReconciler) appsOfChart(ctx context.Context, obj client.Object) []ctrl.Request {
	var apps v1alpha1.FleetAppList
	if err := r.List(ctx, &apps, client.MatchingFields{appChartIndex: obj.GetNamespace() + "/" + obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the apps of a chart", "chart", obj.GetName())
		return nil
	}
	out := make([]ctrl.Request, 0, len(apps.Items))
	for _, a := range apps.Items {
		out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
	}
	return out
}

// appsNaming maps a change of access to the apps of ns ("" for all) naming cluster ("" for any).
func (r *AppReconciler) appsNaming(ctx context.Context, ns, cluster string) []ctrl.Request {
	var apps v1alpha1.FleetAppList
	if err := r.List(ctx, &apps, inNamespace(ns)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing apps")
		return nil
	}
	return requestsOf(apps.Items, func(a *v1alpha1.FleetApp) bool { return cluster == "" || a.Spec.Cluster == cluster })
}

// appsOfJoin maps a join to the apps of every workspace naming its cluster: whether the cluster is
// joined (fleetrules.JoinOf) may change for each.
func (r *AppReconciler) appsOfJoin(ctx context.Context, obj client.Object) []ctrl.Request {
	return r.appsNaming(ctx, "", obj.(*v1alpha1.FleetClusterJoin).Spec.Cluster)
}

// chartOfApp maps an app to the chart it names.
func chartOfApp(_ context.Context, obj client.Object) []ctrl.Request {
	a := obj.(*v1alpha1.FleetApp)
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.Chart}}}
}

// appOfWork maps an app's work to the app its hub.OwnerAnnotation names.
func appOfWork(_ context.Context, obj client.Object) []ctrl.Request {
	ns, name, ok := strings.Cut(obj.GetAnnotations()[hub.OwnerAnnotation], "/")
	if !ok {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
