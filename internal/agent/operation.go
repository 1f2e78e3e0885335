package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// Helm operations that survive the agent: every install, upgrade, rollback or uninstall the
// agent runs holds an operation Lease in the agent's namespace, one per Helm release, whose
// holder is the agent's process identity (host name and a random id drawn at start) and which
// the agent renews while Helm works and deletes when Helm is done. Helm itself marks a release
// pending-install, pending-upgrade or pending-rollback while it works and refuses any other
// operation on it meanwhile; a process that dies there (SIGKILL, OOM, a node lost) leaves the
// release pending forever. So before it operates, the agent takes the release's Lease:
//
//   - held by another process and renewed within its duration: that agent works on the release;
//     this one waits until the Lease would expire, and writes nothing to Helm;
//   - expired, or held by no one: a pending release was left by a dead operation. The agent marks
//     that revision failed ("interrupted") and rolls the release back to its last deployed
//     revision, or uninstalls it when no revision was ever deployed (an interrupted install),
//     then runs the operation again, all under its own Lease;
//   - absent: no agent recorded an operation (a pending release from the helm CLI, or an agent
//     before operation Leases); the release is taken as dead once its pending revision is older
//     than the Helm timeout, which bounds every operation of the agent.
//
// On SIGTERM the agent cancels the operation's context: Helm records the revision failed (not
// pending) at once and the Lease is deleted, well within the chart's grace period.
//
// The Lease lives in the agent's namespace, fleet-system, where no workspace can write: a tenant
// can neither hold a release's lock nor take one over. It does not rely on leader election: two
// agents on one cluster (a standby that took over from a leader still running Helm, or two
// replicas without election) never run Helm on one release at once while both renew.

// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=fleet-system,resources=leases,verbs=get;create;update;delete

// Timing of the operation Leases.
const (
	// OperationLeaseDuration is how long an operation Lease holds without renewal: a release
	// whose agent died is recovered at most this long after the agent's last renewal.
	OperationLeaseDuration = 20 * time.Second
	// operationRenewEvery is how often the agent renews the Lease of a running operation.
	operationRenewEvery = 5 * time.Second
	// operationLeasePrefix begins every operation Lease's name: helm.<namespace>.<release>.
	operationLeasePrefix = "helm."
	// OperationLeaseLabel marks the operation Leases; its value is the release's namespace.
	OperationLeaseLabel = "fleet.umkim.io/helm-operation"
)

// OperationLeaseName is the name of the Lease in the agent's namespace that the agent holds
// while it runs a Helm operation on release name of namespace. A namespace holds no dot and a
// release name at most 53 characters: the name is unique and fits.
func OperationLeaseName(namespace, name string) string {
	return operationLeasePrefix + namespace + "." + name
}

// NewProcessIdentity is an identity for one agent process: the host (the pod's) name and a
// random id, so that a restarted agent never takes its predecessor's operations for its own.
func NewProcessIdentity() string {
	host, _ := os.Hostname()
	id := make([]byte, 8)
	_, _ = rand.Read(id) // never fails (crypto/rand)
	return fmt.Sprintf("%s_%s", host, hex.EncodeToString(id))
}

// operation is an operation Lease this process holds, renewed until release.
type operation struct {
	c     client.Client
	lease *coordinationv1.Lease
	// previous is the holder whose expired Lease this one took over ("" when the Lease was
	// free or new); absent tells that there was no Lease at all.
	previous string
	absent   bool
	stop     chan struct{}
	done     chan struct{}
}

// busyError is a release another live agent operates: wait until its Lease would expire.
type busyError struct {
	holder string
	until  time.Time
}

// Error names the holder but not the time, so that the status it goes to stays the same while
// the agent waits.
func (e busyError) Error() string {
	return fmt.Sprintf("%s runs a Helm operation on this release: waiting for it to end, or for its operation Lease to lapse", e.holder)
}

// acquire takes the operation Lease of rel's Helm release for this process, or returns a
// busyError while another live agent holds it. The Lease is renewed until release is called.
func (r *FleetReleaseReconciler) acquire(ctx context.Context, rel *v1alpha1.FleetRelease, log logr.Logger) (*operation, error) {
	key := types.NamespacedName{Namespace: r.Namespace, Name: OperationLeaseName(rel.Spec.Namespace, rel.Spec.ReleaseName)}
	me, now := r.identity(), metav1.NewMicroTime(time.Now())
	op := &operation{c: r.Client, stop: make(chan struct{}), done: make(chan struct{})}
	var lease coordinationv1.Lease
	err := r.Reader.Get(ctx, key, &lease)
	switch {
	case apierrors.IsNotFound(err):
		op.absent = true
		lease = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{OperationLeaseLabel: rel.Spec.Namespace}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &me, LeaseDurationSeconds: ptr.To(int32(OperationLeaseDuration / time.Second)),
				AcquireTime: &now, RenewTime: &now},
		}
		if err := r.Create(ctx, &lease); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, busyError{holder: "another agent", until: now.Add(time.Second)}
			}
			return nil, fmt.Errorf("operation Lease %s: %w", key, err)
		}
	case err != nil:
		return nil, fmt.Errorf("operation Lease %s: %w", key, err)
	default:
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		if until := leaseExpiry(&lease); holder != "" && holder != me && now.Time.Before(until) {
			return nil, busyError{holder: "agent " + holder, until: until}
		}
		if holder != me {
			op.previous = holder
		}
		lease.Spec.HolderIdentity = &me
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(OperationLeaseDuration / time.Second))
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		if err := r.Update(ctx, &lease); err != nil { // guarded by the resourceVersion read
			if apierrors.IsConflict(err) {
				return nil, busyError{holder: "another agent", until: now.Add(time.Second)}
			}
			return nil, fmt.Errorf("operation Lease %s: %w", key, err)
		}
		if op.previous != "" {
			log.Info("took over the operation Lease of an agent that stopped renewing it", "lease", key.Name, "previous", op.previous)
		}
	}
	op.lease = &lease
	go op.renew(context.WithoutCancel(ctx), log)
	return op, nil
}

// leaseExpiry is when a Lease lapses unless renewed.
func leaseExpiry(l *coordinationv1.Lease) time.Time {
	var renewed time.Time
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	return renewed.Add(time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second)
}

// renew renews the Lease every operationRenewEvery until stop is closed.
func (op *operation) renew(ctx context.Context, log logr.Logger) {
	defer close(op.done)
	tick := time.NewTicker(operationRenewEvery)
	defer tick.Stop()
	for {
		select {
		case <-op.stop:
			return
		case <-tick.C:
		}
		renewed := op.lease.DeepCopy()
		renewed.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
		wctx, cancel := context.WithTimeout(ctx, operationRenewEvery)
		err := op.c.Update(wctx, renewed)
		cancel()
		if err != nil {
			log.Error(err, "renewing the operation Lease", "lease", op.lease.Name)
			continue
		}
		op.lease = renewed
	}
}

// release stops renewing the Lease and deletes it, unless another agent took it over since.
// It runs on a context of its own: a shutdown has cancelled the operation's.
func (op *operation) release(log logr.Logger) {
	close(op.stop)
	<-op.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := op.c.Delete(ctx, op.lease, client.Preconditions{UID: &op.lease.UID, ResourceVersion: &op.lease.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		log.Error(err, "deleting the operation Lease; it lapses by itself", "lease", op.lease.Name)
	}
}

// identity is this process's holder identity in operation Leases.
func (r *FleetReleaseReconciler) identity() string {
	r.identityOnce.Do(func() {
		if r.Identity == "" {
			r.Identity = NewProcessIdentity()
		}
	})
	return r.Identity
}

// recoverPending returns Helm's last revision of the release once no dead operation holds it:
// a revision left pending-install, pending-upgrade or pending-rollback by an operation whose
// agent is gone is marked failed, and the release is rolled back to its last deployed revision
// or, when none was ever deployed, uninstalled (then the last revision is nil). The caller holds
// op. A pending revision that no operation Lease recorded is waited for until it is older than
// the Helm timeout (a busyError).
func (r *FleetReleaseReconciler) recoverPending(cfg *action.Configuration, rel *v1alpha1.FleetRelease, last *release.Release, op *operation, log logr.Logger) (*release.Release, error) {
	if last == nil || last.Info == nil || !last.Info.Status.IsPending() {
		return last, nil
	}
	timeout := or(r.Timeout, DefaultHelmTimeout)
	if op.absent || op.previous == "" {
		if until := last.Info.LastDeployed.Time.Add(timeout); time.Now().Before(until) {
			return nil, busyError{holder: "an operation no agent recorded (the helm CLI?)", until: until}
		}
	}
	name, pending := rel.Spec.ReleaseName, last.Info.Status
	who := "an agent that is gone"
	if op.previous != "" {
		who = "agent " + op.previous
	}
	log.Info("recovering a release left pending by an interrupted operation", "release", name, "namespace", rel.Spec.Namespace,
		"revision", last.Version, "status", pending, "by", who)
	last.SetStatus(release.StatusFailed, fmt.Sprintf("interrupted: %s of %s stopped during the operation (%s)", who, name, pending))
	if err := cfg.Releases.Update(last); err != nil {
		return nil, fmt.Errorf("marking the interrupted revision %d failed: %w", last.Version, err)
	}
	deployed, err := cfg.Releases.Deployed(name)
	switch {
	case errors.Is(err, driver.ErrNoDeployedReleases):
		uninstall := action.NewUninstall(cfg)
		uninstall.Timeout = timeout
		uninstall.IgnoreNotFound = true
		if _, err := uninstall.Run(name); err != nil {
			ReleaseRecoveries.WithLabelValues(string(pending), "failed").Inc()
			return nil, fmt.Errorf("uninstalling the interrupted release: %w", err)
		}
		ReleaseRecoveries.WithLabelValues(string(pending), "uninstalled").Inc()
		return nil, nil
	case err != nil:
		return nil, err
	}
	rollback := action.NewRollback(cfg)
	rollback.Version = deployed.Version
	rollback.Timeout = timeout
	rollback.MaxHistory = releaseMaxHistory
	if err := rollback.Run(name); err != nil {
		ReleaseRecoveries.WithLabelValues(string(pending), "failed").Inc()
		return nil, fmt.Errorf("rolling the interrupted release back to revision %d: %w", deployed.Version, err)
	}
	ReleaseRecoveries.WithLabelValues(string(pending), "rolled-back").Inc()
	return lastRelease(cfg, name)
}
