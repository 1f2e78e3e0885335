package agent

import (
	"cmp"
	"context"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// generationStatus is the status a reconcile of pull starts from: its current status, but for a
// spec the agent has not worked on yet (a new generation) nothing of the previous spec's pull
// but its last success, so that no state, registry or digest of the old spec shows as the new
// one's.
func generationStatus(pull *v1alpha1.OCIPull) *v1alpha1.OCIPullStatus {
	if pull.Status.ObservedGeneration == pull.Generation {
		return pull.Status.DeepCopy()
	}
	return &v1alpha1.OCIPullStatus{
		ObservedGeneration: pull.Generation,
		LastSuccess:        pull.Status.LastSuccess.DeepCopy(),
		Route:              pull.Status.Route,
		Conditions:         append(pull.Status.Conditions[:0:0], pull.Status.Conditions...),
	}
}

// liveStatus writes the status of a pull while its steps run: Pulling, with the registry and
// bytes so far, at once for a new generation and then at most every ProgressInterval, when the
// progress changed. It owns the OCIPull object until stop returns.
type liveStatus struct {
	mu       sync.Mutex
	prog     puller.Progress
	cursor   puller.Cursor
	written  puller.Progress
	stopping chan struct{}
	done     chan struct{}
}

// newLiveStatus returns the live status of a pull whose steps start from cursor c.
func newLiveStatus(c puller.Cursor) *liveStatus {
	return &liveStatus{cursor: c, stopping: make(chan struct{}), done: make(chan struct{})}
}

// startLive starts writing pull's live status; base is the status the reconcile computed so far.
func (r *OCIPullReconciler) startLive(ctx context.Context, l *liveStatus, pull *v1alpha1.OCIPull, base *v1alpha1.OCIPullStatus, chain ocichain.Chain) {
	write := func() {
		l.mu.Lock()
		prog, cursor := l.prog, l.cursor
		l.mu.Unlock()
		status := base.DeepCopy()
		pullingStatus(status, pull, chain, cursor, prog)
		if err := writeStatus(ctx, r.Client, pull, &pull.Status, status); err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("writing a running pull's progress", "error", err.Error())
			return
		}
		l.mu.Lock()
		l.written = prog
		l.mu.Unlock()
	}
	go func() {
		defer close(l.done)
		if pull.Status.ObservedGeneration != pull.Generation || pull.Status.State == "" {
			write() // the hub sees at once that this spec's pull runs
		}
		tick := time.NewTicker(or(r.ProgressInterval, DefaultProgressInterval))
		defer tick.Stop()
		for {
			select {
			case <-l.stopping:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				l.mu.Lock()
				changed := l.prog != l.written
				l.mu.Unlock()
				if changed {
					write()
				}
			}
		}
	}()
}

// progress records an attempt's progress; the puller calls it as bytes arrive.
func (l *liveStatus) progress(p puller.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Reads of an attempt's blobs run at once; keep the furthest report of the latest attempt.
	if p.Registry != l.prog.Registry || p.Done >= l.prog.Done {
		l.prog = p
	}
}

// setCursor records the cursor after a step.
func (l *liveStatus) setCursor(c puller.Cursor) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cursor = c
}

// stop ends the live writes, waits for the last one, and returns the last progress reported.
func (l *liveStatus) stop() puller.Progress {
	close(l.stopping)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prog
}

// pullingStatus sets status for a pull whose attempt at prog's registry runs: plain inputs, no
// I/O.
func pullingStatus(status *v1alpha1.OCIPullStatus, pull *v1alpha1.OCIPull, chain ocichain.Chain, c puller.Cursor, prog puller.Progress) {
	pullStatus(status, pull, chain, c)
	status.State, status.Reason, status.Message, status.NextRetry = v1alpha1.OCIPullPulling, "", "", nil
	status.Registry = cmp.Or(prog.Registry, status.Registry)
	status.PulledBytes, status.TotalBytes = prog.Done, prog.Total
	// The bytes stay out of the message: a FleetRelease quotes it, and the hub gets it through
	// the release's feedback, which should change when the registry does, not at every report.
	msg := "pulling the artifact through the chain"
	if status.Registry != "" {
		msg = "pulling from " + status.Registry
	}
	setReady(status, pull.Generation, false, v1alpha1.ReasonPulling, msg)
}
