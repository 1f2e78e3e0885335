package sitesim_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

const workConverge = 60 * time.Second

// site object's resource identifier in a ManifestWork.
func siteResource(resource, name string) workv1.ResourceIdentifier {
	return workv1.ResourceIdentifier{Group: v1alpha2.GroupVersion.Group, Resource: resource, Name: name, Namespace: ns}
}

func manifest(t *testing.T, obj map[string]any) workv1.Manifest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
}

// jsonPaths are feedback rules for .status.<name> of each name.
func jsonPaths(names ...string) []workv1.FeedbackRule {
	var paths []workv1.JsonPath
	for _, n := range names {
		paths = append(paths, workv1.JsonPath{Name: n, Path: ".status." + n})
	}
	return []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: paths}}
}

// feedbackOf returns the status feedback the work agent reported for resource/name, as strings
// (raw JSON for lists).
func feedbackOf(w *workv1.ManifestWork, resource, name string) map[string]string {
	values := map[string]string{}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Resource != resource || m.ResourceMeta.Name != name {
			continue
		}
		for _, v := range m.StatusFeedbacks.Values {
			switch {
			case v.Value.String != nil:
				values[v.Name] = *v.Value.String
			case v.Value.JsonRaw != nil:
				values[v.Name] = *v.Value.JsonRaw
			}
		}
	}
	return values
}

// TestThroughWorkAgent delivers a discovery and then sizing and approval to the simulator through
// OCM's real work agent, as the hub's reconciler does, and reads the site's answer back through
// status feedback: the field paths the hub depends on, as internal/storagework asks for them.
func TestThroughWorkAgent(t *testing.T) {
	begin := time.Now()
	// Feedback is watched (FeedbackWatchType), not polled: a long sync interval shows it.
	f := testbed.StartFleetT(t, testbed.FleetOptions{Clusters: 1, StatusSyncInterval: 30 * time.Second})
	spoke := f.Clusters[0]
	t.Logf("fleet of one cluster started in %v", time.Since(begin).Round(time.Millisecond))
	sitesim.StartT(t, spoke.Config, sitesim.Options{StepDelay: step})
	ctx := t.Context()
	sc, err := client.New(spoke.Config, client.Options{Scheme: sitesim.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := sitesim.Nodes(ctx, sc, "worker-1", "worker-2", "worker-3"); err != nil {
		t.Fatal(err)
	}
	hub, err := f.Hub.Client()
	if err != nil {
		t.Fatal(err)
	}

	// OCM requires a field manager prefixed work-agent: "hub-deploy" itself is rejected.
	bad := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: spoke.Name, Name: "bad"}, Spec: workv1.ManifestWorkSpec{
		Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(t, map[string]any{
			"apiVersion": v1alpha2.GroupVersion.String(), "kind": "ClusterDeploymentConfig",
			"metadata": map[string]any{"name": "x", "namespace": ns}})}},
		ManifestConfigs: []workv1.ManifestConfigOption{{ResourceIdentifier: siteResource("clusterdeploymentconfigs", "x"),
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
				ServerSideApply: &workv1.ServerSideApplyConfig{FieldManager: "hub-deploy"}}}},
	}}
	if err := hub.Create(ctx, bad); !apierrors.IsInvalid(err) {
		t.Errorf("a work with field manager hub-deploy: %v, want rejected", err)
	} else {
		t.Logf("field manager hub-deploy: %v", err)
	}

	// 1. The discovery alone.
	begin = time.Now()
	work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: spoke.Name, Name: "storage"}, Spec: workv1.ManifestWorkSpec{
		Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(t, map[string]any{
			"apiVersion": v1alpha2.GroupVersion.String(), "kind": "OperatorOps",
			"metadata": map[string]any{"name": "discover-1", "namespace": ns},
			"spec":     map[string]any{"action": "Discover", "discover": map[string]any{"configName": "site-b"}},
		})}},
		ManifestConfigs: []workv1.ManifestConfigOption{{ResourceIdentifier: siteResource("operatorops", "discover-1"),
			FeedbackScrapeType: workv1.FeedbackWatchType, FeedbackRules: jsonPaths("phase", "configRef", "message")}},
		DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan},
	}}
	if err := hub.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"phase": "Completed", "configRef": "site-b", "message": "ClusterDeploymentConfig site-b names 3 nodes"}
	waitWork(t, hub, spoke, func(w *workv1.ManifestWork) error {
		if got := feedbackOf(w, "operatorops", "discover-1"); diff(want, got) != "" {
			return fmt.Errorf("OperatorOps feedback %v", got)
		}
		return nil
	})
	t.Logf("discovery delivered and reported Completed on the hub in %v", time.Since(begin).Round(time.Millisecond))

	// 2. Sizing and approval onto the draft (server-side apply, forced: the draft's template is
	// the site's), and the StorageCluster read back (ReadOnly).
	begin = time.Now()
	testkit.Update(t, hub, work, func(work *workv1.ManifestWork) { // the agent writes the work's status
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests,
			manifest(t, map[string]any{
				"apiVersion": v1alpha2.GroupVersion.String(), "kind": "ClusterDeploymentConfig",
				"metadata": map[string]any{"name": "site-b", "namespace": ns},
				"spec": map[string]any{"approved": true, "cluster": map[string]any{"name": "sc-b", "vcpuCount": 4,
					"maxSubsystemCount": 12, "minHugePagesSize": "4G", "stripe": map[string]any{"dataChunks": 2, "parityChunks": 1}}},
			}),
			manifest(t, map[string]any{
				"apiVersion": v1alpha2.GroupVersion.String(), "kind": "StorageCluster",
				"metadata": map[string]any{"name": "sc-b", "namespace": ns},
			}))
		work.Spec.ManifestConfigs = append(work.Spec.ManifestConfigs,
			workv1.ManifestConfigOption{ResourceIdentifier: siteResource("clusterdeploymentconfigs", "site-b"),
				FeedbackScrapeType: workv1.FeedbackWatchType, FeedbackRules: jsonPaths("phase", "message", "nodeRefs", "clusterRef"),
				UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
					ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: "work-agent-hub-deploy"}}},
			workv1.ManifestConfigOption{ResourceIdentifier: siteResource("storageclusters", "sc-b"),
				FeedbackScrapeType: workv1.FeedbackWatchType, FeedbackRules: jsonPaths("phase", "uuid", "pool", "nodes"),
				UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}})
	})
	var cluster map[string]string
	waitWork(t, hub, spoke, func(w *workv1.ManifestWork) error {
		draft := feedbackOf(w, "clusterdeploymentconfigs", "site-b")
		if draft["phase"] != "Expanded" || draft["clusterRef"] != "sc-b" || draft["nodeRefs"] != `["worker-1","worker-2","worker-3"]` {
			return fmt.Errorf("draft feedback %v", draft)
		}
		if cluster = feedbackOf(w, "storageclusters", "sc-b"); cluster["phase"] != "Online" {
			return fmt.Errorf("StorageCluster feedback %v", cluster)
		}
		return nil
	})
	t.Logf("approval delivered and the StorageCluster reported Online on the hub in %v", time.Since(begin).Round(time.Millisecond))
	if !uuidPattern.MatchString(cluster["uuid"]) || cluster["pool"] != "pool-sc-b" {
		t.Errorf("StorageCluster feedback %v", cluster)
	}
	var nodes []v1alpha2.StorageClusterNode
	if err := json.Unmarshal([]byte(cluster["nodes"]), &nodes); err != nil {
		t.Fatalf("nodes feedback %q: %v", cluster["nodes"], err)
	}
	var wantNodes []v1alpha2.StorageClusterNode
	for _, w := range []string{"worker-1", "worker-2", "worker-3"} {
		wantNodes = append(wantNodes, v1alpha2.StorageClusterNode{Name: "sc-b-" + w, Phase: v1alpha2.StorageOnline, Hostname: w})
	}
	if d := diff(wantNodes, nodes); d != "" {
		t.Errorf("nodes feedback:\n%s", d)
	}

	// On the site: the hub's sizing and approval, the simulator's nodeSets.
	var draft v1alpha2.ClusterDeploymentConfig
	if err := sc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "site-b"}, &draft); err != nil {
		t.Fatal(err)
	}
	if !draft.Spec.Approved || draft.Spec.Cluster.VCPUCount != 4 || draft.Spec.Cluster.Name != "sc-b" ||
		len(draft.Spec.NodeSets) != 1 || len(draft.Spec.NodeSets[0].Groups[0].Workers) != 3 {
		t.Errorf("draft on the site: %+v", draft.Spec)
	}
	if owned := ownedBy(&draft, "work-agent-hub-deploy"); !strings.Contains(owned, `"f:approved"`) || strings.Contains(owned, "nodeSets") {
		t.Errorf("work-agent-hub-deploy owns %s (managers %v)", owned, managersOf(&draft))
	}
	if m := managersOf(&draft); !slices.Contains(m, sitesim.FieldManager) {
		t.Errorf("draft managers %v", m)
	}
}

// waitWork waits until the cluster's work "storage" is applied and check accepts it.
func waitWork(t *testing.T, hub client.Client, spoke *testbed.Cluster, check func(*workv1.ManifestWork) error) {
	t.Helper()
	deadline := time.Now().Add(workConverge)
	var last error
	for time.Now().Before(deadline) {
		var w workv1.ManifestWork
		if last = hub.Get(t.Context(), types.NamespacedName{Namespace: spoke.Name, Name: "storage"}, &w); last == nil {
			if last = check(&w); last == nil {
				return
			}
			if c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied); c != nil && c.Status != metav1.ConditionTrue {
				last = fmt.Errorf("%w; Applied %s: %s", last, c.Reason, c.Message)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("work %s/storage: %v%s", spoke.Name, last, spoke.AgentLog())
}
