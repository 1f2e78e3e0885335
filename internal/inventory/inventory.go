// Package inventory is what routing needs to know about one workspace of the hub: its routes, its
// registries and the clusters it may route — the ManagedClusters in the ManagedClusterSets bound
// to the workspace namespace by ManagedClusterSetBinding, OCM's own tenancy model.
//
// Assemble builds a Workspace from plain lists of hub objects, so that the provider (from its
// cached lists) and a controller (from informer caches) share it; Load reads the lists first.
package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// Hub kinds read by the inventory.
var (
	RouteKind  = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("ocistorageroutes"), Kind: "OCIStorageRoute"}
	SecretKind = hub.Kind{GroupVersionResource: k8sschema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret"}

	managedClusterKind = hub.Kind{GroupVersionResource: clusterv1.SchemeGroupVersion.WithResource("managedclusters"), Kind: "ManagedCluster"}
	clusterSetKind     = hub.Kind{GroupVersionResource: clusterv1beta2.SchemeGroupVersion.WithResource("managedclustersets"), Kind: "ManagedClusterSet"}
	bindingKind        = hub.Kind{GroupVersionResource: clusterv1beta2.SchemeGroupVersion.WithResource("managedclustersetbindings"), Kind: "ManagedClusterSetBinding"}
)

// Registry is an OCI registry of the workspace, without its credentials.
type Registry struct {
	Name      string
	Reference string
	Role      string
	Managed   bool   // a Terraform configuration manages it (hub.ManagedByTerraform)
	Owner     string // the owner setting of the configuration that wrote it (hub.OwnerOf), or ""
	CABytes   int    // the size of its CA bundle, which every chain that lists it carries
	// Ref is Reference parsed once, for routing.ResolveChain: it may name cluster labels.
	Ref *routing.Reference
}

// Workspace is the routing inventory of one workspace.
type Workspace struct {
	Name       string
	Routes     []routing.Route     // the valid routes, sorted by name
	Managed    map[string]bool     // names of the routes a Terraform configuration manages
	Owners     map[string]string   // each route's configuration owner (hub.OwnerOf), when it has one
	Waits      map[string]string   // each route's replicationWait as spelled on the hub, e.g. "10m"
	Registries map[string]Registry // by name
	Clusters   []routing.Cluster   // the clusters the workspace may route, sorted by name
	Groups     []string            // the cluster sets bound to the workspace, sorted
	// Invalid are hub objects that cannot be read, left out of the rest so that one bad object
	// does not hide the others.
	Invalid []Invalid

	access *Access         // which clusters the workspace may use
	all    []metav1.Object // every ManagedCluster, for Access

	resolved struct {
		once   sync.Once
		router *routing.Router
		report *routing.Report
		err    error
	}
	views views // built on first use (views.go)
}

// Invalid is a hub object that cannot be read, and why.
type Invalid struct {
	Kind, Name string
	Err        error
}

func (i Invalid) String() string { return fmt.Sprintf("%s %s: %v", i.Kind, i.Name, i.Err) }

// Lists are the hub objects a workspace's inventory is assembled from.
type Lists struct {
	Routes, Secrets, Bindings []unstructured.Unstructured // of the workspace namespace
	Sets                      []unstructured.Unstructured // cluster-scoped
	// Clusters are the ManagedClusters; only their names and labels are read, so a controller can
	// pass metadata-only objects from its cache.
	Clusters []metav1.Object
}

// Load reads a workspace's inventory through l; fieldManager is the provider's, to tell which
// objects Terraform manages. l caches it, and the lists it is made of; callers must not modify it.
func Load(ctx context.Context, l hub.Lister, workspace, fieldManager string) (*Workspace, error) {
	v, err := l.Memo("inventory/"+workspace, func() (any, error) {
		lists, err := read(ctx, l, workspace)
		if err != nil {
			return nil, err
		}
		return Assemble(workspace, lists, fieldManager), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Workspace), nil
}

func read(ctx context.Context, l hub.Lister, workspace string) (Lists, error) {
	var lists Lists
	for _, r := range []struct {
		into      *[]unstructured.Unstructured
		kind      hub.Kind
		namespace string
		what      string
	}{
		{&lists.Routes, RouteKind, workspace, "routes of workspace " + workspace},
		{&lists.Secrets, SecretKind, workspace, "registries of workspace " + workspace},
		{&lists.Bindings, bindingKind, workspace, "ManagedClusterSetBindings of workspace " + workspace},
		{&lists.Sets, clusterSetKind, "", "ManagedClusterSets"},
		{nil, managedClusterKind, "", "ManagedClusters"},
	} {
		items, err := l.List(ctx, r.kind, r.namespace, "")
		if err != nil {
			return lists, fmt.Errorf("listing %s: %w", r.what, err)
		}
		if r.into != nil {
			*r.into = items
			continue
		}
		for i := range items {
			lists.Clusters = append(lists.Clusters, &items[i])
		}
	}
	return lists, nil
}

// Assemble builds a workspace's inventory from plain lists. An object that cannot be read is
// listed in Invalid and left out.
func Assemble(workspace string, lists Lists, fieldManager string) *Workspace {
	ws := &Workspace{Name: workspace, Managed: map[string]bool{}, Owners: map[string]string{}, Waits: map[string]string{}, Registries: map[string]Registry{}}
	for i := range lists.Routes {
		u := &lists.Routes[i]
		r, err := RouteFrom(u)
		if err == nil {
			err = routing.ValidateRoute(r).Err()
		}
		if err != nil {
			ws.Invalid = append(ws.Invalid, Invalid{RouteKind.Kind, u.GetName(), err})
			continue
		}
		ws.Routes = append(ws.Routes, r)
		ws.Managed[r.Name] = hub.ManagedByTerraform(u, fieldManager)
		if o := hub.OwnerOf(u); o != "" {
			ws.Owners[r.Name] = o
		}
		ws.Waits[r.Name] = r.ReplicationWait.String()
		if w, _, _ := unstructured.NestedString(u.Object, "spec", "replicationWait"); w != "" {
			ws.Waits[r.Name] = w
		}
	}
	slices.SortFunc(ws.Routes, func(a, b routing.Route) int { return strings.Compare(a.Name, b.Name) })

	for i := range lists.Secrets {
		s := &lists.Secrets[i]
		if !registrysecret.Is(s) {
			continue
		}
		reg, err := registrysecret.Decode(s)
		if err != nil {
			ws.Invalid = append(ws.Invalid, Invalid{"Secret", s.GetName(), err})
			continue
		}
		ref, err := routing.ParseReference(reg.Reference)
		switch {
		case err != nil && routing.Templated(reg.Reference):
			ws.Invalid = append(ws.Invalid, Invalid{"Secret", s.GetName(), err})
			continue
		case err != nil:
			ref = routing.LiteralReference(reg.Reference) // the agent reports it, as always
		}
		ws.Registries[s.GetName()] = Registry{Name: s.GetName(), Reference: reg.Reference, Role: reg.Role, Managed: hub.ManagedByTerraform(s, fieldManager),
			Owner: hub.OwnerOf(s), CABytes: len(reg.CACerts), Ref: ref}
	}
	ws.assembleClusters(lists)
	return ws
}

func (ws *Workspace) assembleClusters(lists Lists) {
	var bound []string
	for _, b := range lists.Bindings {
		if set, _, _ := unstructured.NestedString(b.Object, "spec", "clusterSet"); set != "" {
			bound = append(bound, set)
		}
	}
	sets := make([]clusterv1beta2.ManagedClusterSet, 0, len(lists.Sets))
	for i := range lists.Sets {
		var s clusterv1beta2.ManagedClusterSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(lists.Sets[i].Object, &s); err != nil {
			if slices.Contains(bound, lists.Sets[i].GetName()) {
				ws.Invalid = append(ws.Invalid, Invalid{clusterSetKind.Kind, lists.Sets[i].GetName(), err})
			}
			continue
		}
		sets = append(sets, s)
	}
	ws.access = NewAccess(ws.Name, bound, sets)
	ws.Invalid = append(ws.Invalid, ws.access.Invalid...)
	ws.all = lists.Clusters
	for _, mc := range lists.Clusters {
		if ca := ws.access.Of(mc); ca.Allowed() {
			ws.Clusters = append(ws.Clusters, routing.Cluster{Name: mc.GetName(), Labels: mc.GetLabels(), Groups: ca.Bound, Foreign: foreignLabels(mc, ws.Name)})
		}
	}
	slices.SortFunc(ws.Clusters, func(a, b routing.Cluster) int { return strings.Compare(a.Name, b.Name) })
	ws.Groups = ws.access.Groups()
}

// foreignLabels are the label keys of mc that a cluster join of another workspace than workspace
// set (its fleet.umkim.io/joined-by and join-labels annotations), with that join; nil when none.
func foreignLabels(mc metav1.Object, workspace string) map[string]string {
	a := mc.GetAnnotations()
	by, keys := a[v1alpha1.JoinedByAnnotation], a[v1alpha1.JoinLabelsAnnotation]
	if by == "" || keys == "" || strings.HasPrefix(by, workspace+"/") {
		return nil
	}
	out := map[string]string{}
	for _, k := range strings.Split(keys, ",") {
		out[k] = "cluster join " + by
	}
	return out
}

// Chain resolves the registries of a cluster's resolution for that cluster (their references may
// name its labels): the chain without those whose reference does not resolve, and those. A
// registry the workspace lacks is left out of both.
func (w *Workspace) Chain(c routing.Cluster, registries []string) ([]routing.ChainEntry, []routing.Unresolved) {
	refs := make(map[string]*routing.Reference, len(registries))
	for _, name := range registries {
		if r, ok := w.Registries[name]; ok {
			refs[name] = r.Ref
		}
	}
	return routing.ResolveChain(c, registries, refs)
}

// Access is the named ManagedCluster's access to the workspace: the sets that hold it and which
// of them are bound; ok is false when no ManagedCluster has that name.
func (w *Workspace) Access(cluster string) (ca ClusterAccess, ok bool) {
	for _, mc := range w.all {
		if mc.GetName() == cluster {
			return w.access.Of(mc), true
		}
	}
	return ClusterAccess{Workspace: w.Name, Cluster: cluster}, false
}

// clusterSet decides membership of a ManagedClusterSet as OCM does: by the exclusive
// cluster-set label, or by the set's label selector.
type clusterSet struct {
	name     string
	selector labels.Selector
}

func newClusterSet(s *clusterv1beta2.ManagedClusterSet) (clusterSet, error) {
	if s.Spec.ClusterSelector.SelectorType == clusterv1beta2.LabelSelector {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.ClusterSelector.LabelSelector)
		if err != nil {
			return clusterSet{}, fmt.Errorf("ManagedClusterSet %s: %w", s.Name, err)
		}
		if s.Spec.ClusterSelector.LabelSelector == nil {
			sel = labels.Nothing()
		}
		return clusterSet{s.Name, sel}, nil
	}
	return clusterSet{s.Name, labels.SelectorFromSet(labels.Set{clusterv1beta2.ClusterSetLabel: s.Name})}, nil
}

func (s clusterSet) contains(l map[string]string) bool { return s.selector.Matches(labels.Set(l)) }

// Resolve routes every cluster of the workspace with its routes as they are on the hub, once:
// the checks of every route of a plan judge their change against the same resolution.
func (w *Workspace) Resolve() (*routing.Router, *routing.Report, error) {
	r := &w.resolved
	r.once.Do(func() {
		if r.router, r.err = routing.Compile(w.Routes); r.err != nil {
			r.err = fmt.Errorf("the routes of workspace %s are not valid: %w", w.Name, r.err)
			return
		}
		r.report = r.router.ResolveAll(w.Clusters)
	})
	return r.router, r.report, r.err
}

// Cluster returns the named ManagedCluster's inventory entry; ok is false when it is not among
// the clusters the workspace may route.
func (w *Workspace) Cluster(name string) (routing.Cluster, bool) {
	i, ok := slices.BinarySearchFunc(w.Clusters, name, func(c routing.Cluster, n string) int { return strings.Compare(c.Name, n) })
	if !ok {
		return routing.Cluster{}, false
	}
	return w.Clusters[i], true
}

// HasGroup reports whether a cluster set is bound to the workspace.
func (w *Workspace) HasGroup(name string) bool {
	_, ok := slices.BinarySearch(w.Groups, name)
	return ok
}
