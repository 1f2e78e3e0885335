// Package kube holds what the hub's reconcilers and the agent's share: typed reconcile errors
// that say what the workqueue does next, and the one rate limiter every controller's queue uses.
package kube

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// Back-off of every controller: the n-th retry of one object in a row comes after between half
// and all of min(BackoffInitial·2ⁿ⁻¹, BackoffMax) (puller.Backoff), whether it failed (the
// workqueue's rate limiter) or waits on something no watch shows (Waiting).
const (
	BackoffInitial = 500 * time.Millisecond
	BackoffMax     = 5 * time.Minute
	// Every controller's retries together are bounded too, as controller-runtime's default does:
	// RetryQPS a second, in bursts of RetryBurst.
	RetryQPS   = 10
	RetryBurst = 100
)

// Waiting says that the reconcile waits for something it does not watch (a Secret the cache does
// not hold, a ConfigMap, a name another object holds): the object is looked at again after
// After, then after twice as long each time it still waits, up to BackoffMax, with jitter. It is
// not an error: nothing is logged above debug level.
type Waiting struct {
	// Reason is the condition reason the reconciler reports while it waits.
	Reason string
	// After is the first delay before jitter; 0 means BackoffInitial.
	After time.Duration
	Err   error
}

func (w *Waiting) Error() string { return w.Err.Error() }
func (w *Waiting) Unwrap() error { return w.Err }

// Wait is a *Waiting for reason, first looking again after after (0: BackoffInitial).
func Wait(after time.Duration, reason string, err error) error {
	return &Waiting{Reason: reason, After: after, Err: err}
}

// Stalling says that retrying changes nothing until the object (or what it reads through a
// watch) changes: an invalid spec, a work over the work budget. The object is not requeued; its
// status says why (a Stalled condition).
type Stalling struct {
	Reason string
	Err    error
}

func (s *Stalling) Error() string { return s.Err.Error() }
func (s *Stalling) Unwrap() error { return s.Err }

// Stall is a *Stalling for reason.
func Stall(reason string, err error) error { return &Stalling{Reason: reason, Err: err} }

// StalledCondition is the condition type of an object whose reconcile stalled: True (abnormal)
// while retrying cannot help, with the stall's reason and message; absent otherwise.
const StalledCondition = "Stalled"

// StalledBy is the stall err asks for, for the Stalled condition a status summary sets: ok when
// KindOf(err) is Stalled (not when a failure or a wait joins it, which requeue).
func StalledBy(err error) (reason, message string, ok bool) {
	if KindOf(err) != Stalled {
		return "", "", false
	}
	var s *Stalling
	errors.As(err, &s)
	return s.Reason, s.Err.Error(), true
}

// Kind is what the workqueue does after a reconcile.
type Kind int

// Kinds, from the weakest to the strongest: of the errors a reconcile joins, the strongest wins.
const (
	// Done: no requeue, beyond the Result's own RequeueAfter.
	Done Kind = iota
	// Stalled: no requeue until a watched change (a *Stalling).
	Stalled
	// Waits: requeue after a delay that backs off per object (a *Waiting), nothing logged.
	Waits
	// Retry: the error goes to the workqueue, whose rate limiter backs off per object (any error
	// that is neither *Waiting nor *Stalling).
	Retry
)

func (k Kind) String() string {
	return [...]string{"done", "stalled", "waiting", "retry"}[k]
}

// KindOf is what err asks for. A joined error asks for the strongest of its parts, so that a
// wait joined with a failed status write is retried; a wrapped one for what it wraps.
func KindOf(err error) Kind {
	if err == nil {
		return Done
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		k := Done
		for _, e := range j.Unwrap() {
			k = max(k, KindOf(e))
		}
		return k
	}
	var w *Waiting
	var s *Stalling
	switch {
	case errors.As(err, &w):
		return Waits
	case errors.As(err, &s):
		return Stalled
	}
	return Retry
}

// firstDelay is the first delay of the waits in err's tree: the shortest one asked for.
func firstDelay(err error) time.Duration {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var d time.Duration
		for _, e := range j.Unwrap() {
			if x := firstDelay(e); x > 0 && (d == 0 || x < d) {
				d = x
			}
		}
		return d
	}
	var w *Waiting
	if errors.As(err, &w) {
		return max(w.After, 0)
	}
	return 0
}

// Outcome is what a reconcile that returned (res, err) tells the workqueue, waits being the
// number of reconciles of the object in a row, this one included, that waited (Waits): the
// result and error to return to controller-runtime. Plain logic, no I/O.
func Outcome(res ctrl.Result, err error, waits int) (ctrl.Result, error) {
	switch KindOf(err) {
	case Retry:
		return ctrl.Result{}, err
	case Waits:
		b := puller.Backoff{Initial: firstDelay(err), Max: BackoffMax}
		if b.Initial <= 0 {
			b.Initial = BackoffInitial
		}
		return ctrl.Result{RequeueAfter: b.Delay(max(waits, 1))}, nil
	case Stalled:
		return ctrl.Result{}, nil
	}
	return res, nil
}

// Reconciler wraps r so that its typed errors do what they say (Outcome): it counts, per
// object, the reconciles in a row that wait, and logs a stall once per reconcile at info level.
func Reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	return &typed{r: r, waits: map[reconcile.Request]int{}}
}

type typed struct {
	r     reconcile.Reconciler
	mu    sync.Mutex
	waits map[reconcile.Request]int
}

func (t *typed) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := t.r.Reconcile(ctx, req)
	kind := KindOf(err)
	t.mu.Lock()
	n := 0
	if kind == Waits {
		t.waits[req]++
		n = t.waits[req]
	} else if kind != Retry { // a failure keeps the count: the object still waits once it passes
		delete(t.waits, req)
	}
	t.mu.Unlock()
	out, outErr := Outcome(res, err, n)
	switch kind {
	case Waits:
		ctrl.LoggerFrom(ctx).V(1).Info("waiting", "reason", reasonOf(err), "message", err.Error(), "requeueAfter", out.RequeueAfter, "waits", n)
	case Stalled:
		ctrl.LoggerFrom(ctx).Info("stalled until the object changes", "reason", reasonOf(err), "message", err.Error())
	}
	return out, outErr
}

// reasonOf is the reason of the first typed error in err's tree.
func reasonOf(err error) string {
	var w *Waiting
	var s *Stalling
	switch {
	case errors.As(err, &w):
		return w.Reason
	case errors.As(err, &s):
		return s.Reason
	}
	return ""
}

// RateLimiter is the rate limiter of every controller's workqueue: per object, the jittered
// exponential back-off of BackoffInitial up to BackoffMax (puller.Backoff); over all objects,
// RetryQPS in bursts of RetryBurst.
func RateLimiter[T comparable]() workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedMaxOfRateLimiter[T](
		&jittered[T]{b: puller.Backoff{Initial: BackoffInitial, Max: BackoffMax}, failures: map[T]int{}},
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(RetryQPS), RetryBurst)},
	)
}

// jittered is the per-object exponential back-off with jitter.
type jittered[T comparable] struct {
	b        puller.Backoff
	mu       sync.Mutex
	failures map[T]int
}

func (j *jittered[T]) When(item T) time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.failures[item]++
	return j.b.Delay(j.failures[item])
}

func (j *jittered[T]) Forget(item T) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.failures, item)
}

func (j *jittered[T]) NumRequeues(item T) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failures[item]
}
