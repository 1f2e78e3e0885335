// Package inventory reads what routing needs from the hub for one workspace: its routes, its
// registries and the clusters it may route — the ManagedClusters in the ManagedClusterSets bound
// to the workspace namespace by ManagedClusterSetBinding, OCM's own tenancy model.
package inventory

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
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

// Fleet's OCI registry Secret type and the label carrying a registry's role.
const (
	RegistrySecretType = "fleet.cattle.io/bundle-oci-storage/v1alpha1"
	RegistryRoleLabel  = "fleet.umkim.io/oci-registry-role"
)

// Registry is an OCI registry of the workspace, without its credentials.
type Registry struct {
	Name      string
	Reference string
	Role      string
}

// Workspace is the routing inventory of one workspace.
type Workspace struct {
	Name       string
	Routes     []routing.Route     // as on the hub, in no particular order
	Registries map[string]Registry // by name
	Clusters   []routing.Cluster   // the clusters the workspace may route, sorted by name
	Groups     []string            // the cluster sets bound to the workspace, sorted
}

// Load reads a workspace's inventory. The client caches it, and the lists it is made of, until it
// writes to the hub; callers must not modify it.
func Load(ctx context.Context, c *hub.Client, workspace string) (*Workspace, error) {
	v, err := c.Memo("inventory/"+workspace, func() (any, error) { return load(ctx, c, workspace) })
	if err != nil {
		return nil, err
	}
	return v.(*Workspace), nil
}

func load(ctx context.Context, c *hub.Client, workspace string) (*Workspace, error) {
	ws := &Workspace{Name: workspace, Registries: map[string]Registry{}}

	routes, err := c.List(ctx, RouteKind, workspace, "")
	if err != nil {
		return nil, fmt.Errorf("listing routes of workspace %s: %w", workspace, err)
	}
	for i := range routes {
		var r v1alpha1.OCIStorageRoute
		if err := fromUnstructured(&routes[i], &r); err != nil {
			return nil, err
		}
		ws.Routes = append(ws.Routes, RouteFromAPI(&r))
	}

	secrets, err := c.List(ctx, SecretKind, workspace, "")
	if err != nil {
		return nil, fmt.Errorf("listing registries of workspace %s: %w", workspace, err)
	}
	for _, s := range secrets {
		if t, _, _ := unstructured.NestedString(s.Object, "type"); t != RegistrySecretType {
			continue
		}
		ref, _, _ := unstructured.NestedString(s.Object, "data", "reference")
		ws.Registries[s.GetName()] = Registry{Name: s.GetName(), Reference: decode(ref), Role: s.GetLabels()[RegistryRoleLabel]}
	}

	ws.Clusters, ws.Groups, err = loadClusters(ctx, c, workspace)
	return ws, err
}

func loadClusters(ctx context.Context, c *hub.Client, workspace string) ([]routing.Cluster, []string, error) {
	bindings, err := c.List(ctx, bindingKind, workspace, "")
	if err != nil {
		return nil, nil, fmt.Errorf("listing ManagedClusterSetBindings of workspace %s: %w", workspace, err)
	}
	bound := map[string]bool{}
	for _, b := range bindings {
		if set, _, _ := unstructured.NestedString(b.Object, "spec", "clusterSet"); set != "" {
			bound[set] = true
		}
	}
	if len(bound) == 0 {
		return nil, nil, nil
	}
	rawSets, err := c.List(ctx, clusterSetKind, "", "")
	if err != nil {
		return nil, nil, fmt.Errorf("listing ManagedClusterSets: %w", err)
	}
	var sets []clusterSet
	for i := range rawSets {
		var s clusterv1beta2.ManagedClusterSet
		if err := fromUnstructured(&rawSets[i], &s); err != nil {
			return nil, nil, err
		}
		if !bound[s.Name] {
			continue
		}
		cs, err := newClusterSet(&s)
		if err != nil {
			return nil, nil, err
		}
		sets = append(sets, cs)
	}
	rawClusters, err := c.List(ctx, managedClusterKind, "", "")
	if err != nil {
		return nil, nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	var clusters []routing.Cluster
	for _, mc := range rawClusters {
		cl := routing.Cluster{Name: mc.GetName(), Labels: mc.GetLabels()}
		for _, s := range sets {
			if s.contains(cl.Labels) {
				cl.Groups = append(cl.Groups, s.name)
			}
		}
		if len(cl.Groups) > 0 {
			slices.Sort(cl.Groups)
			clusters = append(clusters, cl)
		}
	}
	slices.SortFunc(clusters, func(a, b routing.Cluster) int { return strings.Compare(a.Name, b.Name) })
	groups := make([]string, 0, len(sets))
	for _, s := range sets {
		groups = append(groups, s.name)
	}
	slices.Sort(groups)
	return clusters, groups, nil
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

// RouteFromAPI converts a hub route for the routing library.
func RouteFromAPI(r *v1alpha1.OCIStorageRoute) routing.Route {
	out := routing.Route{
		Name:          r.Name,
		Priority:      int64(r.Spec.Priority),
		Default:       r.Spec.Default,
		ClusterNames:  r.Spec.ClusterNames,
		ClusterGroups: r.Spec.ClusterGroups,
		Registries:    r.Spec.Registries,
	}
	if r.Spec.ReplicationWait != nil {
		out.ReplicationWait = r.Spec.ReplicationWait.Duration
	}
	for _, s := range r.Spec.ClusterSelectors {
		sel := routing.Selector{MatchLabels: s.MatchLabels}
		for _, e := range s.MatchExpressions {
			sel.MatchExpressions = append(sel.MatchExpressions, routing.Requirement{Key: e.Key, Operator: routing.Operator(e.Operator), Values: e.Values})
		}
		out.ClusterSelectors = append(out.ClusterSelectors, sel)
	}
	return out
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

func decode(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// Resolve routes every cluster of the workspace with its routes as they are on the hub.
func (w *Workspace) Resolve() (*routing.Router, *routing.Report, error) {
	router, err := routing.Compile(w.Routes)
	if err != nil {
		return nil, nil, fmt.Errorf("the routes of workspace %s are not valid: %w", w.Name, err)
	}
	return router, router.ResolveAll(w.Clusters), nil
}
