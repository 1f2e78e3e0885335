// Package demoseed is the sample fleet that `make demo` seeds the local hub with (hack/demohub
// seed): edge clusters as OCM ManagedClusters, grouped in ManagedClusterSets that are bound to the
// demo workspace. The examples and guides name only these clusters and sets, so that they run
// against the demo hub; a test of the provider package checks it.
package demoseed

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
