package sitesim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

// discoverer runs Discover OperatorOps: Inspecting → Probing → Writing, each lasting the step
// delay, then writes the draft and ends Completed, or Failed when a Node fails probing or the
// draft is already approved.
type discoverer struct {
	c     client.Client
	delay time.Duration
	pace  *pacer
}

func (d *discoverer) setup(mgr ctrl.Manager) error {
	d.pace = newPacer(d.delay)
	return ctrl.NewControllerManagedBy(mgr).Named("sitesim-discover").For(&v1alpha2.OperatorOps{}).Complete(d)
}

// next is the phase after each running phase, and what the run does in it.
var next = map[v1alpha2.OperatorOpsPhase]struct {
	phase v1alpha2.OperatorOpsPhase
	step  string
}{
	"":                     {v1alpha2.OpsInspecting, "inspecting the cluster's nodes"},
	v1alpha2.OpsInspecting: {v1alpha2.OpsProbing, "probing the nodes' NVMe devices"},
	v1alpha2.OpsProbing:    {v1alpha2.OpsWriting, "writing the ClusterDeploymentConfig"},
}

func (d *discoverer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := "ops/" + req.String()
	var ops v1alpha2.OperatorOps
	if err := d.c.Get(ctx, req.NamespacedName, &ops); err != nil {
		if apierrors.IsNotFound(err) {
			d.pace.forget(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	phase := ops.Status.Phase
	if phase == v1alpha2.OpsCompleted || phase == v1alpha2.OpsFailed {
		d.pace.forget(key)
		return ctrl.Result{}, nil
	}
	if left := d.pace.left(key, string(phase)); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	before := ops.DeepCopy()
	if n, ok := next[phase]; ok {
		ops.Status.Phase, ops.Status.Step = n.phase, n.step
	} else { // Writing: the run's result
		ops.Status.Step = ""
		ops.Status.Phase, ops.Status.ConfigRef, ops.Status.Message = d.write(ctx, &ops)
	}
	if err := d.c.Status().Patch(ctx, &ops, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, err
	}
	d.pace.enter(key, string(ops.Status.Phase))
	return ctrl.Result{RequeueAfter: d.delay}, nil
}

// write writes the run's draft and returns the run's final phase, the draft's name and a message.
func (d *discoverer) write(ctx context.Context, ops *v1alpha2.OperatorOps) (v1alpha2.OperatorOpsPhase, string, string) {
	spec := v1alpha2.DiscoverSpec{}
	if ops.Spec.Discover != nil {
		spec = *ops.Spec.Discover
	}
	name := spec.ConfigName
	if name == "" {
		name = ops.Name
	}
	if ops.Spec.Action != v1alpha2.ActionDiscover {
		return v1alpha2.OpsFailed, "", fmt.Sprintf("action %q is not simulated", ops.Spec.Action)
	}
	var nodes corev1.NodeList
	if err := d.c.List(ctx, &nodes); err != nil {
		return v1alpha2.OpsFailed, name, "listing nodes: " + err.Error()
	}
	found := discover(nodes.Items, spec)

	var draft v1alpha2.ClusterDeploymentConfig
	err := d.c.Get(ctx, types.NamespacedName{Namespace: ops.Namespace, Name: name}, &draft)
	switch {
	case apierrors.IsNotFound(err):
		draft = v1alpha2.ClusterDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ops.Namespace, Name: name},
			Spec:       v1alpha2.ClusterDeploymentConfigSpec{Cluster: defaultTemplate(name), NodeSets: found.nodeSets},
		}
		err = d.c.Create(ctx, &draft)
	case err != nil:
	case draft.Spec.Approved || draft.Status.Phase == v1alpha2.DraftExpanding || draft.Status.Phase == v1alpha2.DraftExpanded:
		return v1alpha2.OpsFailed, name, fmt.Sprintf("ClusterDeploymentConfig %s is approved: discovery does not rewrite it", name)
	case !equalJSON(draft.Spec.NodeSets, found.nodeSets):
		// Only nodeSets: the hub owns the rest of the spec.
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"nodeSets": found.nodeSets}})
		err = d.c.Patch(ctx, &draft, client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		return v1alpha2.OpsFailed, name, fmt.Sprintf("writing ClusterDeploymentConfig %s: %v", name, err)
	}

	before := draft.DeepCopy()
	draft.Status = v1alpha2.ClusterDeploymentConfigStatus{Phase: v1alpha2.DraftDraft, Message: found.message(), NodeRefs: found.nodes}
	if len(found.failures) > 0 {
		draft.Status.Phase = v1alpha2.DraftFailed
	}
	if err := d.c.Status().Patch(ctx, &draft, client.MergeFrom(before)); err != nil {
		return v1alpha2.OpsFailed, name, fmt.Sprintf("writing ClusterDeploymentConfig %s status: %v", name, err)
	}
	if len(found.failures) > 0 {
		return v1alpha2.OpsFailed, name, found.message()
	}
	return v1alpha2.OpsCompleted, name, fmt.Sprintf("ClusterDeploymentConfig %s names %d nodes", name, len(found.nodes))
}

// defaultTemplate is the sizing a new draft proposes; the hub's sizing replaces it.
func defaultTemplate(name string) v1alpha2.ClusterTemplate {
	return v1alpha2.ClusterTemplate{
		Name: name, VCPUCount: 4, MaxSubsystemCount: 10, MinHugePagesSize: "2G",
		Stripe: &v1alpha2.Stripe{DataChunks: ptr.To[int32](1), ParityChunks: ptr.To[int32](1)},
	}
}

// discovery is what a run found.
type discovery struct {
	nodes    []string // Node names the draft names, sorted
	nodeSets []v1alpha2.NodeSet
	failures []string // "node <name>: <reason>"
	notes    []string // other findings
}

// message joins the findings for status.message.
func (f discovery) message() string {
	return strings.Join(append(slices.Clone(f.failures), f.notes...), "; ")
}

// discover selects the workers spec asks for from nodes, probes them (LabelFail) and groups
// them by device list into one node set.
func discover(nodes []corev1.Node, spec v1alpha2.DiscoverSpec) discovery {
	var f discovery
	groups := map[string]*v1alpha2.NodeGroup{}
	var order []string
	seen := map[string]bool{}
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for i := range nodes {
		n := &nodes[i]
		seen[n.Name] = true
		if !selected(n, spec) {
			continue
		}
		if reason, ok := n.Labels[LabelFail]; ok {
			f.failures = append(f.failures, fmt.Sprintf("node %s failed probing: %s", n.Name, reason))
			continue
		}
		devices := devicesOf(n)
		if len(devices) == 0 {
			f.notes = append(f.notes, fmt.Sprintf("node %s has no NVMe devices and is left out", n.Name))
			continue
		}
		f.nodes = append(f.nodes, n.Name)
		layout := strings.Join(devices, ",")
		g, ok := groups[layout]
		if !ok {
			g = &v1alpha2.NodeGroup{Name: fmt.Sprintf("group-%d", len(groups)+1), Devices: v1alpha2.Devices{NVMe: devices}}
			groups[layout] = g
			order = append(order, layout)
		}
		g.Workers = append(g.Workers, n.Name)
	}
	for _, w := range spec.Workers {
		if !seen[w] {
			f.notes = append(f.notes, fmt.Sprintf("worker %s not found", w))
		}
	}
	if len(f.nodes) == 0 && len(f.failures) == 0 {
		f.notes = append(f.notes, "no worker node matched")
	}
	if len(order) > 0 {
		set := v1alpha2.NodeSet{Name: "nodeset-1"}
		for _, layout := range order {
			set.Groups = append(set.Groups, *groups[layout])
		}
		f.nodeSets = []v1alpha2.NodeSet{set}
	}
	return f
}

// selected tells whether a run with spec inspects n.
func selected(n *corev1.Node, spec v1alpha2.DiscoverSpec) bool {
	if _, cp := n.Labels[LabelControlPlane]; cp && !spec.EnableControlPlaneNodes {
		return false
	}
	if len(spec.Workers) > 0 && !slices.Contains(spec.Workers, n.Name) {
		return false
	}
	for k, v := range spec.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
