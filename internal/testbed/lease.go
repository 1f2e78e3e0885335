package testbed

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A cluster's liveness, as OCM keeps it. OCM's klusterlet agent (registration and work in one
// process, its "singleton" mode) renews the Lease managed-cluster-lease in the cluster's
// namespace on the hub every spec.leaseDurationSeconds of its ManagedCluster, and sets the
// ManagedCluster's ManagedClusterConditionAvailable True while the cluster's apiserver answers;
// the hub's lease controller sets that condition Unknown (ManagedClusterLeaseUpdateStopped) once
// the lease has not been renewed for 5 × leaseDurationSeconds (OCM's LeaseDurationTimes). The
// test bed runs no registration agent, so it does both here: each cluster's lease is renewed for
// as long as its work agent process runs (StopAgent stops the renewals with it, as stopping the
// klusterlet does), and the fleet runs the hub's check. The writes are the hub admin's, not the
// agent's identity.
const (
	// LeaseName is the cluster's lease in its namespace on the hub (OCM's).
	LeaseName = "managed-cluster-lease"
	// LeaseDurationTimes: the hub declares a cluster's status Unknown after this many lease
	// durations without a renewal (OCM's constant).
	LeaseDurationTimes = 5
	// DefaultLeaseDuration is OCM's default spec.leaseDurationSeconds.
	DefaultLeaseDuration = 60 * time.Second

	reasonLeaseStopped = "ManagedClusterLeaseUpdateStopped"
	reasonAvailable    = "ManagedClusterAvailable"
)

// leaseGrace is how long the hub waits for a renewal of a lease of duration d.
func leaseGrace(d time.Duration) time.Duration { return LeaseDurationTimes * d }

// LeaseGrace is how long after its work agent stops a cluster of the fleet shows as not
// available on the hub (at most: plus one check period of a second).
func (f *Fleet) LeaseGrace() time.Duration { return leaseGrace(f.lease) }

// renewLease renews the cluster's lease and marks the cluster available, as the klusterlet does
// on each renewal, until the work agent process a exits.
func (c *Cluster) renewLease(a *agentProcess) {
	ticker := time.NewTicker(c.lease)
	defer ticker.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), c.lease)
		_ = c.renewOnce(ctx) // a hub restarting misses renewals, as it would with OCM
		cancel()
		select {
		case <-a.Done():
			return
		case <-ticker.C:
		}
	}
}

// renewOnce renews the lease (creating it if need be) and sets the ManagedCluster's Available
// condition True unless it is.
func (c *Cluster) renewOnce(ctx context.Context) error {
	hc, err := c.hub.Client()
	if err != nil {
		return err
	}
	now := metav1.NewMicroTime(time.Now())
	var l coordinationv1.Lease
	switch err := hc.Get(ctx, types.NamespacedName{Namespace: c.Name, Name: LeaseName}, &l); {
	case apierrors.IsNotFound(err):
		secs := int32(c.lease / time.Second)
		holder := c.Name
		l = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: c.Name, Name: LeaseName},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now}}
		if err := hc.Create(ctx, &l); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		l.Spec.RenewTime = &now
		if err := hc.Update(ctx, &l); err != nil {
			return err
		}
	}
	return setAvailable(ctx, hc, c.Name, metav1.ConditionTrue, reasonAvailable, "Managed cluster is available")
}

// setAvailable sets a ManagedCluster's Available condition, writing only when it changes.
func setAvailable(ctx context.Context, hc client.Client, cluster string, status metav1.ConditionStatus, reason, message string) error {
	var mc clusterv1.ManagedCluster
	if err := hc.Get(ctx, types.NamespacedName{Name: cluster}, &mc); err != nil {
		return err
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); c != nil && c.Status == status && c.Reason == reason {
		return nil
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: status, Reason: reason, Message: message})
	return hc.Status().Update(ctx, &mc)
}

// watchLeases is the hub's lease controller for the fleet's clusters: every second, a cluster
// whose lease was last renewed more than LeaseGrace ago gets Available Unknown. It returns when
// stop is closed.
func (f *Fleet) watchLeases(stop <-chan struct{}) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var hc client.Client // made once it can be: its REST mapper then serves every check
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		if hc == nil {
			var err error
			if hc, err = f.Hub.Client(); err != nil {
				continue
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, c := range f.Clusters {
			_ = f.checkLease(ctx, hc, c) // a hub restarting is checked again a second later
		}
		cancel()
	}
}

func (f *Fleet) checkLease(ctx context.Context, hc client.Client, c *Cluster) error {
	var l coordinationv1.Lease
	if err := hc.Get(ctx, types.NamespacedName{Namespace: c.Name, Name: LeaseName}, &l); err != nil {
		return client.IgnoreNotFound(err)
	}
	if l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) <= leaseGrace(f.lease) {
		return nil
	}
	return setAvailable(ctx, hc, c.Name, metav1.ConditionUnknown, reasonLeaseStopped,
		fmt.Sprintf("Registration agent stopped updating its lease (not renewed for %v).", leaseGrace(f.lease)))
}
