package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
)

// OCM and fleet resources the fixtures write.
var (
	managedClustersGVR = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	clusterSetsGVR     = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersets"}
	setBindingsGVR     = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersetbindings"}
	routesGVR          = inventory.RouteKind.GroupVersionResource
)

// hubFixtures creates OCM objects and fleet objects for one test and deletes them when the test
// ends. ManagedClusters and ManagedClusterSets are cluster-scoped and shared by every test of the
// package, so their names carry a prefix unique to the test's workspace: use Name to get the name
// of a cluster or set on the hub.
type hubFixtures struct {
	t      testing.TB
	dyn    dynamic.Interface
	ws     string
	prefix string
}

func newHubFixtures(t testing.TB, ws string) *hubFixtures {
	t.Helper()
	dyn, err := dynamic.NewForConfig(testRESTConfig(t))
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	h := fnv.New32a()
	h.Write([]byte(ws))
	// Short, so that set names stay valid label values (63 characters) with the prefix.
	return &hubFixtures{t: t, dyn: dyn, ws: ws, prefix: fmt.Sprintf("t%08x", h.Sum32())}
}

// Name is the hub name of the test's cluster or set called short.
func (f *hubFixtures) Name(short string) string { return f.prefix + "-" + short }

// Names maps Name over shorts.
func (f *hubFixtures) Names(shorts ...string) []string {
	out := make([]string, len(shorts))
	for i, s := range shorts {
		out[i] = f.Name(s)
	}
	return out
}

func (f *hubFixtures) create(gvr schema.GroupVersionResource, obj map[string]any) {
	f.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	ns := u.GetNamespace()
	ri := f.dyn.Resource(gvr).Namespace(ns)
	if _, err := ri.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("create %s %s/%s: %v", u.GetKind(), ns, u.GetName(), err)
	}
	name := u.GetName()
	f.t.Cleanup(func() {
		err := ri.Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			f.t.Errorf("clean up %s %s/%s: %v", gvr.Resource, ns, name, err)
		}
	})
}

// ClusterSet creates ManagedClusterSet Name(short), with exclusive cluster-set label membership,
// and binds it to the workspace.
func (f *hubFixtures) ClusterSet(short string) string {
	f.t.Helper()
	name := f.Name(short)
	f.create(clusterSetsGVR, map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"clusterSelector": map[string]any{"selectorType": string(clusterv1beta2.ExclusiveClusterSetLabel)}},
	})
	f.Bind(name)
	return name
}

// Bind binds the ManagedClusterSet set to the workspace (OCM requires the binding's name to be
// the set's name).
func (f *hubFixtures) Bind(set string) {
	f.t.Helper()
	f.create(setBindingsGVR, map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
		"metadata": map[string]any{"name": set, "namespace": f.ws},
		"spec":     map[string]any{"clusterSet": set},
	})
}

// Cluster creates ManagedCluster Name(short) with labels, a member of the test's set setShort
// ("" for none) by the exclusive cluster-set label.
func (f *hubFixtures) Cluster(short, setShort string, labels map[string]string) string {
	f.t.Helper()
	name := f.Name(short)
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	if setShort != "" {
		l[clusterv1beta2.ClusterSetLabel] = f.Name(setShort)
	}
	f.create(managedClustersGVR, map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
		"metadata": map[string]any{"name": name, "labels": l},
		"spec":     map[string]any{"hubAcceptsClient": true},
	})
	return name
}

// Usable creates ManagedCluster Name(short) in the set Name("usable"), which a binding of the
// workspace binds: a cluster the workspace may use, so that the hub acts on it and the plan
// does not warn that it is not bound. The set and binding are made on first use.
func (f *hubFixtures) Usable(short string) string {
	f.t.Helper()
	set := f.Name("usable")
	if _, err := f.dyn.Resource(clusterSetsGVR).Get(context.Background(), set, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		f.ClusterSet("usable")
	} else if err != nil {
		f.t.Fatal(err)
	}
	return f.Cluster(short, "usable", nil)
}

// Registry creates an OCI registry Secret in the workspace without going through Terraform.
func (f *hubFixtures) Registry(name, role, reference string) {
	f.t.Helper()
	f.create(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": OCIRegistrySecretType,
		"metadata": map[string]any{"name": name, "namespace": f.ws, "labels": map[string]any{OCIRegistryRoleLabel: role}},
		"data":     map[string]any{"reference": base64.StdEncoding.EncodeToString([]byte(reference))},
	})
}

// Route creates an OCIStorageRoute in the workspace without going through Terraform.
func (f *hubFixtures) Route(name string, spec map[string]any) {
	f.t.Helper()
	f.create(routesGVR, map[string]any{
		"apiVersion": routesGVR.GroupVersion().String(), "kind": inventory.RouteKind.Kind,
		"metadata": map[string]any{"name": name, "namespace": f.ws},
		"spec":     spec,
	})
}

// ManagedRoute creates an OCIStorageRoute as a Terraform configuration would have: labelled
// with the provider's field manager.
func (f *hubFixtures) ManagedRoute(name string, spec map[string]any) {
	f.t.Helper()
	f.create(routesGVR, map[string]any{
		"apiVersion": routesGVR.GroupVersion().String(), "kind": inventory.RouteKind.Kind,
		"metadata": map[string]any{"name": name, "namespace": f.ws, "labels": map[string]any{hub.ManagedByLabel: DefaultFieldManager}},
		"spec":     spec,
	})
}

// GetRoute reads an OCIStorageRoute of the workspace; nil when it does not exist.
func (f *hubFixtures) GetRoute(name string) (*unstructured.Unstructured, error) {
	u, err := f.dyn.Resource(routesGVR).Namespace(f.ws).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// RouteNames lists the names of the workspace's OCIStorageRoutes, sorted.
func (f *hubFixtures) RouteNames() ([]string, error) {
	l, err := f.dyn.Resource(routesGVR).Namespace(f.ws).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, u := range l.Items {
		names = append(names, u.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// PatchRoute merges spec into an OCIStorageRoute's spec out of band (as another field manager).
func (f *hubFixtures) PatchRoute(name string, patch string) {
	f.t.Helper()
	_, err := f.dyn.Resource(routesGVR).Namespace(f.ws).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		f.t.Fatalf("patch OCIStorageRoute %s/%s: %v", f.ws, name, err)
	}
}

// DeleteRoute deletes an OCIStorageRoute out of band.
func (f *hubFixtures) DeleteRoute(name string) {
	f.t.Helper()
	if err := f.dyn.Resource(routesGVR).Namespace(f.ws).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatalf("delete OCIStorageRoute %s/%s: %v", f.ws, name, err)
	}
}
