package storagework

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	sitev1alpha2 "github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
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
	yes, four := true, int64(4)
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
				str("nodeRefs.0", "w1"), str("nodeRefs.1", "w2"), str("nodeRefs.3", "after a gap: not read"),
				str("nodeSets.0.name", "set-a"), str("nodeSets.0.groups", "g"), raw("nodeSets.0.groups.0.nvme", `["nvme0n1"]`),
				str("nodeSets.0.groups.0.workers.0.2", "w1"), str("nodeSets.0.groups.0.workers.1.2", "w2"),
				str("cluster.name", "sc-1"), {Name: "cluster.vcpuCount", Value: workv1.FieldValue{Type: workv1.Integer, Integer: &four}}}}},
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
		len(d.NodeSets) != 1 || d.NodeSets[0].Name != "set-a" || d.NodeSets[0].Groups[0].Devices.NVMe[0] != "nvme0n1" ||
		!slices.Equal(d.NodeSets[0].Groups[0].Workers, []string{"w1", "w2"}) || len(d.Omitted) != 0 ||
		d.Cluster == nil || d.Cluster.Name != "sc-1" || d.Cluster.VCPUCount == nil || *d.Cluster.VCPUCount != 4 || d.Cluster.Stripe != nil {
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
	for _, paths := range [][]workv1.JsonPath{opsPaths, draftPaths(Draft{}), storagePaths} {
		for _, p := range paths {
			rules[p.Path] = true
		}
	}
	for _, whole := range []string{".status.nodeRefs", ".status.nodes", ".spec.nodeSets", ".spec.cluster"} {
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

// agentFeedback is what OCM's work agent reports for the draft manifest of w, whose site object is
// draft: its status reader (statusfeedback.StatusReader.GetValuesByRule) evaluated here with the
// same JSONPath library and rules: a missing key reports nothing, an index past a list's end is an
// error, one result is a scalar, several a JSON list, and a list or object over 1,024 bytes is
// dropped with an error. The errors make the manifest's StatusFeedbackSynced condition.
func agentFeedback(t *testing.T, w *workv1.ManifestWork, draft map[string]any) *workv1.ManifestWork {
	t.Helper()
	out := w.DeepCopy()
	out.Generation = 1
	var vals []workv1.FeedbackValue
	var errs []string
	for _, p := range w.Spec.ManifestConfigs[1].FeedbackRules[0].JsonPaths {
		j := jsonpath.New(p.Name).AllowMissingKeys(true)
		if err := j.Parse("{" + p.Path + "}"); err != nil {
			t.Fatalf("rule %s: %v", p.Name, err)
		}
		res, err := j.FindResults(draft)
		if err != nil {
			errs = append(errs, fmt.Sprintf("failed to find value for %s with error: %v", p.Name, err))
			continue
		}
		if len(res) == 0 || len(res[0]) == 0 {
			continue
		}
		var v any
		if len(res[0]) == 1 {
			v = res[0][0].Interface()
		} else {
			var list []any
			for _, r := range res[0] {
				list = append(list, r.Interface())
			}
			v = list
		}
		var fv workv1.FieldValue
		switch x := v.(type) {
		case string:
			fv = workv1.FieldValue{Type: workv1.String, String: &x}
		case int64:
			fv = workv1.FieldValue{Type: workv1.Integer, Integer: &x}
		case bool:
			fv = workv1.FieldValue{Type: workv1.Boolean, Boolean: &x}
		default:
			raw, _ := json.Marshal(x)
			if len(raw) > 1024 {
				errs = append(errs, fmt.Sprintf("the length of returned json raw string for name %s is larger than the maximum length 1024", p.Name))
				continue
			}
			s := string(raw)
			fv = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &s}
		}
		vals = append(vals, workv1.FeedbackValue{Name: p.Name, Value: fv})
	}
	mc := workv1.ManifestCondition{ResourceMeta: workv1.ManifestResourceMeta{Kind: "ClusterDeploymentConfig", Name: req.DraftName},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: vals},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1}}}
	if len(errs) > 0 {
		msg := "Sync status feedback failed with error [" + strings.Join(errs, ", ") + "]"
		if len(msg) > 32768 {
			t.Errorf("the agent's condition message is %d bytes, over metav1.Condition's 32,768: the agent could not write the status", len(msg))
		}
		mc.Conditions = append(mc.Conditions, metav1.Condition{Type: "StatusFeedbackSynced", Status: metav1.ConditionFalse, Message: msg})
	}
	out.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{mc}
	return out
}

// site is a draft of sets sets; set i has groups[i] groups, group j of workers[j%len(workers)]
// workers named name(k) and two NVMe devices.
func site(sets int, groups []int, workers []int, name func(int) string) (nodeSets []sitev1alpha2.NodeSet, refs []string) {
	k := 0
	for i := range sets {
		set := sitev1alpha2.NodeSet{Name: fmt.Sprintf("nodeset-%d", i+1)}
		for j := range groups[i%len(groups)] {
			g := sitev1alpha2.NodeGroup{Name: fmt.Sprintf("group-%d", j+1), Devices: sitev1alpha2.Devices{NVMe: []string{"0000:00:04.0", fmt.Sprintf("nvme%dn1", j)}}}
			for range workers[j%len(workers)] {
				g.Workers = append(g.Workers, name(k))
				refs = append(refs, name(k))
				k++
			}
			set.Groups = append(set.Groups, g)
		}
		nodeSets = append(nodeSets, set)
	}
	return nodeSets, refs
}

// TestDraftNodeSetsArriveWhole: the hub asks the site for the draft round by round (New from the
// last Read), as the controller does, through what the work agent reports; the node sets and the
// template arrive whole wherever OCM's 1,024 bytes allow, and what they do not allow is named in
// Omitted.
func TestDraftNodeSetsArriveWhole(t *testing.T) {
	cloud := func(k int) string { return fmt.Sprintf("ip-10-0-%d-%d.eu-central-1.compute.internal", k/10, 100+k) }
	long := func(k int) string { return fmt.Sprintf("%03d", k) + strings.Repeat("n", 250) }
	short := func(k int) string { return fmt.Sprintf("w%d", k) }
	for _, tc := range []struct {
		name             string
		sets             int
		groups, workers  []int
		node             func(int) string
		omitted          []string
		keepSets, groupN int // the bounds the hub reads to, when under the site's
	}{
		{name: "forty cloud-named nodes in one group", sets: 1, groups: []int{1}, workers: []int{40}, node: cloud},
		{name: "128 nodes of 253 characters in one group", sets: 1, groups: []int{1}, workers: []int{128}, node: long},
		{name: "three sets of uneven groups", sets: 3, groups: []int{1, 3, 2}, workers: []int{5, 1, 20}, node: cloud},
		{name: "one-worker groups", sets: 2, groups: []int{4}, workers: []int{1}, node: short},
		// 32 groups share MaxStrides: two strides each, and four names of 253 characters are over 1,024 bytes.
		{name: "thirty-two groups, four of eight long names", sets: 2, groups: []int{16}, workers: []int{8, 1, 1, 1, 1, 1, 1, 1}, node: long,
			omitted: []string{"nodeSets[0].groups[0].workers", "nodeSets[0].groups[8].workers", "nodeSets[1].groups[0].workers", "nodeSets[1].groups[8].workers"}},
		{name: "seventeen groups in a set", sets: 1, groups: []int{17}, workers: []int{1}, node: short, groupN: MaxGroups,
			omitted: []string{"nodeSets[0].groups[16:] (the hub reads 16 groups of a set)"}},
		{name: "nine sets", sets: 9, groups: []int{1}, workers: []int{2}, node: short, keepSets: MaxNodeSets,
			omitted: []string{"nodeSets[8:] (the hub reads 8 node sets)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets, refs := site(tc.sets, tc.groups, tc.workers, tc.node)
			if len(refs) > MaxNodes {
				refs = refs[:MaxNodes]
			}
			tmpl := sitev1alpha2.ClusterTemplate{Name: "sc-1", VCPUCount: 8, MaxSubsystemCount: 75, MinHugePagesSize: "16Gi", EnableJournalDevice: true,
				Stripe: &sitev1alpha2.Stripe{DataChunks: ptr.To[int32](4), ParityChunks: ptr.To[int32](2)}}
			draft, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&sitev1alpha2.ClusterDeploymentConfig{
				Spec:   sitev1alpha2.ClusterDeploymentConfigSpec{Cluster: tmpl, NodeSets: sets},
				Status: sitev1alpha2.ClusterDeploymentConfigStatus{Phase: sitev1alpha2.DraftDraft, NodeRefs: refs}})
			if err != nil {
				t.Fatal(err)
			}
			var rep Report
			rounds := 0
			for ; rounds < 5; rounds++ {
				w, err := New(req, rep)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(w.Spec.ManifestConfigs[1].FeedbackRules[0].JsonPaths); n > 2*MaxNodes+MaxNodeSets*(2+MaxGroups)+MaxStrides+20 {
					t.Errorf("%d draft rules", n)
				}
				next, err := Read(agentFeedback(t, w, draft))
				if err != nil {
					t.Fatal(err)
				}
				if equalJSON(next, rep) {
					break
				}
				rep = next
			}
			if rounds > 3 {
				t.Errorf("%d rounds to settle, want at most 3 (nodes, groups, workers)", rounds)
			}
			d := rep.Draft
			want := sets
			if tc.keepSets > 0 {
				want = want[:tc.keepSets]
			}
			if tc.groupN > 0 {
				for i := range want {
					want[i].Groups = want[i].Groups[:tc.groupN]
				}
			}
			for _, o := range tc.omitted { // an omitted group's workers come back as none
				var i, j int
				if _, err := fmt.Sscanf(o, "nodeSets[%d].groups[%d].workers", &i, &j); err == nil {
					want[i].Groups[j].Workers = nil
				}
			}
			if got, wantSets := toJSON(d.NodeSets), toJSON(want); got != wantSets {
				t.Errorf("node sets\n got %.600s\nwant %.600s", got, wantSets)
			}
			if !slices.Equal(d.Omitted, tc.omitted) {
				t.Errorf("omitted %q, want %q", d.Omitted, tc.omitted)
			}
			if !slices.Equal(d.NodeRefs, refs) {
				t.Errorf("%d node references, want %d", len(d.NodeRefs), len(refs))
			}
			c := d.Cluster
			if c == nil || c.Name != "sc-1" || *c.VCPUCount != 8 || *c.MaxSubsystemCount != 75 || c.MinHugePagesSize != "16Gi" ||
				(c.EnableDriveFormat != nil && *c.EnableDriveFormat) || c.EnableJournalDevice == nil || !*c.EnableJournalDevice || *c.Stripe.DataChunks != 4 || *c.Stripe.ParityChunks != 2 {
				t.Errorf("template %s", toJSON(c))
			}
		})
	}
}

func toJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

func equalJSON(a, b any) bool { return toJSON(a) == toJSON(b) }
