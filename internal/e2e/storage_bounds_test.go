package e2e_test

import (
	"encoding/json"
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

// TestStorageSiteOfFortyNodes: a site of 40 nodes with cloud-style names, in two device layouts.
// Their references (about 1.8 KB as one JSON list), the draft's node sets (two groups of 20 names,
// about 2.2 KB) and the storage cluster's nodes (about 4 KB) are over OCM's 1,024-byte limit for
// a list feedback value, which the work agent dropped silently, so the hub never saw the draft
// name a node nor its node sets; read one item, set name or stride per rule, all arrive.
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
	// Even nodes have the default devices, odd ones three: the draft groups them in two.
	odd := []string{"nvme0n1", "nvme1n1", "nvme2n1"}
	want := []storagev1alpha2.NodeSet{{Name: "nodeset-1", Groups: []storagev1alpha2.NodeGroup{
		{Name: "group-1", Devices: storagev1alpha2.Devices{NVMe: sitesim.DefaultDevices}}, {Name: "group-2", Devices: storagev1alpha2.Devices{NVMe: odd}}}}}
	for i := range 40 { // named in sorted order
		n := fmt.Sprintf("ip-10-0-%d-%d.eu-central-1.compute.internal", i/10, 100+i)
		names = append(names, n)
		node := sitesim.Node{Name: n, Labels: map[string]string{"pool": "big"}}
		if i%2 == 1 {
			node.Devices = odd
		}
		nodes = append(nodes, node)
		want[0].Groups[i%2].Workers = append(want[0].Groups[i%2].Workers, n)
	}
	if !slices.IsSorted(names) {
		t.Fatal("the names are not in sorted order")
	}
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
		if st.Draft == nil || len(st.Draft.NodeRefs) != 40 || len(st.Draft.NodeSets) != 1 || len(st.Draft.NodeSets[0].Groups) != 2 ||
			len(st.Draft.NodeSets[0].Groups[0].Workers)+len(st.Draft.NodeSets[0].Groups[1].Workers) != 40 {
			return fmt.Errorf("phase %s: draft %s", st.Phase, toJSON(st.Draft))
		}
		if st.Phase != storagev1alpha2.PhaseOnline || st.StorageCluster == nil || len(st.StorageCluster.Nodes) != 40 {
			return fmt.Errorf("phase %s (%s): storage cluster %+v", st.Phase, st.Message, st.StorageCluster)
		}
		return nil
	}, func() string { return explainSite(t, hub, spoke, "site-b") })
	dr := got.Status.Draft
	if !slices.Equal(dr.NodeRefs, names) {
		t.Errorf("draft node references %v, want %v", dr.NodeRefs, names)
	}
	if g, w := toJSON(dr.NodeSets), toJSON(want); g != w {
		t.Errorf("draft node sets\n got %s\nwant %s", g, w)
	}
	if len(dr.Omitted) != 0 {
		t.Errorf("draft omits %q", dr.Omitted)
	}
	if c := dr.Cluster; c == nil || c.Name != "sc-b" || c.VCPUCount == nil || *c.VCPUCount != 4 || c.MaxSubsystemCount == nil || *c.MaxSubsystemCount != 10 ||
		c.MinHugePagesSize != "2G" || c.Stripe == nil || *c.Stripe.DataChunks != 1 || *c.Stripe.ParityChunks != 1 {
		t.Errorf("draft template %s", toJSON(c))
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

func toJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
