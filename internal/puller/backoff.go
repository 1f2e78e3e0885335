package puller

import (
	"math/rand/v2"
	"time"
)

// Defaults of Backoff.
const (
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 30 * time.Second
)

// Backoff is the exponential back-off between attempts at a registry that lacks the artifact.
// The n-th delay is d/2 plus a jittered share of d/2, where d = Initial·2ⁿ⁻¹ capped at Max.
type Backoff struct {
	Initial time.Duration // first delay before jitter; default DefaultBackoffInitial
	Max     time.Duration // cap before jitter; default DefaultBackoffMax
	// Jitter returns a number in [0, 1); default math/rand/v2.Float64. Tests fix it.
	Jitter func() float64
}

// Delay returns the delay after the n-th attempt (n ≥ 1).
func (b Backoff) Delay(n int) time.Duration {
	initial, maxDelay, jitter := b.Initial, b.Max, b.Jitter
	if initial <= 0 {
		initial = DefaultBackoffInitial
	}
	if maxDelay <= 0 {
		maxDelay = DefaultBackoffMax
	}
	if jitter == nil {
		jitter = rand.Float64
	}
	d := initial
	for i := 1; i < n && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	return d/2 + time.Duration(jitter()*float64(d/2))
}

// Clock tells the time and waits; tests inject a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
