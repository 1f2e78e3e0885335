package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestOutcome pins what each kind of error does to the Result controller-runtime gets.
func TestOutcome(t *testing.T) {
	failed := errors.New("the apiserver refused the write")
	wait := Wait(10*time.Second, "NameTaken", errors.New("held by another"))
	stall := Stall("WorkTooLarge", errors.New("over the budget"))
	periodic := ctrl.Result{RequeueAfter: time.Minute}
	for _, tc := range []struct {
		name      string
		res       ctrl.Result
		err       error
		waits     int
		kind      Kind
		wantErr   bool
		min, max  time.Duration // bounds of RequeueAfter
		wantExact *ctrl.Result
	}{
		{name: "done keeps its result", res: periodic, kind: Done, wantExact: &periodic},
		{name: "a plain error retries through the rate limiter", res: periodic, err: failed, kind: Retry, wantErr: true, wantExact: &ctrl.Result{}},
		{name: "a wrapped plain error retries", err: fmt.Errorf("writing: %w", failed), kind: Retry, wantErr: true, wantExact: &ctrl.Result{}},
		{name: "a first wait: between half and all of After", res: periodic, err: wait, waits: 1, kind: Waits, min: 5 * time.Second, max: 10 * time.Second},
		{name: "the third wait in a row: four times After", err: wait, waits: 3, kind: Waits, min: 20 * time.Second, max: 40 * time.Second},
		{name: "waits are capped", err: wait, waits: 40, kind: Waits, min: BackoffMax / 2, max: BackoffMax},
		{name: "a wait of no delay starts at BackoffInitial", err: Wait(0, "X", failed), waits: 1, kind: Waits, min: BackoffInitial / 2, max: BackoffInitial},
		{name: "a wrapped wait still waits", err: fmt.Errorf("app: %w", wait), waits: 1, kind: Waits, min: 5 * time.Second, max: 10 * time.Second},
		{name: "a wait joined with a failed status write retries", err: errors.Join(wait, failed), kind: Retry, wantErr: true, wantExact: &ctrl.Result{}},
		{name: "a wait joined with no error waits", err: errors.Join(wait, nil), waits: 1, kind: Waits, min: 5 * time.Second, max: 10 * time.Second},
		{name: "two waits: the shorter first delay", err: errors.Join(wait, Wait(2*time.Second, "Y", failed)), waits: 1, kind: Waits, min: time.Second, max: 2 * time.Second},
		{name: "a stall does not requeue, whatever the result asked", res: periodic, err: stall, kind: Stalled, wantExact: &ctrl.Result{}},
		{name: "a stall joined with a wait waits", err: errors.Join(stall, wait), waits: 1, kind: Waits, min: 5 * time.Second, max: 10 * time.Second},
		{name: "a stall joined with a failure retries", err: errors.Join(stall, failed), kind: Retry, wantErr: true, wantExact: &ctrl.Result{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := KindOf(tc.err); k != tc.kind {
				t.Fatalf("KindOf = %v, want %v", k, tc.kind)
			}
			for range 20 { // jitter: every draw within the bounds
				res, err := Outcome(tc.res, tc.err, tc.waits)
				if (err != nil) != tc.wantErr {
					t.Fatalf("error = %v, want error %v", err, tc.wantErr)
				}
				if tc.wantErr && !errors.Is(err, failed) {
					t.Fatalf("error %v does not carry the failure", err)
				}
				if tc.wantExact != nil {
					if res != *tc.wantExact {
						t.Fatalf("result = %+v, want %+v", res, *tc.wantExact)
					}
					continue
				}
				if res.RequeueAfter < tc.min || res.RequeueAfter > tc.max {
					t.Fatalf("RequeueAfter = %v, want within [%v, %v]", res.RequeueAfter, tc.min, tc.max)
				}
			}
		})
	}
}

// TestReconcilerCountsWaitsPerObject: the wrapper backs off the waits of one object, not of
// another, and forgets them once the object stops waiting.
func TestReconcilerCountsWaitsPerObject(t *testing.T) {
	outcome := map[string]error{}
	r := Reconciler(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, outcome[req.Name]
	}))
	a, b := reconcile.Request{}, reconcile.Request{}
	a.Name, b.Name = "a", "b"
	outcome["a"] = Wait(time.Second, "X", errors.New("waits"))
	outcome["b"] = Wait(time.Second, "X", errors.New("waits"))
	after := func(req reconcile.Request) time.Duration {
		t.Helper()
		res, err := r.Reconcile(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res.RequeueAfter
	}
	for range 5 {
		after(a)
	}
	if d := after(a); d < 16*time.Second { // the sixth wait: 32 s before jitter
		t.Errorf("a's sixth wait in a row is %v, want ≥ 16s", d)
	}
	if d := after(b); d > time.Second {
		t.Errorf("b's first wait is %v, want ≤ 1s: another object's waits count", d)
	}
	// A failure keeps a's count, a success forgets it.
	outcome["a"] = errors.New("boom")
	if _, err := r.Reconcile(t.Context(), a); err == nil {
		t.Fatal("the failure was swallowed")
	}
	outcome["a"] = Wait(time.Second, "X", errors.New("waits"))
	if d := after(a); d < 32*time.Second {
		t.Errorf("a's seventh wait after a failure is %v, want ≥ 32s", d)
	}
	outcome["a"] = nil
	after(a)
	outcome["a"] = Wait(time.Second, "X", errors.New("waits"))
	if d := after(a); d > time.Second {
		t.Errorf("a's first wait after it was done is %v, want ≤ 1s", d)
	}
}

// TestRateLimiter: per object, jittered exponential from BackoffInitial to BackoffMax; Forget
// starts over; another object is not slowed by one that fails.
func TestRateLimiter(t *testing.T) {
	rl := RateLimiter[string]()
	var last time.Duration
	for n := 1; n <= 30; n++ {
		d := rl.When("a")
		lo, hi := min(BackoffInitial<<(n-1), BackoffMax)/2, min(BackoffInitial<<(n-1), BackoffMax)
		if n > 20 {
			lo, hi = BackoffMax/2, BackoffMax
		}
		if d < lo || d > hi {
			t.Fatalf("failure %d: %v, want within [%v, %v]", n, d, lo, hi)
		}
		last = d
	}
	if last > BackoffMax {
		t.Fatalf("the cap is %v, got %v", BackoffMax, last)
	}
	if got := rl.NumRequeues("a"); got != 30 {
		t.Errorf("NumRequeues = %d, want 30", got)
	}
	if d := rl.When("b"); d > BackoffInitial {
		t.Errorf("another object's first failure waits %v", d)
	}
	rl.Forget("a")
	if d := rl.When("a"); d > BackoffInitial {
		t.Errorf("after Forget the first failure waits %v", d)
	}
}

// TestStalledBy: the Stalled condition is set for a stall alone, with its reason and message.
func TestStalledBy(t *testing.T) {
	stall := Stall("WorkTooLarge", errors.New("over the budget"))
	for _, tc := range []struct {
		err          error
		ok           bool
		reason, text string
	}{
		{err: nil},
		{err: errors.New("boom")},
		{err: Wait(0, "X", errors.New("waits"))},
		{err: stall, ok: true, reason: "WorkTooLarge", text: "over the budget"},
		{err: errors.Join(stall, nil), ok: true, reason: "WorkTooLarge", text: "over the budget"},
		{err: errors.Join(stall, errors.New("status write failed"))},
	} {
		reason, text, ok := StalledBy(tc.err)
		if ok != tc.ok || reason != tc.reason || text != tc.text {
			t.Errorf("StalledBy(%v) = %q, %q, %v; want %q, %q, %v", tc.err, reason, text, ok, tc.reason, tc.text, tc.ok)
		}
	}
}
