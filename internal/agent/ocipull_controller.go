// Package agent holds the reconcilers of `fleet-controller agent`, which runs on a workload
// cluster: it pulls the OCI artifacts that OCIPulls name into a content-addressed cache, through
// the registry chain the hub delivered to the cluster for each workspace, and installs the Helm
// charts among them as the Helm releases FleetReleases describe, with Helm's SDK (upgrading
// them when their spec, chart or values change, uninstalling them when the FleetRelease goes).
// Since a chart may hold any kind of object, the agent's role grants everything.
package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,namespace=fleet-system,resources=ocipulls,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,namespace=fleet-system,resources=ocipulls/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=fleet-system,resources=secrets,verbs=get;list;watch

// Defaults of the reconciler's timings.
const (
	// DefaultRetryFailed is how long after every registry of a chain failed a pull starts over
	// the first time; the wait doubles per failure, with jitter, up to DefaultRetryFailedMax.
	DefaultRetryFailed = time.Minute
	// DefaultRetryFailedMax is the longest wait before a pull that keeps failing starts over.
	DefaultRetryFailedMax = 15 * time.Minute
	// DefaultParallelPulls is how many pulls an agent runs at once.
	DefaultParallelPulls = 4
	// DefaultProgressInterval is how often a running pull's status is updated with its progress.
	DefaultProgressInterval = 5 * time.Second
	// DefaultChainRecheck is how long a pull whose chain Secret is missing first waits before it
	// looks again (a kube.Wait: the wait then doubles, with jitter, up to kube.BackoffMax); the
	// Secret's arrival re-queues it at once anyway.
	DefaultChainRecheck = 5 * time.Minute
)

// workspaceIndex indexes OCIPulls by spec.workspace, so that a chain Secret maps to its pulls.
const workspaceIndex = "spec.workspace"

// OCIPullReconciler pulls the artifact of each OCIPull into one OCI image layout, CacheDir,
// through the chain Secret fleet-system/oci-chain-<spec.workspace>.
//
// Between reconciles it keeps each pull's puller.Cursor in memory, keyed by the OCIPull's name and
// valid for one UID, generation and chain content (by hash): a new spec or a new chain starts the
// pull over (carrying lastSuccess). A restarted agent starts every pull over; that is cheap, since
// content already in the layout is not downloaded again, only its manifest resolved.
//
// All pulls write one cache (puller.Cache, opened once by the agent that leads), so that a
// digest pulled for one OCIPull (or workspace) is not fetched again for another; a reconcile
// reads and writes only its own artifact there. Pulls run up to Parallel at once, so that one
// slow artifact or registry does not hold back the others.
//
// A running pull's status says Pulling, with its registry and bytes, from its first moment for
// a new generation and then every ProgressInterval while the bytes move; a pull that failed at
// every registry starts over after an exponential back-off with jitter (RetryFailed doubling up
// to RetryFailedMax), so that its status and the hub's feedback change at most once per retry.
type OCIPullReconciler struct {
	client.Client
	// Namespace is the agent's namespace, which holds the OCIPulls and the chain Secrets; empty
	// means ocichain.Namespace.
	Namespace string
	// Cache is the OCI cache every pull writes, once the leader opened it.
	Cache *LeaderCache
	// AttemptTimeout bounds one attempt at a registry (puller.Options.AttemptTimeout).
	AttemptTimeout time.Duration
	// IdleTimeout bounds each pause in what a registry sends (puller.Options.IdleTimeout).
	IdleTimeout time.Duration
	// RetryFailed is how long after every registry failed a pull starts over the first time; 0
	// means DefaultRetryFailed. The wait doubles per failure, with jitter, up to RetryFailedMax
	// (0: DefaultRetryFailedMax).
	RetryFailed, RetryFailedMax time.Duration
	// Parallel is how many pulls run at once; 0 means DefaultParallelPulls.
	Parallel int
	// ProgressInterval is how often a running pull's status is updated; 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// ChainRecheck is how long a pull whose chain is missing first waits before it looks again;
	// 0 means DefaultChainRecheck.
	ChainRecheck time.Duration
	// UserAgent is sent to registries.
	UserAgent string
	// Backoff spaces the attempts at a registry that lacks the artifact; zero is the puller's.
	Backoff puller.Backoff

	mu      sync.Mutex // guards cursors; a pull's entry is used by its own reconcile only
	cursors map[types.NamespacedName]*pullEntry
}

// pullEntry is a pull's cursor and what it is valid for.
type pullEntry struct {
	uid        types.UID
	generation int64
	chain      string // sha256 of the chain document
	cursor     puller.Cursor
	failures   int       // times in a row every registry failed
	retryAt    time.Time // when a pull that failed at every registry starts over
	progress   puller.Progress
	meta       puller.Metadata // the pulled artifact's size and pushed-at (ocipull_metadata.go)
}

// Reconcile makes one step of the pull req names, or as many as the chain allows without waiting.
func (r *OCIPullReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var pull v1alpha1.OCIPull
	if err := r.Get(ctx, req.NamespacedName, &pull); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// One status write, at the end, when the reconcile reached an account of the pull: status is
	// what it will say. pull.Status stays what the API server holds, which the live writer
	// (ocipull_live.go) alone updates while a pull runs; step rebases patch on what it wrote.
	patch := kube.BeginStatus(&pull, &pull.Status)
	status := generationStatus(&pull)
	report := false
	defer func() {
		if report {
			pull.Status = *status
		}
		err = errors.Join(err, patch.Write(ctx, r.Client, report, nil))
	}()
	var res ctrl.Result
	res, report, err = r.step(ctx, &pull, status, func() { patch = kube.BeginStatus(&pull, &pull.Status) })
	return res, err
}

// step runs the pull's next steps and sets status from them; report says whether status is an
// account of the pull to write (false when what the reconcile needs could not be read: it is
// retried). rebase is called once the live writer stopped.
func (r *OCIPullReconciler) step(ctx context.Context, pull *v1alpha1.OCIPull, status *v1alpha1.OCIPullStatus, rebase func()) (ctrl.Result, bool, error) {
	log := ctrl.LoggerFrom(ctx)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pull)}
	chain, sum, err := r.readChain(ctx, pull.Spec.Workspace)
	if apierrors.IsNotFound(err) {
		// The Secret's arrival re-queues the pull; the wait looks again meanwhile.
		msg := fmt.Sprintf("the chain Secret %s/%s is not on the cluster: waiting for the hub to deliver workspace %s's chain",
			r.namespace(), ocichain.SecretName(pull.Spec.Workspace), pull.Spec.Workspace)
		setReady(status, pull.Generation, false, v1alpha1.ReasonChainNotDelivered, msg)
		return ctrl.Result{}, true, kube.Wait(or(r.ChainRecheck, DefaultChainRecheck), v1alpha1.ReasonChainNotDelivered, errors.New(msg))
	}
	if err != nil {
		if !errors.As(err, new(chainError)) {
			return ctrl.Result{}, false, err
		}
		// Only a new chain can fix it, and the Secret's change re-queues the pull.
		setReady(status, pull.Generation, false, v1alpha1.ReasonChainInvalid, err.Error())
		return ctrl.Result{}, true, nil
	}

	now := time.Now()
	e := r.entry(req.NamespacedName, pull, sum)
	prev := e.cursor.Status.State
	c := e.cursor
	switch {
	case c.Done && c.Status.State == puller.Failed:
		if now.Before(e.retryAt) {
			return r.finish(pull, status, chain, e, prev, e.retryAt.Sub(now))
		}
		c = puller.Cursor{Status: puller.Status{LastSuccess: c.Status.LastSuccess}} // start over
	case c.Done:
		return r.finish(pull, status, chain, e, prev, 0)
	case c.Status.NextRetry != nil && now.Before(*c.Status.NextRetry):
		// An early event, e.g. another Secret of the namespace: keep to the back-off.
		return r.finish(pull, status, chain, e, prev, c.Status.NextRetry.Sub(now))
	}

	oci, err := r.Cache.Get(ctx)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	a := puller.Artifact{Repository: pull.Spec.Repository, Tag: pull.Spec.Tag, Digest: digest.Digest(pull.Spec.Digest)}
	live := newLiveStatus(c)
	p, err := r.puller(oci, chain, live.progress)
	if err != nil {
		setReady(status, pull.Generation, false, v1alpha1.ReasonChainInvalid, err.Error())
		return ctrl.Result{}, true, nil
	}
	// From here until live.stop, live owns the OCIPull object.
	r.startLive(ctx, live, pull, status.DeepCopy(), chain)
	var delay time.Duration
	// Failures that move on to the next registry cost no wait: step through them at once.
	for range len(chain.Registries) + 1 {
		next, d, err := p.Step(ctx, a, c)
		if err != nil {
			live.stop()
			rebase()
			return ctrl.Result{}, false, err
		}
		c, delay = next, d
		live.setCursor(c)
		if c.Done || delay > 0 {
			break
		}
	}
	e.progress = live.stop()
	rebase()
	e.cursor = c
	e.meta = pulledMetadata(ctx, p, a, c)
	switch {
	case c.Done && c.Status.State == puller.Failed:
		e.failures++
		delay = puller.Backoff{Initial: or(r.RetryFailed, DefaultRetryFailed), Max: or(r.RetryFailedMax, DefaultRetryFailedMax), Jitter: r.Backoff.Jitter}.Delay(e.failures)
		e.retryAt = time.Now().Add(delay)
	case c.Done:
		e.failures = 0
	}
	if !c.Done && delay == 0 {
		delay = time.Second // not reached: each failure moves on, and the chain ends
	}
	log.V(1).Info("pull step", "artifact", a.String(), "state", c.Status.State, "registry", c.Status.Registry, "attempts", c.Status.Attempts, "requeueAfter", delay)
	return r.finish(pull, status, chain, e, prev, delay)
}

// finish sets the status of the pull's cursor and counts the state it entered.
func (r *OCIPullReconciler) finish(pull *v1alpha1.OCIPull, status *v1alpha1.OCIPullStatus, chain ocichain.Chain,
	e *pullEntry, prev puller.State, requeue time.Duration) (ctrl.Result, bool, error) {
	c := e.cursor
	pullStatus(status, pull, chain, c)
	status.PulledBytes, status.TotalBytes = e.progress.Done, e.progress.Total
	setMetadata(status, e.meta)
	if c.Done && c.Status.State == puller.Failed {
		status.NextRetry = metaTime(&e.retryAt)
		ready := meta.FindStatusCondition(status.Conditions, v1alpha1.ReadyCondition)
		ready.Message += "; the pull starts over at " + status.NextRetry.UTC().Format(time.RFC3339)
	}
	if c.Status.State != prev && c.Status.State != "" {
		Pulls.WithLabelValues(string(c.Status.State)).Inc()
	}
	return ctrl.Result{RequeueAfter: requeue}, true, nil
}

// pullStatus sets status from a cursor of the pull through chain: plain inputs, no I/O.
func pullStatus(status *v1alpha1.OCIPullStatus, pull *v1alpha1.OCIPull, chain ocichain.Chain, c puller.Cursor) {
	s := c.Status
	status.State = v1alpha1.OCIPullState(s.State)
	status.Reason = string(s.Reason)
	status.Registry = s.Registry
	status.Digest = c.Digest.String()
	status.Attempts = int32(min(s.Attempts, 1<<31-1)) //nolint:gosec // bounded
	status.NextRetry = metaTime(s.NextRetry)
	status.LastSuccess = metaTime(s.LastSuccess)
	status.Verified = s.Verified
	status.Message = s.Message
	status.Route = chain.Route
	var failovers []v1alpha1.Failover
	for _, f := range c.Failures {
		failovers = append(failovers, v1alpha1.Failover{Registry: f.Registry, Reason: string(f.Class)})
	}
	status.SetFailovers(failovers) // a sample that fits the feedback, and the count
	switch s.State {
	case puller.Pulled:
		setReady(status, pull.Generation, true, v1alpha1.ReasonPulled, fmt.Sprintf("pulled %s from %s", status.Digest, s.Registry))
	case puller.WaitingForArtifact:
		setReady(status, pull.Generation, false, v1alpha1.ReasonWaitingForArtifact, fmt.Sprintf(
			"%s does not have the artifact yet (replication is behind); next attempt at %s", s.Registry, s.NextRetry.UTC().Format(time.RFC3339)))
	default:
		setReady(status, pull.Generation, false, v1alpha1.ReasonPullFailed, fmt.Sprintf(
			"every registry of the chain failed, last %s (%s): %s", s.Registry, s.Reason, s.Message))
	}
}

// setReady sets the Ready condition stamped with the generation; its transition time changes
// only when its status does.
func setReady(status *v1alpha1.OCIPullStatus, gen int64, ready bool, reason, message string) {
	kube.SetBool(&status.Conditions, gen, v1alpha1.ReadyCondition, ready, reason, message)
}

// metaTime is t to the second, as the API server keeps it, so that a status read back compares
// equal to the one written.
func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

// writeStatus writes desired as obj's status unless current, obj's status, already is it.
func writeStatus[S any](ctx context.Context, c client.Client, obj client.Object, current, desired *S) error {
	if equality.Semantic.DeepEqual(current, desired) {
		return nil
	}
	*current = *desired
	return c.Status().Update(ctx, obj)
}

// chainError is a chain Secret that cannot be used; only the hub can fix it.
type chainError struct{ error }

// readChain reads and parses a workspace's chain Secret; it returns the document's hash too.
func (r *OCIPullReconciler) readChain(ctx context.Context, workspace string) (ocichain.Chain, string, error) {
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: r.namespace(), Name: ocichain.SecretName(workspace)}
	if err := r.Get(ctx, key, &secret); err != nil {
		return ocichain.Chain{}, "", err
	}
	data, ok := secret.Data[ocichain.Key]
	if !ok {
		return ocichain.Chain{}, "", chainError{fmt.Errorf("the chain Secret %s has no key %s", key, ocichain.Key)}
	}
	chain, err := ocichain.Parse(data)
	if err != nil {
		return ocichain.Chain{}, "", chainError{fmt.Errorf("the chain Secret %s: %w", key, err)}
	}
	if chain.ReplicationWait != "" {
		if d, err := time.ParseDuration(chain.ReplicationWait); err != nil || d < 0 {
			return ocichain.Chain{}, "", chainError{fmt.Errorf("the chain Secret %s: replicationWait %q is not a duration of zero or more", key, chain.ReplicationWait)}
		}
	}
	sum := sha256.Sum256(data)
	return chain, hex.EncodeToString(sum[:]), nil
}

// puller returns a puller through chain into the cache, reporting progress to onProgress.
func (r *OCIPullReconciler) puller(oci *puller.Cache, chain ocichain.Chain, onProgress func(puller.Progress)) (*puller.Puller, error) {
	var wait time.Duration
	if chain.ReplicationWait != "" {
		wait, _ = time.ParseDuration(chain.ReplicationWait) // checked by readChain
	}
	return puller.NewWithCache(chain.Registries, oci, puller.Options{
		ReplicationWait: wait,
		Backoff:         r.Backoff,
		AttemptTimeout:  r.AttemptTimeout,
		IdleTimeout:     r.IdleTimeout,
		UserAgent:       r.UserAgent,
		OnAttempt:       observeAttempt,
		OnRead:          func(_ ocispec.Descriptor, n int) { PulledBytes.Add(float64(n)) },
		OnProgress:      onProgress,
		Verify:          chain.Verify,
	})
}

// entry returns the pull's cursor entry, a fresh one when the pull's UID, generation or chain
// changed; a fresh cursor keeps the last success.
func (r *OCIPullReconciler) entry(key types.NamespacedName, pull *v1alpha1.OCIPull, chain string) *pullEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cursors == nil {
		r.cursors = map[types.NamespacedName]*pullEntry{}
	}
	e := r.cursors[key]
	if e != nil && e.uid == pull.UID && e.generation == pull.Generation && e.chain == chain {
		return e
	}
	fresh := &pullEntry{uid: pull.UID, generation: pull.Generation, chain: chain}
	switch {
	case e != nil && e.uid == pull.UID:
		fresh.cursor.Status.LastSuccess = e.cursor.Status.LastSuccess
		fresh.cursor.Status.State = e.cursor.Status.State // counted once per state entered
	case pull.Status.LastSuccess != nil:
		t := pull.Status.LastSuccess.Time
		fresh.cursor.Status.LastSuccess = &t
	}
	r.cursors[key] = fresh
	return fresh
}

func (r *OCIPullReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cursors, key)
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// SetupWithManager registers the reconciler, the workspace index of OCIPulls and the watch on
// chain Secrets, which re-queues the pulls of the Secret's workspace.
func (r *OCIPullReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.OCIPull{}, workspaceIndex, func(o client.Object) []string {
		return []string{o.(*v1alpha1.OCIPull).Spec.Workspace}
	}); err != nil {
		return err
	}
	return kube.Build(kube.NewController(mgr, "ocipull", controller.Options{MaxConcurrentReconciles: cmp.Or(r.Parallel, DefaultParallelPulls)}).
		For(&v1alpha1.OCIPull{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.pullsOfChain)), r)
}

// namespace is the namespace of the chain Secrets.
func (r *OCIPullReconciler) namespace() string { return cmp.Or(r.Namespace, ocichain.Namespace) }

// pullsOfChain maps a chain Secret to the pulls of its workspace.
func (r *OCIPullReconciler) pullsOfChain(ctx context.Context, obj client.Object) []ctrl.Request {
	workspace, ok := strings.CutPrefix(obj.GetName(), ocichain.SecretName(""))
	if obj.GetNamespace() != r.namespace() || !ok || workspace == "" {
		return nil
	}
	var pulls v1alpha1.OCIPullList
	if err := r.List(ctx, &pulls, client.MatchingFields{workspaceIndex: workspace}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the pulls of a workspace", "workspace", workspace)
		return nil
	}
	out := make([]ctrl.Request, len(pulls.Items))
	for i := range pulls.Items {
		out[i] = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&pulls.Items[i])}
	}
	return out
}
