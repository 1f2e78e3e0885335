package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
)

// notReporting is why what the hub shows of a cluster is stale: OCM's ManagedClusterConditionAvailable
// of its ManagedCluster is not True. OCM's hub sets it Unknown when the cluster's agent has not
// renewed its lease for 5 × spec.leaseDurationSeconds (5 minutes by default), which is the bound
// after which a cluster that went silent shows as not reporting; False when the agent reports
// that the cluster's apiserver does not answer. Either way the work agent's reports are as of
// Since, and changes written to the hub do not reach the cluster.
type notReporting struct {
	Cluster string
	Since   metav1.Time
	Status  metav1.ConditionStatus
	Reason  string // OCM's reason, e.g. ManagedClusterLeaseUpdateStopped
}

// clusterNotReporting is mc's notReporting, nil while it reports (Available True) or has never
// had its availability set (a ManagedCluster no registration has touched: nothing is known).
func clusterNotReporting(mc *clusterv1.ManagedCluster) *notReporting {
	c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	if c == nil || c.Status == metav1.ConditionTrue {
		return nil
	}
	return &notReporting{Cluster: mc.Name, Since: c.LastTransitionTime, Status: c.Status, Reason: c.Reason}
}

// Message names the cluster, since when it has not reported and OCM's reason; it stays the same
// while the cluster does not report, so that status is written once.
func (n *notReporting) Message() string {
	return fmt.Sprintf("cluster %q has not reported since %s: its ManagedCluster's %s is %s (%s); what the hub shows of it is as of then, and changes reach it once it reports again",
		n.Cluster, n.Since.UTC().Format(time.RFC3339), clusterv1.ManagedClusterConditionAvailable, n.Status, n.Reason)
}

// reportingOf reads whether cluster reports from the cache: nil when it does, or when it has no
// ManagedCluster (the callers report that case themselves).
func reportingOf(ctx context.Context, c client.Reader, cluster string) (*notReporting, error) {
	var mc clusterv1.ManagedCluster
	if err := c.Get(ctx, types.NamespacedName{Name: cluster}, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return clusterNotReporting(&mc), nil
}

// availabilityChanged passes the ManagedCluster updates that change whether the cluster reports
// (the status or reason of ManagedClusterConditionAvailable), and none of its other heartbeats.
var availabilityChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		was, ok1 := e.ObjectOld.(*clusterv1.ManagedCluster)
		now, ok2 := e.ObjectNew.(*clusterv1.ManagedCluster)
		if !ok1 || !ok2 {
			return false
		}
		a := meta.FindStatusCondition(was.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		b := meta.FindStatusCondition(now.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		if a == nil || b == nil {
			return a != b
		}
		return a.Status != b.Status || a.Reason != b.Reason
	},
}

// workReported passes the ManifestWork updates in which the work agent's account of the work
// changes: the status, reason or observed generation of its Applied or Available condition.
var workReported = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		was, ok1 := e.ObjectOld.(*workv1.ManifestWork)
		now, ok2 := e.ObjectNew.(*workv1.ManifestWork)
		if !ok1 || !ok2 {
			return false
		}
		for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			a, b := meta.FindStatusCondition(was.Status.Conditions, t), meta.FindStatusCondition(now.Status.Conditions, t)
			if (a == nil) != (b == nil) || a != nil && (a.Status != b.Status || a.Reason != b.Reason || a.ObservedGeneration != b.ObservedGeneration) {
				return true
			}
		}
		return false
	},
}

// setNotReporting marks an object whose cluster does not report (silent, nil when it does):
// Delivered and Ready Unknown, ClusterNotReporting, naming the cluster and since when. Its phase
// and fields stay what the cluster last reported (phase, message), which Ready's message repeats.
// Apps and storage deployments use it.
func setNotReporting(conds *[]metav1.Condition, gen int64, silent *notReporting, phase, message string) {
	if silent == nil {
		return
	}
	msg := silent.Message()
	kube.Set(conds, gen, v1alpha1.DeliveredCondition, metav1.ConditionUnknown, v1alpha1.ReasonClusterNotReporting, msg)
	kube.Set(conds, gen, v1alpha1.ReadyCondition, metav1.ConditionUnknown, v1alpha1.ReasonClusterNotReporting,
		fmt.Sprintf("%s; it last reported: %s: %s", msg, phase, message))
}
