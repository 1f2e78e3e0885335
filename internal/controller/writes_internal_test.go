package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The routing reconciler's bound on writes in flight holds for all its workers together: two
// reconciles' writers, each free to start MaxConcurrentWrites goroutines, have that many writes
// in flight at once, not more.
func TestWritesInFlightSharedByWorkers(t *testing.T) {
	r := &RoutingReconciler{MaxConcurrentWrites: 3}
	var inFlight atomic.Int32
	release := make(chan struct{})
	write := func(context.Context) error {
		inFlight.Add(1)
		<-release
		inFlight.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	for range 2 { // two workers, one reconcile each
		wg.Go(func() {
			w := r.writer()
			for range 6 {
				w.do(t.Context(), kindStorage, verbStatus, write)
			}
			if err := w.wait(); err != nil {
				t.Error(err)
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); inFlight.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for a fourth write, were the bound per reconcile
	if n := inFlight.Load(); n != 3 {
		t.Errorf("%d writes in flight, want 3 (MaxConcurrentWrites, both workers together)", n)
	}
	close(release)
	wg.Wait()
}
