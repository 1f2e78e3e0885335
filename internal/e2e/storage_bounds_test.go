package e2e_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestStorageSiteOfFortyNodes: a site of 40 nodes with cloud-style names. Their references
// (about 1.8 KB as one JSON list) and the storage cluster's nodes (about 4 KB) are over OCM's
// 1,024-byte limit for a list feedback value, which the work agent dropped silently, so the hub
// never saw the draft name a node; read one item per rule, all 40 arrive.
func TestStorageSiteOfFortyNodes(t *testing.T) {
	ctx := t.Context()
	f := testbed.StartFleetT(t, testbed.FleetOptions{ClusterNames: []string{"site-b"}, StatusSyncInterval: time.Second})
	spoke, err := client.New(f.Cluster("site-b").Config, client.Options{Scheme: sitesim.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	stopSim, err := sitesim.Start(ctx, f.Cluster("site-b").Config, sitesim.Options{StepDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopSim() })
	var names []string
	var nodes []sitesim.Node
	for i := range 40 {
		n := fmt.Sprintf("ip-10-0-%d-%d.eu-central-1.compute.internal", i/10, 100+i)
		names = append(names, n)
		nodes = append(nodes, sitesim.Node{Name: n, Labels: map[string]string{"pool": "big"}})
	}
	slices.Sort(names)
	if err := sitesim.CreateNodes(ctx, spoke, nodes...); err != nil {
		t.Fatal(err)
	}
	hub := storageWorkspace(t, f, "site-b")
	d := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Name: "site-b", Namespace: "storage"},
		Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: "site-b", Approved: true,
			Discover: storagev1alpha2.DiscoverSpec{NodeSelector: map[string]string{"pool": "big"}},
			Sizing:   &storagev1alpha2.Sizing{Name: "sc-b", VCPUCount: ptr.To[int32](4)}}}
	if err := hub.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var got *storagev1alpha2.StorageSiteDeployment
	testkit.Eventually(t, 2*converge, "site-b Online with 40 nodes", func() error {
		got = &storagev1alpha2.StorageSiteDeployment{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			return err
		}
		st := got.Status
		if st.Draft == nil || len(st.Draft.NodeRefs) != 40 {
			return fmt.Errorf("phase %s: draft %+v", st.Phase, st.Draft)
		}
		if st.Phase != storagev1alpha2.PhaseOnline || st.StorageCluster == nil || len(st.StorageCluster.Nodes) != 40 {
			return fmt.Errorf("phase %s (%s): storage cluster %+v", st.Phase, st.Message, st.StorageCluster)
		}
		return nil
	}, func() string { return explainSite(t, hub, spoke, "site-b") })
	if !slices.Equal(got.Status.Draft.NodeRefs, names) {
		t.Errorf("draft node references %v, want %v", got.Status.Draft.NodeRefs, names)
	}
	var hosts []string
	for _, n := range got.Status.StorageCluster.Nodes {
		hosts = append(hosts, n.Hostname)
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, names) {
		t.Errorf("storage nodes' hosts %v, want %v", hosts, names)
	}
}
