package sitesim

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

// nodeStarter starts StorageNodes: Pending (the step delay) → Online, with the host's name.
type nodeStarter struct {
	c     client.Client
	delay time.Duration
	pace  *pacer
}

func (s *nodeStarter) setup(mgr ctrl.Manager) error {
	s.pace = newPacer(s.delay)
	return ctrl.NewControllerManagedBy(mgr).Named("sitesim-storagenode").For(&v1alpha2.StorageNode{}).Complete(s)
}

func (s *nodeStarter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := "storagenode/" + req.String()
	var sn v1alpha2.StorageNode
	if err := s.c.Get(ctx, req.NamespacedName, &sn); err != nil {
		if apierrors.IsNotFound(err) {
			s.pace.forget(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := sn.DeepCopy()
	switch sn.Status.Phase {
	case "":
		sn.Status.Phase, sn.Status.Hostname = v1alpha2.StoragePending, sn.Spec.NodeName
		var node corev1.Node
		if err := s.c.Get(ctx, types.NamespacedName{Name: sn.Spec.NodeName}, &node); err == nil {
			sn.Status.Hostname = hostnameOf(&node)
		}
	case v1alpha2.StoragePending:
		if left := s.pace.left(key, string(sn.Status.Phase)); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		sn.Status.Phase = v1alpha2.StorageOnline
	default:
		s.pace.forget(key)
		return ctrl.Result{}, nil
	}
	if err := s.c.Status().Patch(ctx, &sn, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, err
	}
	s.pace.enter(key, string(sn.Status.Phase))
	return ctrl.Result{RequeueAfter: s.delay}, nil
}

// clusterReporter keeps a StorageCluster's status: a uuid and pool once, the summary of its
// StorageNodes, and Online once every node its draft names is Online.
type clusterReporter struct {
	c client.Client
}

func (r *clusterReporter) setup(mgr ctrl.Manager) error {
	toCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		sn := obj.(*v1alpha2.StorageNode)
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: sn.Namespace, Name: sn.Spec.ClusterRef}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("sitesim-storagecluster").
		For(&v1alpha2.StorageCluster{}).Watches(&v1alpha2.StorageNode{}, toCluster).Complete(r)
}

func (r *clusterReporter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sc v1alpha2.StorageCluster
	if err := r.c.Get(ctx, req.NamespacedName, &sc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var list v1alpha2.StorageNodeList
	if err := r.c.List(ctx, &list, client.InNamespace(sc.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	// The nodes the draft names; without the draft, the nodes there are.
	want := -1
	var draft v1alpha2.ClusterDeploymentConfig
	if err := r.c.Get(ctx, types.NamespacedName{Namespace: sc.Namespace, Name: sc.Spec.ConfigRef}, &draft); err == nil {
		want = len(draft.Status.NodeRefs)
	}

	before := sc.DeepCopy()
	if sc.Status.UUID == "" {
		sc.Status.UUID = string(uuid.NewUUID())
	}
	sc.Status.Pool = "pool-" + sc.Name
	sc.Status.Nodes = nil
	online := 0
	for _, sn := range list.Items {
		if sn.Spec.ClusterRef != sc.Name {
			continue
		}
		sc.Status.Nodes = append(sc.Status.Nodes, v1alpha2.StorageClusterNode{Name: sn.Name, Phase: sn.Status.Phase, Hostname: sn.Status.Hostname})
		if sn.Status.Phase == v1alpha2.StorageOnline {
			online++
		}
	}
	slices.SortFunc(sc.Status.Nodes, func(a, b v1alpha2.StorageClusterNode) int { return strings.Compare(a.Name, b.Name) })
	if want < 0 {
		want = len(sc.Status.Nodes)
	}
	sc.Status.Phase = v1alpha2.StoragePending
	if want > 0 && online >= want {
		sc.Status.Phase = v1alpha2.StorageOnline
	}
	if equalJSON(before.Status, sc.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.c.Status().Patch(ctx, &sc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}
