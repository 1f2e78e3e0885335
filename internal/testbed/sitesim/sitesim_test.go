package sitesim_test

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr/testr"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

const (
	ns       = sitesim.DefaultNamespace
	step     = 200 * time.Millisecond
	converge = 20 * time.Second
)

// phaseLog records, from a watch, the phases each object of a kind went through in order.
type phaseLog struct {
	mu     sync.Mutex
	phases map[string][]string
}

func watchPhases(t *testing.T, c client.WithWatch, list client.ObjectList) *phaseLog {
	t.Helper()
	w, err := c.Watch(t.Context(), list, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	l := &phaseLog{phases: map[string][]string{}}
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(interface{ GetName() string })
			if !ok {
				continue
			}
			phase := ""
			switch o := ev.Object.(type) {
			case *v1alpha2.OperatorOps:
				phase = string(o.Status.Phase)
			case *v1alpha2.ClusterDeploymentConfig:
				phase = string(o.Status.Phase)
			}
			l.mu.Lock()
			if seen := l.phases[u.GetName()]; phase != "" && (len(seen) == 0 || seen[len(seen)-1] != phase) {
				l.phases[u.GetName()] = append(seen, phase)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *phaseLog) of(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.phases[name])
}

// eventually retries check until it returns nil or converge passes.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, converge, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

func discover(t *testing.T, c client.Client, name string, spec v1alpha2.DiscoverSpec) {
	t.Helper()
	ops := &v1alpha2.OperatorOps{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha2.OperatorOpsSpec{Action: v1alpha2.ActionDiscover, Discover: &spec},
	}
	if err := c.Create(t.Context(), ops); err != nil {
		t.Fatal(err)
	}
}

// finished waits until the run is Completed or Failed and returns it.
func finished(t *testing.T, c client.Client, name string) *v1alpha2.OperatorOps {
	t.Helper()
	var ops v1alpha2.OperatorOps
	eventually(t, "OperatorOps "+name+" finished", func() error {
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &ops); err != nil {
			return err
		}
		if p := ops.Status.Phase; p != v1alpha2.OpsCompleted && p != v1alpha2.OpsFailed {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
	return &ops
}

// field reads a field of the kind's object as the hub's status feedback would, by path.
func field(t *testing.T, c client.Client, kind, name string, path ...string) any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(kind))
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !found {
		t.Fatalf("%s %s: no %s (%v)", kind, name, strings.Join(path, "."), err)
	}
	return v
}

// applyDraft applies spec onto the draft with server-side apply as the hub's work does
// (field manager hub-deploy).
func applyDraft(ctx context.Context, c client.Client, name string, spec map[string]any, force bool) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha2.GroupVersion.String(), "kind": "ClusterDeploymentConfig",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	opts := []client.PatchOption{client.FieldOwner("hub-deploy")}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return c.Patch(ctx, u, client.Apply, opts...) //nolint:staticcheck // unstructured apply
}

func TestSiteSimulator(t *testing.T) {
	begin := time.Now()
	site := testbed.StartT(t) // a bare kube-apiserver and etcd, as a workload cluster's
	t.Logf("API server started in %v", time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	stop, err := sitesim.Start(t.Context(), site.Config, sitesim.Options{StepDelay: step, Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("simulator installed and started in %v", time.Since(begin).Round(time.Millisecond))
	c, err := client.NewWithWatch(site.Config, client.Options{Scheme: sitesim.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	opsPhases := watchPhases(t, c, &v1alpha2.OperatorOpsList{})
	draftPhases := watchPhases(t, c, &v1alpha2.ClusterDeploymentConfigList{})

	if err := sitesim.CreateNodes(ctx, c,
		sitesim.Node{Name: "cp-1", ControlPlane: true},
		sitesim.Node{Name: "worker-1"},
		sitesim.Node{Name: "worker-2", Devices: []string{"nvme0n1", "nvme1n1", "nvme2n1"}},
	); err != nil {
		t.Fatal(err)
	}
	if err := sitesim.Nodes(ctx, c, "worker-3"); err != nil {
		t.Fatal(err)
	}

	var role rbacv1.ClusterRole
	if err := c.Get(ctx, client.ObjectKey{Name: sitesim.WorkClusterRole}, &role); err != nil {
		t.Fatal(err)
	}
	if role.Labels["open-cluster-management.io/aggregate-to-work"] != "true" || len(role.Rules) != 1 || len(role.Rules[0].Resources) != 4 {
		t.Errorf("ClusterRole %s: labels %v, rules %+v", role.Name, role.Labels, role.Rules)
	}

	// Discovery of every worker: the phases in order, then the draft naming the workers and
	// their devices, the control-plane node left out.
	begin = time.Now()
	discover(t, c, "discover-1", v1alpha2.DiscoverSpec{ConfigName: "site-a"})
	ops := finished(t, c, "discover-1")
	t.Logf("discovery finished in %v", time.Since(begin).Round(time.Millisecond))
	eventually(t, "the watch saw discover-1 complete", func() error {
		if got := opsPhases.of("discover-1"); len(got) == 0 || got[len(got)-1] != "Completed" {
			return fmt.Errorf("phases %v", got)
		}
		return nil
	})
	if diff := diff([]string{"Inspecting", "Probing", "Writing", "Completed"}, opsPhases.of("discover-1")); diff != "" {
		t.Errorf("discover-1 phases (want, got):\n%s", diff)
	}
	if ops.Status.ConfigRef != "site-a" || ops.Status.Message != "ClusterDeploymentConfig site-a names 3 nodes" {
		t.Errorf("discover-1 status: %+v", ops.Status)
	}
	if got := field(t, c, "OperatorOps", "discover-1", "status", "configRef"); got != "site-a" {
		t.Errorf("status.configRef: %v", got)
	}
	var draft v1alpha2.ClusterDeploymentConfig
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "site-a"}, &draft); err != nil {
		t.Fatal(err)
	}
	wantNodeSets := []v1alpha2.NodeSet{{Name: "nodeset-1", Groups: []v1alpha2.NodeGroup{
		{Name: "group-1", Workers: []string{"worker-1", "worker-3"}, Devices: v1alpha2.Devices{NVMe: []string{"nvme0n1", "nvme1n1"}}},
		{Name: "group-2", Workers: []string{"worker-2"}, Devices: v1alpha2.Devices{NVMe: []string{"nvme0n1", "nvme1n1", "nvme2n1"}}},
	}}}
	wantDraft := v1alpha2.ClusterDeploymentConfigSpec{
		Cluster: v1alpha2.ClusterTemplate{Name: "site-a", VCPUCount: 4, MaxSubsystemCount: 10, MinHugePagesSize: "2G",
			Stripe: &v1alpha2.Stripe{DataChunks: ptr.To[int32](1), ParityChunks: ptr.To[int32](1)}},
		NodeSets: wantNodeSets,
	}
	if diff := diff(wantDraft, draft.Spec); diff != "" {
		t.Errorf("draft spec (want, got):\n%s", diff)
	}
	if diff := diff(v1alpha2.ClusterDeploymentConfigStatus{Phase: "Draft", NodeRefs: []string{"worker-1", "worker-2", "worker-3"}}, draft.Status); diff != "" {
		t.Errorf("draft status (want, got):\n%s", diff)
	}
	if got := field(t, c, "ClusterDeploymentConfig", "site-a", "status", "nodeRefs"); !reflect.DeepEqual(got, []any{"worker-1", "worker-2", "worker-3"}) {
		t.Errorf("status.nodeRefs: %v", got)
	}
	if managers := managersOf(&draft); !slices.Contains(managers, sitesim.FieldManager) {
		t.Errorf("draft's field managers %v lack %s", managers, sitesim.FieldManager)
	}

	// A node that fails probing fails the draft and the run, naming the node and the reason.
	if err := sitesim.CreateNodes(ctx, c, sitesim.Node{Name: "bad-1", Fail: "nvme-timeout"}); err != nil {
		t.Fatal(err)
	}
	discover(t, c, "discover-fail", v1alpha2.DiscoverSpec{ConfigName: "site-fail", Workers: []string{"worker-1", "bad-1"}})
	ops = finished(t, c, "discover-fail")
	const failMsg = "node bad-1 failed probing: nvme-timeout"
	if ops.Status.Phase != v1alpha2.OpsFailed || ops.Status.Message != failMsg || ops.Status.ConfigRef != "site-fail" {
		t.Errorf("discover-fail status: %+v", ops.Status)
	}
	if got := field(t, c, "ClusterDeploymentConfig", "site-fail", "status", "phase"); got != "Failed" {
		t.Errorf("site-fail status.phase: %v", got)
	}
	if got := field(t, c, "ClusterDeploymentConfig", "site-fail", "status", "message"); got != failMsg {
		t.Errorf("site-fail status.message: %v", got)
	}

	// A new run with the same configName rewrites the unapproved draft.
	discover(t, c, "discover-fail-2", v1alpha2.DiscoverSpec{ConfigName: "site-fail", Workers: []string{"worker-1"}})
	if ops = finished(t, c, "discover-fail-2"); ops.Status.Phase != v1alpha2.OpsCompleted {
		t.Errorf("discover-fail-2 status: %+v", ops.Status)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "site-fail"}, &draft); err != nil {
		t.Fatal(err)
	}
	if draft.Status.Phase != "Draft" || draft.Status.Message != "" || !slices.Equal(draft.Status.NodeRefs, []string{"worker-1"}) ||
		len(draft.Spec.NodeSets) != 1 || !slices.Equal(draft.Spec.NodeSets[0].Groups[0].Workers, []string{"worker-1"}) {
		t.Errorf("rewritten draft site-fail: spec %+v status %+v", draft.Spec, draft.Status)
	}
	if diff := diff([]string{"Failed", "Draft"}, draftPhases.of("site-fail")); diff != "" {
		t.Errorf("site-fail phases (want, got):\n%s", diff)
	}

	// Control-plane nodes on request, with a node selector; no configName: named after the run.
	discover(t, c, "discover-cp", v1alpha2.DiscoverSpec{EnableControlPlaneNodes: true,
		NodeSelector: map[string]string{"kubernetes.io/hostname": "cp-1"}})
	if ops = finished(t, c, "discover-cp"); ops.Status.Phase != v1alpha2.OpsCompleted || ops.Status.ConfigRef != "discover-cp" {
		t.Errorf("discover-cp status: %+v", ops.Status)
	}
	if got := field(t, c, "ClusterDeploymentConfig", "discover-cp", "status", "nodeRefs"); !reflect.DeepEqual(got, []any{"cp-1"}) {
		t.Errorf("discover-cp status.nodeRefs: %v", got)
	}

	// The hub's sizing, applied with server-side apply as hub-deploy. The draft's template is
	// the simulator's: a sizing that differs conflicts unless forced, as with the operator.
	sizing := map[string]any{"name": "sc-a", "vcpuCount": int64(8), "maxSubsystemCount": int64(12), "minHugePagesSize": "4G",
		"enableDriveFormat": true, "stripe": map[string]any{"dataChunks": int64(2), "parityChunks": int64(1)}}
	err = applyDraft(ctx, c, "site-a", map[string]any{"cluster": sizing}, false)
	if !apierrors.IsConflict(err) {
		t.Errorf("unforced apply of a differing sizing: %v, want a conflict", err)
	} else {
		t.Logf("unforced apply: %v", err)
	}
	if err := applyDraft(ctx, c, "site-a", map[string]any{"cluster": sizing}, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * step) // the simulator leaves an unapproved draft alone
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "site-a"}, &draft); err != nil {
		t.Fatal(err)
	}
	if draft.Status.Phase != "Draft" || !reflect.DeepEqual(draft.Spec.NodeSets, wantNodeSets) {
		t.Errorf("sized draft: spec %+v status %+v", draft.Spec, draft.Status)
	}

	// Approval: Expanding → Expanded, the StorageCluster Online with uuid, pool and nodes.
	begin = time.Now()
	if err := applyDraft(ctx, c, "site-a", map[string]any{"cluster": sizing, "approved": true}, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, "StorageCluster sc-a Online", func() error {
		if got := field(t, c, "ClusterDeploymentConfig", "site-a", "status", "phase"); got != "Expanded" {
			return fmt.Errorf("draft phase %v", got)
		}
		var sc v1alpha2.StorageCluster
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sc-a"}, &sc); err != nil {
			return err
		}
		if sc.Status.Phase != v1alpha2.StorageOnline {
			return fmt.Errorf("StorageCluster phase %q", sc.Status.Phase)
		}
		return nil
	})
	t.Logf("approval to Online in %v", time.Since(begin).Round(time.Millisecond))
	if diff := diff([]string{"Draft", "Expanding", "Expanded"}, draftPhases.of("site-a")); diff != "" {
		t.Errorf("site-a phases (want, got):\n%s", diff)
	}
	if got := field(t, c, "ClusterDeploymentConfig", "site-a", "status", "clusterRef"); got != "sc-a" {
		t.Errorf("status.clusterRef: %v", got)
	}
	id, _ := field(t, c, "StorageCluster", "sc-a", "status", "uuid").(string)
	if !uuidPattern.MatchString(id) {
		t.Errorf("status.uuid %q is not a UUID", id)
	}
	if got := field(t, c, "StorageCluster", "sc-a", "status", "pool"); got != "pool-sc-a" {
		t.Errorf("status.pool: %v", got)
	}
	wantNodes := []any{}
	for _, w := range []string{"worker-1", "worker-2", "worker-3"} {
		wantNodes = append(wantNodes, map[string]any{"name": "sc-a-" + w, "phase": "Online", "hostname": w})
	}
	if diff := diff(wantNodes, field(t, c, "StorageCluster", "sc-a", "status", "nodes")); diff != "" {
		t.Errorf("StorageCluster status.nodes (want, got):\n%s", diff)
	}
	for _, w := range []string{"worker-1", "worker-2", "worker-3"} {
		if got := field(t, c, "StorageNode", "sc-a-"+w, "spec", "clusterRef"); got != "sc-a" {
			t.Errorf("StorageNode sc-a-%s spec.clusterRef: %v", w, got)
		}
		if got := field(t, c, "StorageNode", "sc-a-"+w, "status", "phase"); got != "Online" {
			t.Errorf("StorageNode sc-a-%s status.phase: %v", w, got)
		}
		if got := field(t, c, "StorageNode", "sc-a-"+w, "status", "hostname"); got != w {
			t.Errorf("StorageNode sc-a-%s status.hostname: %v", w, got)
		}
	}

	// The hub's sizing is kept on the draft and deployed; nodeSets are the simulator's.
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "site-a"}, &draft); err != nil {
		t.Fatal(err)
	}
	wantSizing := v1alpha2.ClusterTemplate{Name: "sc-a", VCPUCount: 8, MaxSubsystemCount: 12, MinHugePagesSize: "4G",
		EnableDriveFormat: true, Stripe: &v1alpha2.Stripe{DataChunks: ptr.To[int32](2), ParityChunks: ptr.To[int32](1)}}
	if diff := diff(v1alpha2.ClusterDeploymentConfigSpec{Approved: true, Cluster: wantSizing, NodeSets: wantNodeSets}, draft.Spec); diff != "" {
		t.Errorf("approved draft spec (want, got):\n%s", diff)
	}
	if owned := ownedBy(&draft, "hub-deploy"); !strings.Contains(owned, `"f:vcpuCount"`) || !strings.Contains(owned, `"f:approved"`) || strings.Contains(owned, "nodeSets") {
		t.Errorf("hub-deploy owns %s", owned)
	}
	if owned := ownedBy(&draft, sitesim.FieldManager); strings.Contains(owned, "vcpuCount") || strings.Contains(owned, "approved") {
		t.Errorf("%s still owns sizing or approval: %s", sitesim.FieldManager, owned)
	}
	var sc v1alpha2.StorageCluster
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sc-a"}, &sc); err != nil {
		t.Fatal(err)
	}
	if diff := diff(v1alpha2.StorageClusterSpec{ConfigRef: "site-a", ClusterTemplate: wantSizing}, sc.Spec); diff != "" {
		t.Errorf("StorageCluster spec (want, got):\n%s", diff)
	}

	// Approval is one-way on the API server; discovery does not rewrite an approved draft.
	err = applyDraft(ctx, c, "site-a", map[string]any{"cluster": sizing, "approved": false}, true)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "one-way") {
		t.Errorf("un-approving: %v, want the CEL rule's rejection", err)
	}
	discover(t, c, "discover-2", v1alpha2.DiscoverSpec{ConfigName: "site-a"})
	if ops = finished(t, c, "discover-2"); ops.Status.Phase != v1alpha2.OpsFailed || !strings.Contains(ops.Status.Message, "approved") {
		t.Errorf("discover-2 on the approved draft: %+v", ops.Status)
	}
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// diff is empty when want and got are deeply equal, else shows both.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("want %+v\ngot  %+v", want, got)
}

func managersOf(obj metav1.Object) []string {
	var names []string
	for _, e := range obj.GetManagedFields() {
		names = append(names, e.Manager)
	}
	return names
}

// ownedBy returns the fields manager owns in obj's spec, as managedFields' JSON.
func ownedBy(obj metav1.Object, manager string) string {
	var owned []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Subresource == "" && e.FieldsV1 != nil {
			owned = append(owned, string(e.FieldsV1.GetRawBytes()))
		}
	}
	return strings.Join(owned, " ")
}
