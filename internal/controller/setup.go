package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
)

// Options configure the reconcilers.
type Options struct {
	// MaxConcurrentWrites bounds the writes the routing reconciler has in flight, all its
	// workers together; 0 means DefaultMaxConcurrentWrites.
	MaxConcurrentWrites int
	// AlwaysWrite makes the routing reconciler rewrite everything on every reconcile: the naive
	// baseline of the benchmark, never for use.
	AlwaysWrite bool
	// GatewayNamespace is where the app-routes reconciler writes the hub gateway's ConfigMaps:
	// a namespace of the controller's that tenants cannot write; empty means
	// DefaultGatewayNamespace.
	GatewayNamespace string
	// OrphanAfter bounds how long a deleted app or storage deployment waits for its work on a
	// cluster that exists but is not available; 0 means DefaultOrphanAfter.
	OrphanAfter time.Duration
	// ReplicationWindow is how far back the replication reconciler counts pushed artifacts; 0
	// means replication.DefaultWindow.
	ReplicationWindow time.Duration
}

// Reconcilers are the reconcilers of `fleet-controller hub`, by the name --controllers uses.
var Reconcilers = map[string]func(ctrl.Manager, Options) error{
	"routing": func(mgr ctrl.Manager, o Options) error {
		return (&RoutingReconciler{Client: mgr.GetClient(), MaxConcurrentWrites: o.MaxConcurrentWrites, AlwaysWrite: o.AlwaysWrite,
			Recorder: mgr.GetEventRecorder("fleet-controller-hub")}).SetupWithManager(mgr)
	},
	"pull-status": func(mgr ctrl.Manager, _ Options) error {
		return (&PullStatusReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	},
	"replication": func(mgr ctrl.Manager, o Options) error {
		return (&ReplicationReconciler{Client: mgr.GetClient(), Window: o.ReplicationWindow}).SetupWithManager(mgr)
	},
	"probe-status": func(mgr ctrl.Manager, _ Options) error {
		return (&ProbeStatusReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	},
	"storage-site": func(mgr ctrl.Manager, o Options) error {
		return (&StorageSiteReconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("fleet-controller-hub"),
			OrphanAfter: o.OrphanAfter}).SetupWithManager(mgr)
	},
	"sites": func(mgr ctrl.Manager, _ Options) error {
		return (&SiteReconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()}).SetupWithManager(mgr)
	},
	"cluster-joins": func(mgr ctrl.Manager, _ Options) error {
		return (&ClusterJoinReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	},
	"apps": func(mgr ctrl.Manager, o Options) error {
		return (&AppReconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("fleet-controller-hub"),
			OrphanAfter: o.OrphanAfter}).SetupWithManager(mgr)
	},
	"app-routes": func(mgr ctrl.Manager, o Options) error {
		return (&AppRouteReconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), GatewayNamespace: o.GatewayNamespace}).SetupWithManager(mgr)
	},
}

// Setup adds the named reconcilers to mgr.
func Setup(mgr ctrl.Manager, names []string, o Options) error {
	for _, name := range names {
		setup, ok := Reconcilers[name]
		if !ok {
			return fmt.Errorf("unknown controller %q; known: %s", name, strings.Join(sortedKeys(Reconcilers), ", "))
		}
		if err := setup(mgr, o); err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
	}
	return nil
}

// Scheme holds every kind the reconcilers read or write.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, storagev1alpha2.AddToScheme, clusterv1.Install, clusterv1beta2.Install, workv1.Install} {
		if err := add(s); err != nil {
			panic(err) // static registrations
		}
	}
	return s
}

// CacheOptions narrow the manager's cache to what the reconcilers read: registry Secrets only
// (by type, so other Secrets are neither cached nor readable through it) and the controller's
// own ManifestWorks (by label), each object without what no reconciler reads (withTransforms).
func CacheOptions() cache.Options {
	return withTransforms(cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}:              {Field: fields.OneTermEqualSelector("type", registrysecret.Type)},
		&workv1.ManifestWork{}:        {Label: labels.SelectorFromSet(labels.Set{hub.ManagedByLabel: ManagedBy})},
		&v1alpha1.ClusterOCIStorage{}: {Label: labels.SelectorFromSet(labels.Set{hub.ManagedByLabel: ManagedBy})},
	}})
}

// Cache indexes.
const (
	workspaceIndex  = "workspace"  // ManifestWork → its hub.WorkspaceLabel
	clusterSetIndex = "clusterSet" // ManagedClusterSetBinding → spec.clusterSet
)

// managedClusterMetadataList and managedClusterMetadata are what the reconcilers read
// ManagedClusters into, for their metadata or for what else the cache keeps of them
// (slimManagedCluster): the typed kind, so that one informer serves every read and watch of
// them. A metadata-only read or watch (PartialObjectMetadata, WatchesMetadata) would start a
// second informer, holding every cluster twice and seeing its changes at other moments.
func managedClusterMetadataList() *clusterv1.ManagedClusterList {
	return &clusterv1.ManagedClusterList{}
}

func managedClusterMetadata() *clusterv1.ManagedCluster { return &clusterv1.ManagedCluster{} }

// clusterChanged passes the ManagedCluster events that can change what a reconciler of the
// objects naming the cluster decides: its registration and its removal (create, delete), its
// labels (cluster sets, join labels), its annotations (the joined-by annotation, which join
// counts) and its spec (generation: client configs, the hub gateway's address). Status
// heartbeats (lease, conditions, resources) pass none of them.
var clusterChanged = predicate.Or[client.Object](predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.GenerationChangedPredicate{})

// newController is the builder of every hub controller: named, and with the one rate limiter of
// its workqueue (kube.RateLimiter), so that every failing object backs off the same way.
func newController(mgr ctrl.Manager, name string) *builder.Builder {
	return kube.NewController(mgr, name, crcontroller.Options{})
}

// build completes b with r, whose typed errors (kube.Waiting, kube.Stalling) do what they say.
func build(b *builder.Builder, r reconcile.Reconciler) error { return kube.Build(b, r) }

// resync passes the informer's periodic resync (--sync-period): an update that changes nothing,
// the same resourceVersion. Generation predicates drop it, and for what no watch shows (a status
// edited by hand, a Secret or ConfigMap the cache does not hold) it is the last trigger left.
var resync = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion()
	},
}

// statusChanged passes an update that changes the object's status (status reads it), the
// reconciler's own writes included. A reconciler that writes its status only when it differs
// from the one in its cache compares with a copy that may not hold its last write yet: what it
// computes can equal that older status while the hub holds another (a site's count going 3, 2, 3
// within milliseconds), and the write is skipped. Its own write reaching the cache is then the
// event that makes it look again; that reconcile writes nothing when the status is what it
// computes, so steady state stays without writes.
func statusChanged[O client.Object](status func(O) any) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(O)
			n, okNew := e.ObjectNew.(O)
			return okOld && okNew && !equality.Semantic.DeepEqual(status(o), status(n))
		},
	}
}

// SetupWithManager registers the reconciler, its cache indexes and the events that map to a
// workspace, a change of a route's status among them (the routing's own write reaching the
// cache, or an edit by hand: statusChanged).
func (r *RoutingReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &workv1.ManifestWork{}, workspaceIndex, func(o client.Object) []string {
		if ws := o.GetLabels()[hub.WorkspaceLabel]; ws != "" {
			return []string{ws}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &clusterv1beta2.ManagedClusterSetBinding{}, clusterSetIndex, func(o client.Object) []string {
		return []string{o.(*clusterv1beta2.ManagedClusterSetBinding).Spec.ClusterSet}
	}); err != nil {
		return err
	}
	ns := handler.EnqueueRequestsFromMapFunc(workspaceOf)
	b := kube.NewController(mgr, "routing", crcontroller.Options{MaxConcurrentReconciles: RoutingWorkers}).
		Watches(&v1alpha1.OCIStorageRoute{}, ns, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, resync,
			statusChanged(func(rt *v1alpha1.OCIStorageRoute) any { return &rt.Status })))).
		Watches(&corev1.Secret{}, ns).
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, ns).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.workspacesBinding)).
		Watches(managedClusterMetadata(), routingClusterHandler(r), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workspaceOfWork),
			builder.WithPredicates(component(componentOCIChain), predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, workReported))).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.workspacesOfCluster), builder.WithPredicates(availabilityChanged)).
		Watches(&v1alpha1.ClusterOCIStorage{}, ns, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return false }, // its own status writes
		}))
	return build(b, r)
}

// workspaceOfWork maps a chain work to the workspace its label names.
func workspaceOfWork(_ context.Context, obj client.Object) []ctrl.Request {
	if ws := obj.GetLabels()[hub.WorkspaceLabel]; ws != "" {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Name: ws}}}
	}
	return nil
}

// workspacesOfCluster maps a ManagedCluster to the workspaces that hold a ClusterOCIStorage of
// it: those whose status says whether it reports.
func (r *RoutingReconciler) workspacesOfCluster(ctx context.Context, obj client.Object) []ctrl.Request {
	var storages v1alpha1.ClusterOCIStorageList
	if err := r.List(ctx, &storages, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing ClusterOCIStorages")
		return nil
	}
	var out []ctrl.Request
	for i := range storages.Items {
		if storages.Items[i].Name == obj.GetName() {
			out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Name: storages.Items[i].Namespace}})
		}
	}
	return out
}

// workspacesBinding maps a ManagedClusterSet to the workspaces bound to it.
func (r *RoutingReconciler) workspacesBinding(ctx context.Context, obj client.Object) []ctrl.Request {
	var bindings clusterv1beta2.ManagedClusterSetBindingList
	if err := r.List(ctx, &bindings, client.MatchingFields{clusterSetIndex: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the bindings of a cluster set", "clusterSet", obj.GetName())
		return nil
	}
	return workspaceRequests(bindings.Items)
}

// routingClusterHandler maps a ManagedCluster's events to the workspaces whose routing they can
// change (workspacesHolding); tests swap it for the mapping to every workspace, to measure
// against it.
var routingClusterHandler = func(r *RoutingReconciler) handler.EventHandler { return clusterHandler(r.workspacesHolding) }

// clusterHandler enqueues what requests maps a ManagedCluster's event to, given the cluster as it
// was and as it is (an update: both; a create or a delete: the one).
func clusterHandler(requests func(ctx context.Context, clusters ...client.Object) []ctrl.Request) handler.EventHandler {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrl.Request], clusters ...client.Object) {
		for _, req := range requests(ctx, clusters...) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			add(ctx, q, e.Object)
		},
	}
}

// workspacesHolding maps ManagedClusters (one as it was and as it is, for a label change) to
// the workspaces bound to a ManagedClusterSet that holds one of them: only their routing can
// change when the cluster comes, goes or changes labels. A workspace that neither had nor has
// the cluster routes nothing to it, so a label flip on one cluster recomputes its workspaces,
// not all of them.
func (r *RoutingReconciler) workspacesHolding(ctx context.Context, clusters ...client.Object) []ctrl.Request {
	var sets clusterv1beta2.ManagedClusterSetList
	if err := r.List(ctx, &sets); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing cluster sets")
		return nil
	}
	access := inventory.NewAccess("", nil, sets.Items)
	var out []ctrl.Request
	seen := map[string]bool{}
	for _, c := range clusters {
		for _, set := range access.Of(c).Sets {
			if seen[set] {
				continue
			}
			seen[set] = true
			var bindings clusterv1beta2.ManagedClusterSetBindingList
			if err := r.List(ctx, &bindings, client.MatchingFields{clusterSetIndex: set}); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing the bindings of a cluster set", "clusterSet", set)
				return nil
			}
			for _, req := range workspaceRequests(bindings.Items) {
				if !slices.Contains(out, req) {
					out = append(out, req)
				}
			}
		}
	}
	return out
}

func workspaceRequests(bindings []clusterv1beta2.ManagedClusterSetBinding) []ctrl.Request {
	var out []ctrl.Request
	for _, b := range bindings {
		req := ctrl.Request{NamespacedName: types.NamespacedName{Name: b.Namespace}}
		if !slices.Contains(out, req) {
			out = append(out, req)
		}
	}
	return out
}
