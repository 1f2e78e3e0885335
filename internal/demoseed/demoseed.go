// Package demoseed is the sample fleet that `make demo` seeds the local hub with (hack/demohub
// seed): edge clusters as OCM ManagedClusters, grouped in ManagedClusterSets that are bound to the
// demo workspace. The examples and guides name only these clusters and sets, so that they run
// against the demo hub; a test of the provider package checks it.
package demoseed

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workspace is the hub namespace the sets are bound to: the provider's default workspace.
const Workspace = "fleet-default"

// Cluster is one sample ManagedCluster.
type Cluster struct {
	Name   string
	Set    string            // its ManagedClusterSet, one of Sets
	Labels map[string]string // besides OCM's cluster-set label
}

// Sets are the sample ManagedClusterSets, each bound to Workspace.
var Sets = []string{"edge", "airgap-stores"}

// Clusters are the sample edge sites.
var Clusters = []Cluster{
	{"eu-01", "edge", map[string]string{"region": "eu"}},
	{"eu-02", "edge", map[string]string{"region": "eu"}},
	{"eu-staging-01", "edge", map[string]string{"region": "eu", "tier": "staging"}},
	{"lab-sandbox", "edge", map[string]string{"region": "eu"}}, // has a route of its own in the examples
	{"us-01", "edge", map[string]string{"region": "us"}},
	{"us-staging-01", "edge", map[string]string{"region": "us", "tier": "staging"}}, // the staging route of the examples
	{"store-0201", "airgap-stores", map[string]string{"region": "apac"}},
	{"store-0203", "airgap-stores", map[string]string{"region": "apac"}},
}

// Find returns the sample cluster of that name.
func Find(name string) (Cluster, bool) {
	for _, c := range Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return Cluster{}, false
}

// HasSet tells whether name is one of Sets.
func HasSet(name string) bool {
	for _, s := range Sets {
		if s == name {
			return true
		}
	}
	return false
}

// Objects are the hub objects of the sample fleet bound to workspace ws: the ManagedClusterSets,
// their bindings in ws, the ManagedClusters and, as OCM's registration creates them, each
// cluster's namespace on the hub.
func Objects(ws string) []client.Object {
	var objs []client.Object
	for _, set := range Sets {
		objs = append(objs,
			&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
			&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: ws},
				Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}})
	}
	for _, sc := range Clusters {
		labels := map[string]string{clusterv1beta2.ClusterSetLabel: sc.Set}
		for k, v := range sc.Labels {
			labels[k] = v
		}
		objs = append(objs,
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: sc.Name, Labels: labels},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sc.Name}})
	}
	return objs
}

// Seed creates Objects(ws) and ws itself on the hub; objects that exist are left alone.
func Seed(ctx context.Context, c client.Client, ws string) error {
	for _, o := range append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}}}, Objects(ws)...) {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
