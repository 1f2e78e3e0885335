package storagework

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

var req = Request{Namespace: "storage", Name: "site-a", Cluster: "eu-01", SiteNamespace: "simplyblock", DraftName: "site-draft",
	Discover: map[string]any{"workers": []any{"w1", "w2"}}, Sizing: map[string]any{"vcpuCount": 4, "minHugePagesSize": "8G"}}

func manifests(t *testing.T, w *workv1.ManifestWork) (kinds []string, objs []map[string]any) {
	t.Helper()
	for _, m := range w.Spec.Workload.Manifests {
		var o map[string]any
		if err := json.Unmarshal(m.Raw, &o); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, o["kind"].(string))
		objs = append(objs, o)
	}
	return kinds, objs
}

func TestNewFollowsTheSite(t *testing.T) {
	// Before the draft names nodes: the discovery, and the draft read-only.
	w, err := New(req, Report{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "sbsd.storage.site-a" || w.Namespace != "eu-01" || w.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan {
		t.Errorf("work %s/%s delete %v", w.Namespace, w.Name, w.Spec.DeleteOption)
	}
	if got := w.Annotations["fleet.umkim.io/owner"]; got != "storage/site-a" {
		t.Errorf("owner annotation %q, want storage/site-a", got)
	}
	kinds, objs := manifests(t, w)
	if !slices.Equal(kinds, []string{"OperatorOps", "ClusterDeploymentConfig"}) {
		t.Fatalf("kinds %v", kinds)
	}
	spec := objs[0]["spec"].(map[string]any)
	if d := spec["discover"].(map[string]any); spec["action"] != "Discover" || d["configName"] != "site-draft" || len(d["workers"].([]any)) != 2 {
		t.Errorf("discovery %v", spec)
	}
	if s := w.Spec.ManifestConfigs[1].UpdateStrategy; s == nil || s.Type != workv1.UpdateStrategyTypeReadOnly || objs[1]["spec"] != nil {
		t.Errorf("draft before nodes: strategy %v spec %v", s, objs[1]["spec"])
	}

	// The draft names nodes: sizing applied with hub-deploy; not approved yet, so approved is not owned.
	w, _ = New(req, Report{Draft: Draft{Exists: true, NodeRefs: []string{"w1"}}})
	_, objs = manifests(t, w)
	s := w.Spec.ManifestConfigs[1].UpdateStrategy
	if s.Type != workv1.UpdateStrategyTypeServerSideApply || s.ServerSideApply.FieldManager != "work-agent-hub-deploy" {
		t.Errorf("draft strategy %+v", s)
	}
	dspec := objs[1]["spec"].(map[string]any)
	if _, ok := dspec["approved"]; ok || dspec["cluster"].(map[string]any)["minHugePagesSize"] != "8G" || dspec["nodeSets"] != nil {
		t.Errorf("draft spec %v: want the sizing only", dspec)
	}

	// Approved, and the draft names its storage cluster: approval applied, the cluster read.
	approved := req
	approved.Approved = true
	w, _ = New(approved, Report{Draft: Draft{Exists: true, NodeRefs: []string{"w1"}, ClusterRef: "sc-1"}})
	kinds, objs = manifests(t, w)
	if !slices.Equal(kinds, []string{"OperatorOps", "ClusterDeploymentConfig", "StorageCluster"}) || objs[1]["spec"].(map[string]any)["approved"] != true {
		t.Errorf("kinds %v draft %v", kinds, objs[1])
	}
	if w.Spec.ManifestConfigs[2].UpdateStrategy.Type != workv1.UpdateStrategyTypeReadOnly {
		t.Error("the storage cluster is not read-only")
	}

	// A changed discovery is a new run; sizing and approval are not.
	changed := req
	changed.Discover = map[string]any{"workers": []any{"w1"}}
	if RunName(changed) == RunName(req) || RunName(approved) != RunName(req) {
		t.Errorf("run names: %s %s %s", RunName(req), RunName(changed), RunName(approved))
	}
}

func TestRead(t *testing.T) {
	str := func(name, v string) workv1.FeedbackValue {
		return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: &v}}
	}
	raw := func(name, v string) workv1.FeedbackValue {
		return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &v}}
	}
	yes := true
	applied := func(gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, ObservedGeneration: gen}}
	}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "OperatorOps", Name: "hub-discover-1"}, Conditions: applied(3),
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{str("phase", "Completed"), str("configRef", "site-draft")}}},
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "ClusterDeploymentConfig", Name: "site-draft"}, Conditions: applied(3),
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{str("phase", "Expanded"), str("clusterRef", "sc-1"),
				{Name: "approved", Value: workv1.FieldValue{Type: workv1.Boolean, Boolean: &yes}},
				str("nodeRefs.0", "w1"), str("nodeRefs.1", "w2"), str("nodeRefs.3", "after a gap: not read"), raw("nodeSets", `[{"name":"set-a","groups":[{"name":"g","workers":["w1"],"devices":{"nvme":["nvme0n1"]}}]}]`),
				raw("cluster", `{"name":"sc-1","vcpuCount":4}`)}}},
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "StorageCluster", Name: "sc-1"}, Conditions: applied(3),
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{str("phase", "Online"), str("uuid", "u-1"), str("pool", "pool-sc-1"),
				raw("nodes.0", `{"name":"w1","phase":"Online","hostname":"w1.local"}`)}}},
	}
	rep, err := Read(w)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Delivered || rep.Run.Phase != "Completed" || rep.Run.ConfigRef != "site-draft" {
		t.Errorf("run %+v delivered %v", rep.Run, rep.Delivered)
	}
	d := rep.Draft
	if !d.Exists || d.Phase != "Expanded" || !d.Approved || !slices.Equal(d.NodeRefs, []string{"w1", "w2"}) || d.ClusterRef != "sc-1" ||
		len(d.NodeSets) != 1 || d.NodeSets[0].Groups[0].Devices.NVMe[0] != "nvme0n1" || d.Cluster == nil || d.Cluster.VCPUCount == nil || *d.Cluster.VCPUCount != 4 {
		t.Errorf("draft %+v", d)
	}
	if s := rep.Storage; s.Phase != "Online" || s.UUID != "u-1" || s.Pool != "pool-sc-1" || len(s.Nodes) != 1 || s.Nodes[0].Hostname != "w1.local" {
		t.Errorf("storage %+v", s)
	}

	// The work changed since the site applied it: not delivered at this generation.
	w.Generation = 4
	if rep, _ := Read(w); rep.Delivered {
		t.Error("delivered at an older generation counts")
	}
}

// TestFeedbackIsBounded: no feedback rule returns a list that grows with the site; the node
// lists come back one item per rule, all MaxNodes of them.
func TestFeedbackIsBounded(t *testing.T) {
	var w workv1.ManifestWork
	rules := map[string]bool{}
	for _, paths := range [][]workv1.JsonPath{opsPaths, draftPaths, storagePaths} {
		for _, p := range paths {
			rules[p.Path] = true
		}
	}
	for _, whole := range []string{".status.nodeRefs", ".status.nodes"} {
		if rules[whole] {
			t.Errorf("a rule reads %s whole", whole)
		}
	}
	if !rules[".status.nodes[127]"] || !rules[".status.nodeRefs[127]"] || rules[".status.nodes[128]"] {
		t.Errorf("rules do not reach item %d exactly", MaxNodes-1)
	}
	// A site of MaxNodes nodes reads back complete.
	var vals []workv1.FeedbackValue
	for i := range MaxNodes {
		v := fmt.Sprintf(`{"name":"n%d","phase":"Online"}`, i)
		vals = append(vals, workv1.FeedbackValue{Name: fmt.Sprintf("nodes.%d", i), Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &v}})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{ResourceMeta: workv1.ManifestResourceMeta{Kind: "StorageCluster", Name: "sc"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: vals}}}
	rep, err := Read(&w)
	if err != nil || len(rep.Storage.Nodes) != MaxNodes || rep.Storage.Nodes[MaxNodes-1].Name != fmt.Sprintf("n%d", MaxNodes-1) {
		t.Errorf("read %d nodes (%v), want %d", len(rep.Storage.Nodes), err, MaxNodes)
	}
}
