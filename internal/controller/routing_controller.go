// Package controller holds the reconcilers of `fleet-controller hub`, one per concern, and what
// they share: the cache they read, the writes they count.
package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,resources=ocistorageroutes,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=ocistorageroutes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=clusterocistorages,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=fleet.umkim.io,resources=clusterocistorages/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters;managedclustersets;managedclustersetbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// RoutingReconciler makes a workspace's routes effective. Its unit is a workspace (a namespace):
// each route's outcome depends on every route, registry and routable cluster of the workspace, so
// every event maps to the workspace. It resolves each cluster with the routing library, delivers
// each chain in a ManifestWork in the cluster's namespace, keeps a ClusterOCIStorage per cluster
// and writes each route's status, writing only what differs from what it reads in its cache.
type RoutingReconciler struct {
	client.Client
	// MaxConcurrentWrites bounds the writes the reconciler has in flight, all its workers
	// together; 0 means DefaultMaxConcurrentWrites.
	MaxConcurrentWrites int
	// AlwaysWrite skips the comparison with what is on the hub and rewrites every work and
	// status: the naive baseline the benchmark measures against. Never set it otherwise.
	AlwaysWrite bool
	// Recorder receives an Event on a route whose Ready condition changes; nil records none.
	Recorder events.EventRecorder

	// expect holds each workspace's writes until its cache holds them (kube.Expectations): a
	// reconcile behind them writes nothing and waits for their watch events.
	expect kube.Expectations[string]

	semOnce sync.Once
	sem     chan struct{} // the writes in flight (writer)
}

// workspaceState is one workspace as the cache shows it.
type workspaceState struct {
	name       string
	inv        *inventory.Workspace
	routes     []v1alpha1.OCIStorageRoute
	registries map[string]registrysecret.Registry     // readable registry Secrets, by name
	works      map[string]*workv1.ManifestWork        // the chain works, by cluster
	storages   map[string]*v1alpha1.ClusterOCIStorage // by cluster
	silent     map[string]*notReporting               // the clusters that do not report, by name
}

// Reconcile brings one workspace (req.Name) to its desired state.
func (r *RoutingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("workspace", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)

	// Nothing is compared with a cache that does not hold this controller's last writes yet.
	if err := r.expect.Behind(req.Name, kube.FromCache(ctx, r.Client)); err != nil {
		return ctrl.Result{}, err
	}
	ws, err := r.load(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := planWorkspace(ctx, ws)
	if plan.err != nil {
		return ctrl.Result{}, plan.err
	}
	failed, delivered, err := r.deliver(ctx, ws, plan)
	if ctx.Err() != nil {
		return ctrl.Result{}, err // stopping: the routes' statuses are written by the next reconcile
	}
	err = errors.Join(err, r.writeStatuses(ctx, ws, plan, failed, delivered))
	return ctrl.Result{}, err
}

// load reads a workspace from the cache and assembles its routing inventory.
func (r *RoutingReconciler) load(ctx context.Context, name string) (*workspaceState, error) {
	var (
		routes   v1alpha1.OCIStorageRouteList
		secrets  corev1.SecretList
		bindings clusterv1beta2.ManagedClusterSetBindingList
		sets     clusterv1beta2.ManagedClusterSetList
		clusters = managedClusterMetadataList()
		works    workv1.ManifestWorkList
		storages v1alpha1.ClusterOCIStorageList
	)
	in := client.InNamespace(name)
	// The works and storages are only read and copied before a write: the cache's own objects
	// do, without a copy of every one of them on every reconcile.
	if err := r.read(ctx, cacheList{&routes, in}, cacheList{&works, listOptions{client.MatchingFields{workspaceIndex: name}, client.UnsafeDisableDeepCopy}},
		cacheList{&storages, listOptions{in, client.UnsafeDisableDeepCopy}}); err != nil {
		return nil, err
	}
	if len(routes.Items) == 0 && len(works.Items) == 0 && len(storages.Items) == 0 {
		return &workspaceState{name: name, inv: &inventory.Workspace{Name: name}}, nil // not an OCI storage workspace
	}
	if err := r.read(ctx, cacheList{&secrets, in}, cacheList{&bindings, in}, cacheList{&sets, nil}, cacheList{clusters, client.UnsafeDisableDeepCopy}); err != nil {
		return nil, err
	}
	lists := inventory.Lists{Clusters: make([]metav1.Object, len(clusters.Items))}
	for i := range clusters.Items {
		lists.Clusters[i] = &clusters.Items[i]
	}
	var err error
	if lists.Routes, err = toUnstructured(routes.Items); err != nil {
		return nil, err
	}
	if lists.Secrets, err = toUnstructured(secrets.Items); err != nil {
		return nil, err
	}
	if lists.Bindings, err = toUnstructured(bindings.Items); err != nil {
		return nil, err
	}
	if lists.Sets, err = toUnstructured(sets.Items); err != nil {
		return nil, err
	}
	ws := &workspaceState{
		name: name, inv: inventory.Assemble(name, lists, ""), routes: routes.Items,
		registries: map[string]registrysecret.Registry{}, works: map[string]*workv1.ManifestWork{}, storages: map[string]*v1alpha1.ClusterOCIStorage{},
		silent: map[string]*notReporting{},
	}
	for i := range clusters.Items {
		if n := clusterNotReporting(&clusters.Items[i]); n != nil {
			ws.silent[n.Cluster] = n
		}
	}
	for i := range lists.Secrets {
		// The inventory leaves out a Secret whose reference names labels badly (Invalid).
		if _, ok := ws.inv.Registries[lists.Secrets[i].GetName()]; !ok {
			continue
		}
		if reg, err := registrysecret.Decode(&lists.Secrets[i]); err == nil && registrysecret.Is(&lists.Secrets[i]) {
			ws.registries[lists.Secrets[i].GetName()] = reg
		}
	}
	for i := range works.Items {
		if w := &works.Items[i]; w.Labels[hub.ComponentLabel] == componentOCIChain {
			ws.works[w.Namespace] = w
		}
	}
	for i := range storages.Items {
		ws.storages[storages.Items[i].Name] = &storages.Items[i]
	}
	return ws, nil
}

// cacheList is a list to read from the cache, with its option.
type cacheList struct {
	list client.ObjectList
	opt  client.ListOption
}

// listOptions applies several list options as one.
type listOptions []client.ListOption

func (o listOptions) ApplyToList(lo *client.ListOptions) {
	for _, opt := range o {
		opt.ApplyToList(lo)
	}
}

func (r *RoutingReconciler) read(ctx context.Context, lists ...cacheList) error {
	for _, l := range lists {
		var opts []client.ListOption
		if l.opt != nil {
			opts = append(opts, l.opt)
		}
		if err := r.List(ctx, l.list, opts...); err != nil {
			return fmt.Errorf("reading the cache: %w", err)
		}
	}
	return nil
}

func toUnstructured[T any](items []T) ([]unstructured.Unstructured, error) {
	out := make([]unstructured.Unstructured, len(items))
	for i := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&items[i])
		if err != nil {
			return nil, err
		}
		out[i].Object = m
	}
	return out, nil
}

// clusterPlan is what one cluster of the workspace should have.
type clusterPlan struct {
	res  routing.Resolution
	wait string
	// work is the desired work, to compare with: shared by the clusters of the same chain, its
	// namespace unset (clusterWork gives a cluster its own to write); nil when the cluster gets
	// none (or keeps its own).
	work *workv1.ManifestWork
	kept string // the unusable registry that keeps the delivered chain in place
	// tooLarge is why the chain's work is over the work budget: nothing is written, the chain
	// delivered before stays in place.
	tooLarge error
	// unresolved are the registries of the chain whose reference names a label that does not
	// resolve for the cluster: its chain (res.Registries) leaves them out.
	unresolved []routing.Unresolved
}

// workspacePlan is the desired state of a workspace.
type workspacePlan struct {
	clusters map[string]*clusterPlan // every routable cluster, when the workspace has routes
	report   *routing.Report
	invalid  map[string][]string // spec problems of the routes left out of routing, by route
	err      error               // the routes could not be resolved: nothing is to be written
}

// planWorkspace computes the desired state of a workspace from what the cache shows. It stops
// with ctx's error when ctx ends: a workspace of 100,000 clusters takes seconds to plan, and the
// manager gives its reconciles 30 s to return once it is told to stop.
func planWorkspace(ctx context.Context, ws *workspaceState) workspacePlan {
	p := workspacePlan{clusters: map[string]*clusterPlan{}, invalid: map[string][]string{}}
	for _, inv := range ws.inv.Invalid {
		if inv.Kind == inventory.RouteKind.Kind {
			p.invalid[inv.Name] = problems(inv.Err)
		}
	}
	if len(ws.routes) == 0 {
		return p
	}
	_, rep, err := ws.inv.Resolve()
	if err != nil { // valid routes with unique names always compile; should they not, change nothing
		p.err = err
		return p
	}
	p.report = rep
	works := newChainPlanner(ws.name)
	for _, res := range rep.Clusters {
		if err := ctx.Err(); err != nil {
			p.err = err
			return p
		}
		cp := &clusterPlan{res: res, wait: ws.inv.Waits[res.Route]}
		p.clusters[res.Cluster] = cp
		if !res.Matched() {
			continue
		}
		chain := ocichain.Chain{Workspace: ws.name, Route: res.Route, ReplicationWait: cp.wait, Verify: routeVerify(ws.routes, res.Route)}
		for _, name := range res.Registries {
			if _, ok := ws.registries[name]; !ok {
				cp.kept = name
				break
			}
		}
		if cp.kept != "" {
			continue
		}
		c, _ := ws.inv.Cluster(res.Cluster)
		entries, unresolved := ws.inv.Chain(c, res.Registries)
		cp.unresolved, cp.res.Registries = unresolved, make([]string, 0, len(entries))
		for _, e := range entries {
			entry, _ := ocichain.Registry(e.Registry, ws.registries[e.Registry])
			entry.Reference = e.Reference
			chain.Registries = append(chain.Registries, entry)
			cp.res.Registries = append(cp.res.Registries, e.Registry)
		}
		if len(entries) == 0 {
			continue // no registry resolves for the cluster: it gets no chain
		}
		// A chain document of valid registries always encodes.
		cp.work, cp.tooLarge = works.plan(res.Cluster, chain)
	}
	return p
}

// problems renders a route's validation error with CRD field paths.
func problems(err error) []string {
	var ps routing.Problems
	if !errors.As(err, &ps) {
		return []string{err.Error()}
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path.CRD() + ": " + p.Message
	}
	return out
}

// deliveryErrors collects the failed work writes of a reconcile, by cluster.
type deliveryErrors struct {
	mu        sync.Mutex
	byCluster map[string]error
}

func (d *deliveryErrors) add(cluster string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byCluster[cluster] = err
}

// deliver writes the works that differ from the plan, deletes those of clusters that get none,
// and writes the ClusterOCIStorages. A cluster's storage follows its own work's write, which its
// status reports, and no other's: each cluster is one job, and no cluster waits for the rest.
// It returns the failed work writes and whether each cluster has applied its work, by cluster.
func (r *RoutingReconciler) deliver(ctx context.Context, ws *workspaceState, p workspacePlan) (map[string]error, map[string]chainDelivery, error) {
	failed := &deliveryErrors{byCluster: map[string]error{}}
	w := r.writer()
	for cluster, obs := range ws.works {
		if cp := p.clusters[cluster]; cp == nil || (cp.work == nil && cp.kept == "" && cp.tooLarge == nil) {
			w.do(ctx, kindWork, verbDelete, func(ctx context.Context) error { return r.delete(ctx, ws.name, obs) })
		}
	}
	for cluster, obs := range ws.storages {
		if p.clusters[cluster] == nil {
			w.do(ctx, kindStorage, verbDelete, func(ctx context.Context) error { return r.delete(ctx, ws.name, obs) })
		}
	}
	delivered := make(map[string]chainDelivery, len(p.clusters))
	for cluster, cp := range p.clusters {
		if ctx.Err() != nil {
			break // what was started sees ctx end too; nothing more is compared
		}
		verb, writeWork, next := r.workWrite(ws, cluster, cp)
		d := chainDelivery{Silent: ws.silent[cluster]}
		if next == nil {
			d.Why = "no work is written for the cluster"
		} else {
			d.Applied, d.Why = work.Applied(next)
		}
		delivered[cluster] = d
		if writeWork == nil {
			if writeStorage := r.storageWrite(ws, cluster, cp, nil, d); writeStorage != nil {
				w.job(ctx, writeStorage)
			}
			continue
		}
		w.job(ctx, func(send send) error {
			errWork := send(kindWork, verb, writeWork)
			if errWork != nil {
				failed.add(cluster, errWork)
			}
			if writeStorage := r.storageWrite(ws, cluster, cp, errWork, d); writeStorage != nil {
				return errors.Join(errWork, writeStorage(send))
			}
			return errWork
		})
	}
	err := w.wait()
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	return failed.byCluster, delivered, err
}

// workWrite is the write that brings cluster's work to the plan (verb and write; none when it is
// so already) and the work as the hub holds it once written (nil when there is none). Its
// generation is the one the work agent must report (one more after a spec change, the
// apiserver's rule), so that the status says now what the next reconcile would, and is written
// once.
func (r *RoutingReconciler) workWrite(ws *workspaceState, cluster string, cp *clusterPlan) (string, func(context.Context) error, *workv1.ManifestWork) {
	obs := ws.works[cluster]
	switch {
	case cp.work == nil:
		return "", nil, obs
	case obs == nil:
		desired := clusterWork(cp.work, cluster)
		return verbCreate, func(ctx context.Context) error {
			if err := r.Create(ctx, desired); err != nil {
				return err
			}
			r.expect.Wrote(ws.name, desired)
			return nil
		}, desired
	case r.AlwaysWrite || !workUpToDate(obs, cp.work):
		upd := obs.DeepCopy()
		for k, v := range cp.work.Labels {
			metav1.SetMetaDataLabel(&upd.ObjectMeta, k, v)
		}
		metav1.SetMetaDataAnnotation(&upd.ObjectMeta, ManifestsDigestAnnotation, cp.work.Annotations[ManifestsDigestAnnotation])
		// The cluster's own copy: the desired work is shared by clusters, and a write decodes
		// into its object.
		desired := clusterWork(cp.work, cluster)
		upd.Spec.Workload, upd.Spec.DeleteOption, upd.Spec.ManifestConfigs = desired.Spec.Workload, desired.Spec.DeleteOption, desired.Spec.ManifestConfigs
		next := upd.DeepCopy()
		if !specUpToDate(obs, cp.work) {
			next.Generation++
		}
		return verbUpdate, func(ctx context.Context) error {
			if err := r.update(ctx, upd, false); err != nil {
				return err
			}
			r.expect.Wrote(ws.name, upd)
			return nil
		}, next
	}
	return "", nil, obs
}

// storageWrite is the write of cluster's ClusterOCIStorage, created when absent, whose status
// reports the plan, errWork (its work's write) and d; none when the cached status says so already.
// The status is computed beside the cached object, and only a storage written is copied.
func (r *RoutingReconciler) storageWrite(ws *workspaceState, cluster string, cp *clusterPlan, errWork error, d chainDelivery) func(send) error {
	obs := ws.storages[cluster]
	if obs == nil {
		obs = &v1alpha1.ClusterOCIStorage{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: ws.name,
			Labels: map[string]string{hub.ManagedByLabel: ManagedBy}}}
	}
	st := clusterStatus(obs.Status, cp.res, cp.wait, cluster+"/"+WorkName(ws.name), cp.kept, cp.tooLarge, errWork, d, cp.unresolved)
	if obs.UID != "" && !r.AlwaysWrite && equality.Semantic.DeepEqual(obs.Status, st) {
		return nil
	}
	desired := &v1alpha1.ClusterOCIStorage{TypeMeta: obs.TypeMeta, ObjectMeta: *obs.ObjectMeta.DeepCopy(), Status: *st.DeepCopy()}
	return func(send send) error {
		if desired.UID == "" {
			status := desired.Status
			if err := send(kindStorage, verbCreate, func(ctx context.Context) error { return r.Create(ctx, desired) }); err != nil {
				return err
			}
			r.expect.Wrote(ws.name, desired)
			desired.Status = status
		}
		return send(kindStorage, verbStatus, func(ctx context.Context) error {
			if err := r.update(ctx, desired, true); err != nil {
				return err
			}
			r.expect.Wrote(ws.name, desired)
			return nil
		})
	}
}

// writeStatuses writes the status of every route of the workspace that differs.
func (r *RoutingReconciler) writeStatuses(ctx context.Context, ws *workspaceState, p workspacePlan, failed map[string]error, delivered map[string]chainDelivery) error {
	facts := map[string]*routeFacts{}
	for i := range ws.routes {
		name := ws.routes[i].Name
		facts[name] = &routeFacts{Problems: p.invalid[name]}
	}
	if p.report != nil {
		for _, rc := range p.report.Routes {
			facts[rc.Route].Matched = rc.Clusters
		}
		for i := range p.report.Shadowed {
			facts[p.report.Shadowed[i].Route].Shadow = &p.report.Shadowed[i]
		}
		for i := range p.report.Conflicts {
			for _, name := range p.report.Conflicts[i].Routes {
				facts[name].Conflict = &p.report.Conflicts[i]
			}
		}
	}
	for _, rt := range ws.inv.Routes {
		f := facts[rt.Name]
		for _, name := range rt.Registries {
			reg, ok := ws.registries[name]
			switch {
			case ok:
				switch _, creds := ocichain.Registry(name, reg); creds {
				case ocichain.PushCredentials:
					f.Push = append(f.Push, name)
				case ocichain.NoCredentials:
					f.Withheld = append(f.Withheld, name)
				}
			case slices.ContainsFunc(ws.inv.Invalid, func(i inventory.Invalid) bool { return i.Kind == "Secret" && i.Name == name }):
				f.Unreadable = append(f.Unreadable, name)
			default:
				f.Missing = append(f.Missing, name)
			}
		}
	}
	for _, cluster := range sortedKeys(p.clusters) {
		cp := p.clusters[cluster]
		if !cp.res.Matched() {
			continue
		}
		f := facts[cp.res.Route]
		f.Unresolved = append(f.Unresolved, cp.unresolved...)
		if cp.kept == "" && len(cp.res.Registries) == 0 {
			f.NoChain++
		}
		if cp.kept != "" {
			f.Kept++
		}
		if cp.tooLarge != nil {
			f.TooLarge = append(f.TooLarge, cluster)
			f.TooLargeErr = cp.tooLarge
		}
		if failed[cluster] != nil {
			f.Failed = append(f.Failed, cluster)
		}
		// The route's chain is applied where the cluster applied its current work, and that work
		// carries the route's chain (not a chain kept from before, nor one over the budget).
		d := delivered[cluster]
		if d.Silent != nil {
			f.Silent = append(f.Silent, d.Silent)
		}
		if !d.Applied || d.Silent != nil || cp.work == nil || failed[cluster] != nil {
			why := d.Why
			if cp.work == nil || failed[cluster] != nil {
				why = "its chain is not written (see Written)"
			}
			if len(f.Pending) == 0 {
				f.PendingWhy = why
			}
			f.Pending = append(f.Pending, cluster)
		}
	}
	w := r.writer()
	for i := range ws.routes {
		route := &ws.routes[i]
		f := facts[route.Name]
		st := routeStatus(route, *f)
		if !r.AlwaysWrite && equality.Semantic.DeepEqual(route.Status, st) {
			continue
		}
		upd := route.DeepCopy()
		upd.Status = st
		w.do(ctx, kindRoute, verbStatus, func(ctx context.Context) error {
			if err := r.update(ctx, upd, true); err != nil {
				return client.IgnoreNotFound(err)
			}
			r.expect.Wrote(ws.name, upd)
			kube.Transitions(r.Recorder, upd, route.Status.Conditions, upd.Status.Conditions, routeEvents...)
			return nil
		})
	}
	return w.wait()
}

// delete deletes obj, as read from the cache, and expects its cache to see it go.
func (r *RoutingReconciler) delete(ctx context.Context, ws string, obj client.Object) error {
	if err := r.Delete(ctx, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.expect.Deleted(ws, obj)
	return nil
}

// update writes obj, or its status, conditional on the resourceVersion the cache showed: a
// conflict requeues the workspace. In AlwaysWrite mode the naive baseline overwrites blindly
// instead, with a merge patch of the whole object.
func (r *RoutingReconciler) update(ctx context.Context, obj client.Object, status bool) error {
	switch {
	case r.AlwaysWrite && status:
		obj.SetResourceVersion("")
		return r.Status().Patch(ctx, obj, client.Merge)
	case r.AlwaysWrite:
		obj.SetResourceVersion("")
		return r.Patch(ctx, obj, client.Merge)
	case status:
		return r.Status().Update(ctx, obj)
	}
	return r.Update(ctx, obj)
}

// routeEvents are the conditions of a route whose transitions are recorded as Events.
var routeEvents = []kube.Declared{{Type: v1alpha1.ReadyCondition}, {Type: v1alpha1.DeliveredCondition}}

// workspaceOf maps a namespaced object to its namespace's workspace.
func workspaceOf(_ context.Context, obj client.Object) []ctrl.Request {
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
