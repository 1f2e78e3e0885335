package puller_test

import (
	"sync"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// The registries, artifacts and faulty addresses come from internal/testbed; here is what only
// the puller's tests need.

// newArtifact packs layers into an artifact, ready to be pushed to registries.
func newArtifact(tb testing.TB, layers ...[]byte) *testbed.Artifact {
	tb.Helper()
	a, err := testbed.NewArtifact(layers...)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// push pushes a to repository:tag of r.
func push(tb testing.TB, r *testbed.Registry, repository, tag string, a *testbed.Artifact) {
	tb.Helper()
	if err := r.PushArtifact(tb.Context(), repository, tag, a); err != nil {
		tb.Fatal(err)
	}
}

// fakeClock advances only when the puller waits, so back-off is exact and instant. onWait runs
// after each wait with the new time, e.g. to let an artifact "replicate".
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	waits  []time.Duration
	onWait func(now time.Time)
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 4, 16, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	now := c.now
	c.mu.Unlock()
	if c.onWait != nil {
		c.onWait(now)
	}
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}
