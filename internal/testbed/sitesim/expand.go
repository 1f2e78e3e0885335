package sitesim

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

// LabelCluster names a StorageNode's StorageCluster.
const LabelCluster = "storage.simplyblock.io/cluster"

// expander deploys approved drafts: Draft → Expanding (the step delay) → Expanded, creating the
// StorageCluster and one StorageNode per node the draft names. It writes only the draft's status.
type expander struct {
	c     client.Client
	delay time.Duration
	pace  *pacer
}

func (e *expander) setup(mgr ctrl.Manager) error {
	e.pace = newPacer(e.delay)
	return ctrl.NewControllerManagedBy(mgr).Named("sitesim-expand").For(&v1alpha2.ClusterDeploymentConfig{}).Complete(e)
}

func (e *expander) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := "draft/" + req.String()
	var draft v1alpha2.ClusterDeploymentConfig
	if err := e.c.Get(ctx, req.NamespacedName, &draft); err != nil {
		if apierrors.IsNotFound(err) {
			e.pace.forget(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !draft.Spec.Approved {
		return ctrl.Result{}, nil
	}
	before := draft.DeepCopy()
	switch draft.Status.Phase {
	case v1alpha2.DraftDraft:
		if len(draft.Status.NodeRefs) == 0 {
			draft.Status.Phase, draft.Status.Message = v1alpha2.DraftFailed, "approved, but the draft names no nodes"
		} else {
			draft.Status.Phase = v1alpha2.DraftExpanding
			draft.Status.Message = fmt.Sprintf("expanding storage cluster %s on %d nodes", clusterName(&draft), len(draft.Status.NodeRefs))
		}
	case v1alpha2.DraftExpanding:
		if left := e.pace.left(key, string(draft.Status.Phase)); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		if err := e.deploy(ctx, &draft); err != nil {
			return ctrl.Result{}, err
		}
		draft.Status.Phase, draft.Status.ClusterRef = v1alpha2.DraftExpanded, clusterName(&draft)
		draft.Status.Message = fmt.Sprintf("storage cluster %s created with %d nodes", clusterName(&draft), len(draft.Status.NodeRefs))
	default: // not yet written by discovery, Failed, or Expanded
		e.pace.forget(key)
		return ctrl.Result{}, nil
	}
	if err := e.c.Status().Patch(ctx, &draft, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, err
	}
	e.pace.enter(key, string(draft.Status.Phase))
	return ctrl.Result{RequeueAfter: e.delay}, nil
}

// clusterName is the StorageCluster's name: spec.cluster.name, else the draft's name.
func clusterName(draft *v1alpha2.ClusterDeploymentConfig) string {
	if draft.Spec.Cluster.Name != "" {
		return draft.Spec.Cluster.Name
	}
	return draft.Name
}

// deploy creates the draft's StorageNodes, then its StorageCluster; existing ones are kept.
func (e *expander) deploy(ctx context.Context, draft *v1alpha2.ClusterDeploymentConfig) error {
	name := clusterName(draft)
	devices := map[string][]string{}
	for _, set := range draft.Spec.NodeSets {
		for _, g := range set.Groups {
			for _, w := range g.Workers {
				devices[w] = g.Devices.NVMe
			}
		}
	}
	labels := map[string]string{LabelCluster: name}
	var objs []client.Object
	for _, node := range draft.Status.NodeRefs {
		objs = append(objs, &v1alpha2.StorageNode{
			ObjectMeta: metav1.ObjectMeta{Namespace: draft.Namespace, Name: name + "-" + node, Labels: labels},
			Spec:       v1alpha2.StorageNodeSpec{ClusterRef: name, NodeName: node, Devices: v1alpha2.Devices{NVMe: devices[node]}},
		})
	}
	template := draft.Spec.Cluster
	template.Name = name
	objs = append(objs, &v1alpha2.StorageCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: draft.Namespace, Name: name, Labels: labels},
		Spec:       v1alpha2.StorageClusterSpec{ConfigRef: draft.Name, ClusterTemplate: template},
	})
	for _, obj := range objs {
		if err := e.c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}
