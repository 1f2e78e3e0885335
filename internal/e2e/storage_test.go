package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim"
	sitev1alpha2 "github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestStorageSiteDeployment carries StorageSiteDeployments from the hub to a site of the local
// fleet and back: the hub controller's storage-site reconciler, OCM's work agent and the site's
// API server are real; the simplyblock operator on the site is the test bed's simulator.
func TestStorageSiteDeployment(t *testing.T) {
	ctx := t.Context()
	begin := time.Now()
	f := testbed.StartFleetT(t, testbed.FleetOptions{ClusterNames: []string{"site-a"}, StatusSyncInterval: time.Second})
	site := f.Cluster("site-a")
	spoke, err := client.New(site.Config, client.Options{Scheme: sitesim.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	stopSim, err := sitesim.Start(ctx, site.Config, sitesim.Options{StepDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopSim() })
	good := map[string]string{"pool": "good"}
	if err := sitesim.CreateNodes(ctx, spoke, sitesim.Node{Name: "w1", Labels: good}, sitesim.Node{Name: "w2", Labels: good},
		sitesim.Node{Name: "cp", ControlPlane: true, Labels: good}, sitesim.Node{Name: "w3", Fail: "no-nvme", Labels: map[string]string{"pool": "bad"}}); err != nil {
		t.Fatal(err)
	}
	hub := storageWorkspace(t, f, "site-a")
	t.Logf("fleet, simulator and controller up in %v", time.Since(begin).Round(time.Millisecond))

	get := func(name string) (*storagev1alpha2.StorageSiteDeployment, error) {
		d := &storagev1alpha2.StorageSiteDeployment{}
		return d, hub.Get(ctx, client.ObjectKey{Namespace: "storage", Name: name}, d)
	}
	await := func(name, what string, check func(*storagev1alpha2.StorageSiteDeployment) error) *storagev1alpha2.StorageSiteDeployment {
		t.Helper()
		var d *storagev1alpha2.StorageSiteDeployment
		start := time.Now()
		testkit.Eventually(t, converge, name+": "+what, func() error {
			var err error
			if d, err = get(name); err != nil {
				return err
			}
			return check(d)
		}, func() string { return fmt.Sprintf("status %+v\n%s", d.Status, explainSite(t, hub, spoke, name)) })
		t.Logf("%s: %s after %v", name, what, time.Since(start).Round(time.Millisecond))
		return d
	}
	phase := func(p storagev1alpha2.Phase) func(*storagev1alpha2.StorageSiteDeployment) error {
		return func(d *storagev1alpha2.StorageSiteDeployment) error {
			if d.Status.Phase != p || d.Status.ObservedGeneration != d.Generation {
				return fmt.Errorf("phase %s (observed generation %d of %d): %s", d.Status.Phase, d.Status.ObservedGeneration, d.Generation, d.Status.Message)
			}
			return nil
		}
	}
	update := func(name string, change func(*storagev1alpha2.StorageSiteDeployment)) {
		t.Helper()
		testkit.Update(t, hub, &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: name}}, change)
	}
	draftOnSite := func(name string) *sitev1alpha2.ClusterDeploymentConfig {
		t.Helper()
		var c sitev1alpha2.ClusterDeploymentConfig
		if err := spoke.Get(ctx, client.ObjectKey{Namespace: sitesim.DefaultNamespace, Name: name}, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}

	d := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Name: "site-a", Namespace: "storage"},
		Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: "site-a",
			Discover: storagev1alpha2.DiscoverSpec{NodeSelector: good},
			Sizing:   &storagev1alpha2.Sizing{Name: "sc-a", VCPUCount: ptr.To[int32](4), MinHugePagesSize: "8G"}}}
	if err := hub.Create(ctx, d); err != nil {
		t.Fatal(err)
	}

	t.Run("the discovery drafts the site's workers; the sizing is applied onto the draft", func(t *testing.T) {
		d := await("site-a", "Drafted with w1 and w2", func(d *storagev1alpha2.StorageSiteDeployment) error {
			if err := phase(storagev1alpha2.PhaseDrafted)(d); err != nil {
				return err
			}
			// The sizing is applied once the draft names nodes, and its template comes back.
			if dr := d.Status.Draft; dr == nil || !slices.Equal(dr.NodeRefs, []string{"w1", "w2"}) || dr.Cluster == nil || dr.Cluster.VCPUCount == nil || *dr.Cluster.VCPUCount != 4 ||
				dr.Cluster.MinHugePagesSize != "8G" {
				return fmt.Errorf("draft %+v", d.Status.Draft)
			}
			return nil
		})
		if len(d.Status.Draft.NodeSets) == 0 || d.Status.Draft.Name != "site-draft" || d.Status.WorkName != storagework.WorkName("storage", "site-a") {
			t.Errorf("draft %+v work %q", d.Status.Draft, d.Status.WorkName)
		}
		if c := meta.FindStatusCondition(d.Status.Conditions, storagev1alpha2.DiscoveredCondition); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Discovered %+v", c)
		}
		onSite := draftOnSite("site-draft")
		if onSite.Spec.Cluster.MinHugePagesSize != "8G" || len(onSite.Spec.NodeSets) == 0 || onSite.Spec.Approved {
			t.Errorf("the site's draft: %+v", onSite.Spec)
		}
		managers := map[string]bool{}
		for _, m := range onSite.ManagedFields {
			managers[m.Manager] = true
		}
		if !managers[storagework.FieldOwner] || !managers[sitesim.FieldManager] {
			t.Errorf("the draft's field managers %v: want the hub's %s (sizing) beside the site's %s (node sets)", managers, storagework.FieldOwner, sitesim.FieldManager)
		}
	})

	t.Run("a changed discovery is a new run", func(t *testing.T) {
		// Workers instead of the node selector: the site takes one or the other.
		update("site-a", func(d *storagev1alpha2.StorageSiteDeployment) {
			d.Spec.Discover.Workers, d.Spec.Discover.NodeSelector = []string{"w1"}, nil
		})
		await("site-a", "Drafted with w1 only", func(d *storagev1alpha2.StorageSiteDeployment) error {
			if err := phase(storagev1alpha2.PhaseDrafted)(d); err != nil {
				return err
			}
			if dr := d.Status.Draft; dr == nil || !slices.Equal(dr.NodeRefs, []string{"w1"}) {
				return fmt.Errorf("draft nodes %v", d.Status.Draft)
			}
			return nil
		})
		var runs sitev1alpha2.OperatorOpsList
		if err := spoke.List(ctx, &runs, client.InNamespace(sitesim.DefaultNamespace)); err != nil {
			t.Fatal(err)
		}
		if len(runs.Items) != 2 {
			t.Errorf("%d discovery runs on the site, want 2 (the first orphaned, the new one)", len(runs.Items))
		}
	})

	t.Run("approved: the site expands the draft and the storage cluster comes Online", func(t *testing.T) {
		update("site-a", func(d *storagev1alpha2.StorageSiteDeployment) { d.Spec.Approved = true })
		// Online, and everything the site reports settled (the draft expanded, its nodes Online):
		// what the steady-state check below needs, since each of those is a status write.
		d := await("site-a", "Online", func(d *storagev1alpha2.StorageSiteDeployment) error {
			if err := phase(storagev1alpha2.PhaseOnline)(d); err != nil {
				return err
			}
			if dr, sc := d.Status.Draft, d.Status.StorageCluster; dr == nil || dr.Phase != storagev1alpha2.DraftPhaseExpanded || !dr.Approved ||
				sc == nil || len(sc.Nodes) == 0 || slices.ContainsFunc(sc.Nodes, func(n storagev1alpha2.StorageNodeStatus) bool { return n.Phase != "Online" }) {
				return fmt.Errorf("not settled: draft %+v storage cluster %+v", dr, sc)
			}
			return nil
		})
		sc := d.Status.StorageCluster
		if sc == nil || sc.Name != "sc-a" || sc.UUID == "" || sc.Pool == "" || len(sc.Nodes) != 1 || sc.Nodes[0].Hostname != "w1" || sc.Nodes[0].Phase != "Online" {
			t.Errorf("storage cluster %+v", sc)
		}
		for _, typ := range []string{storagev1alpha2.DeliveredCondition, storagev1alpha2.DiscoveredCondition, storagev1alpha2.ApprovedCondition, storagev1alpha2.ReadyCondition} {
			if c := meta.FindStatusCondition(d.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("%s: %+v", typ, c)
			}
		}
		if !draftOnSite("site-draft").Spec.Approved {
			t.Error("the site's draft is not approved")
		}
		// Online: nothing more to write.
		before := testkit.Counter("fleet_hub_writes_total", nil)
		time.Sleep(3 * time.Second)
		if n := testkit.Counter("fleet_hub_writes_total", nil) - before; n != 0 {
			t.Errorf("%v writes in 3 s once Online; want none", n)
		}
	})

	t.Run("a failing node fails the draft, with the site's reason", func(t *testing.T) {
		bad := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Name: "site-a-bad", Namespace: "storage"},
			Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: "site-a", DraftName: "bad-draft",
				Discover: storagev1alpha2.DiscoverSpec{NodeSelector: map[string]string{"pool": "bad"}}}}
		if err := hub.Create(ctx, bad); err != nil {
			t.Fatal(err)
		}
		d := await("site-a-bad", "Failed", phase(storagev1alpha2.PhaseFailed))
		if c := meta.FindStatusCondition(d.Status.Conditions, storagev1alpha2.DiscoveredCondition); c == nil || c.Reason != storagev1alpha2.ReasonDraftFailed ||
			!containsAll(d.Status.Message, "w3", "no-nvme") {
			t.Errorf("message %q, Discovered %+v: want the site's reason naming w3", d.Status.Message, c)
		}
	})

	t.Run("deleting the request orphans the storage on the site", func(t *testing.T) {
		d, err := get("site-a")
		if err != nil {
			t.Fatal(err)
		}
		if err := hub.Delete(ctx, d); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, converge, "request and work gone from the hub", func() error {
			if _, err := get("site-a"); !apierrors.IsNotFound(err) {
				return fmt.Errorf("request: %v", err)
			}
			var w workv1.ManifestWork
			if err := hub.Get(ctx, client.ObjectKey{Namespace: "site-a", Name: storagework.WorkName("storage", "site-a")}, &w); !apierrors.IsNotFound(err) {
				return fmt.Errorf("work: %v", err)
			}
			return nil
		})
		time.Sleep(2 * time.Second) // give the work agent time to act on the deletion
		var sc sitev1alpha2.StorageCluster
		if err := spoke.Get(ctx, client.ObjectKey{Namespace: sitesim.DefaultNamespace, Name: "sc-a"}, &sc); err != nil || sc.Status.Phase != "Online" {
			t.Errorf("the storage cluster on the site after the request went: %v, phase %q", err, sc.Status.Phase)
		}
		draftOnSite("site-draft") // still there
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// explainSite shows the deployment's work on the hub and the site's objects.
func explainSite(t *testing.T, hub, spoke client.Client, name string) string {
	ctx := t.Context()
	var out strings.Builder
	var w workv1.ManifestWork
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "site-a", Name: storagework.WorkName("storage", name)}, &w); err != nil {
		fmt.Fprintf(&out, "work: %v\n", err)
	} else {
		fmt.Fprintf(&out, "work generation %d conditions %+v\n", w.Generation, w.Status.Conditions)
		for _, m := range w.Status.ResourceStatus.Manifests {
			fmt.Fprintf(&out, "  %s %s: conditions %+v feedback %d values\n", m.ResourceMeta.Kind, m.ResourceMeta.Name, m.Conditions, len(m.StatusFeedbacks.Values))
		}
	}
	var runs sitev1alpha2.OperatorOpsList
	_ = spoke.List(ctx, &runs, client.InNamespace(sitesim.DefaultNamespace))
	for _, r := range runs.Items {
		fmt.Fprintf(&out, "site OperatorOps %s: %+v\n", r.Name, r.Status)
	}
	var drafts sitev1alpha2.ClusterDeploymentConfigList
	_ = spoke.List(ctx, &drafts, client.InNamespace(sitesim.DefaultNamespace))
	for _, d := range drafts.Items {
		fmt.Fprintf(&out, "site draft %s: approved %v status %+v\n", d.Name, d.Spec.Approved, d.Status)
	}
	return out.String()
}

// storageWorkspace runs the storage-site reconciler on f's hub and makes workspace "storage",
// bound to cluster's site set (bindSite); it returns a client of the hub.
func storageWorkspace(t *testing.T, f *testbed.Fleet, cluster string) client.Client {
	t.Helper()
	hub, err := client.New(f.Hub.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, f.Hub, "storage-site")
	if err := hub.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "storage"}}); err != nil {
		t.Fatal(err)
	}
	bindSite(t, hub, cluster, "storage")
	return hub
}

// bindSite lets workspace ws use cluster: a set "sites" that holds it, bound to ws.
func bindSite(t *testing.T, hub client.Client, cluster, ws string) {
	t.Helper()
	ctx := t.Context()
	var mc clusterv1.ManagedCluster
	if err := hub.Get(ctx, client.ObjectKey{Name: cluster}, &mc); err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataLabel(&mc.ObjectMeta, clusterv1beta2.ClusterSetLabel, "sites")
	for _, o := range []client.Object{&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "sites"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "sites"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "sites"}}} {
		if err := hub.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := hub.Update(ctx, &mc); err != nil {
		t.Fatal(err)
	}
}
