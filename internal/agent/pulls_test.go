package agent_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// A registry frozen mid-blob (SIGSTOP: it accepts connections, sends nothing) holds its pull for
// the idle timeout, not the attempt timeout: the pull shows its progress meanwhile, then fails
// over to the next registry; the cluster's other pulls complete while it is stuck.
func TestFrozenRegistryDoesNotBlockOtherPulls(t *testing.T) {
	const idle = 4 * time.Second
	const layer = 64 << 20
	c := startSpoke(t, "app-frozen")
	slow, next, other := testbed.StartRegistryT(t, testbed.RegistryOptions{}), startRegistry(t), startRegistry(t)
	var big [2]string
	for i, r := range []*testbed.Registry{slow, next.Registry} {
		m, err := r.PushRandom(t.Context(), "apps/big", "v1", 1, layer, 17)
		if err != nil {
			t.Fatal(err)
		}
		big[i] = m.Digest.String()
	}
	if big[0] != big[1] {
		t.Fatalf("one artifact, two digests: %v", big)
	}
	frozen := testbed.StartProxyT(t, slow, testbed.ProxyOptions{FreezeAfter: 8 << 20})
	putChain(t, c, ocichain.Chain{Workspace: "frozen", Route: "r", Registries: []puller.Registry{frozen.Entry("slow"), next.entry("next")}})
	putChain(t, c, ocichain.Chain{Workspace: "others", Route: "r", Registries: []puller.Registry{other.entry("other")}})
	runAgent(t, func(o *agent.Options) {
		o.IdleTimeout, o.ProgressInterval = idle, 200*time.Millisecond
	})

	bigPull := newPull(t, c, ocichain.Namespace, "big", v1alpha1.OCIPullSpec{Workspace: "frozen", Repository: "apps/big", Tag: "v1"})
	select {
	case <-frozen.Frozen:
	case <-time.After(30 * time.Second):
		t.Fatal("the registry was not frozen within 30 s: the pull did not reach 8 MiB")
	}
	frozenAt := time.Now()

	// The stuck pull shows where it is: Pulling from slow, some bytes of the whole.
	s := waitFor(t, c, bigPull, idle, "the stuck pull's progress", func(s v1alpha1.OCIPullStatus) error {
		if s.State != v1alpha1.OCIPullPulling || s.Registry != "slow" || s.PulledBytes == 0 {
			return fmt.Errorf("state %q, registry %q, %d bytes", s.State, s.Registry, s.PulledBytes)
		}
		return nil
	})
	if s.TotalBytes < layer || s.PulledBytes >= s.TotalBytes || s.ObservedGeneration != 1 {
		t.Errorf("progress of the stuck pull: %d of %d bytes at generation %d; want some of more than %d at 1", s.PulledBytes, s.TotalBytes, s.ObservedGeneration, layer)
	}
	if r := ready(t, s); r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonPulling || r.ObservedGeneration != 1 {
		t.Errorf("Ready of the stuck pull: %+v; want False, Pulling, generation 1", r)
	}
	t.Logf("stuck pull's status: %s, %.1f of %.1f MiB", ready(t, s).Message, float64(s.PulledBytes)/(1<<20), float64(s.TotalBytes)/(1<<20))

	// The cluster's other pulls, created while the big one is stuck.
	var small []*v1alpha1.OCIPull
	for i := range 3 {
		m := other.PushT(t, fmt.Sprintf("apps/small-%d", i), "v1", fmt.Appendf(nil, "small %d", i))
		small = append(small, newPull(t, c, ocichain.Namespace, fmt.Sprintf("small-%d", i), v1alpha1.OCIPullSpec{Workspace: "others", Repository: fmt.Sprintf("apps/small-%d", i), Digest: m.Digest.String()}))
	}
	for _, p := range small {
		waitFor(t, c, p, idle, "a small pull while the big one is stuck", pulled)
	}
	othersDone := time.Since(frozenAt)
	var now v1alpha1.OCIPull
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(bigPull), &now); err != nil {
		t.Fatal(err)
	}
	if now.Status.State != v1alpha1.OCIPullPulling || now.Status.Registry != "slow" {
		t.Errorf("when the other pulls were done, the big one was %s at %q; want still Pulling from slow", now.Status.State, now.Status.Registry)
	}

	s = waitFor(t, c, bigPull, idle+10*time.Second, "failed over to next", pulled)
	failover := time.Since(frozenAt)
	if s.Registry != "next" || s.Digest != big[0] || s.FailoverCount != 1 || len(s.Failovers) != 1 || s.Failovers[0].Registry != "slow" || s.Failovers[0].Reason != string(puller.Unreachable) {
		t.Errorf("pulled status: %+v; want registry next, digest %s, one failover from slow (Unreachable)", s, big[0])
	}
	if s.PulledBytes != s.TotalBytes || s.TotalBytes < layer {
		t.Errorf("pulled: %d of %d bytes; want all of them", s.PulledBytes, s.TotalBytes)
	}
	if failover < idle || failover > idle+5*time.Second {
		t.Errorf("failover %s after the freeze; want about the idle timeout %s", failover, idle)
	}
	if next.Proxy.BlobGets.Load() == 0 {
		t.Error("nothing was downloaded from next")
	}
	t.Logf("registry frozen mid-blob: 3 other pulls done %s after the freeze; failover to next %s after it (idle timeout %s)",
		othersDone.Round(time.Millisecond), failover.Round(time.Millisecond), idle)
}

// A new spec's pull never shows the previous spec's status as current: from its first moment it
// says Pulling at the new generation, without the old digest.
func TestNewGenerationShowsItsOwnStatus(t *testing.T) {
	c := startSpoke(t, "app-generation")
	reg, hung := startRegistry(t), testbed.StartRegistryT(t, testbed.RegistryOptions{})
	m := reg.PushT(t, "apps/gen", "v1", []byte("one"))
	putChain(t, c, ocichain.Chain{Workspace: "gen", Route: "r", Registries: []puller.Registry{reg.entry("reg")}})
	putChain(t, c, ocichain.Chain{Workspace: "gen-hung", Route: "r2", Registries: []puller.Registry{hung.Entry("hung")}})
	runAgent(t, func(o *agent.Options) { o.IdleTimeout, o.ProgressInterval = time.Minute, 200*time.Millisecond })
	p := newPull(t, c, ocichain.Namespace, "gen", v1alpha1.OCIPullSpec{Workspace: "gen", Repository: "apps/gen", Tag: "v1"})
	waitFor(t, c, p, 20*time.Second, "generation 1 pulled", pulled)

	if err := hung.Freeze(); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.OCIPull
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Workspace = "gen-hung"
	if err := c.Update(t.Context(), &got); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	s := waitFor(t, c, p, 3*time.Second, "generation 2's own status", func(s v1alpha1.OCIPullStatus) error {
		if s.ObservedGeneration != 2 {
			return fmt.Errorf("observedGeneration %d", s.ObservedGeneration)
		}
		return nil
	})
	if s.State != v1alpha1.OCIPullPulling || s.Digest != "" || s.Route != "r2" || s.LastSuccess == nil || s.Registry != "" && s.Registry != "hung" {
		t.Errorf("status at generation 2: %+v; want Pulling, route r2, no digest (generation 1's was %s), no registry but hung, the last success kept", s, m.Digest)
	}
	shown := time.Since(changed)
	s = waitFor(t, c, p, 2*time.Second, "the registry tried", func(s v1alpha1.OCIPullStatus) error {
		if s.Registry != "hung" || s.State != v1alpha1.OCIPullPulling {
			return fmt.Errorf("state %q, registry %q", s.State, s.Registry)
		}
		return nil
	})
	if r := ready(t, s); r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonPulling || r.ObservedGeneration != 2 {
		t.Errorf("Ready at generation 2: %+v; want False, Pulling, generation 2", r)
	}
	t.Logf("generation 2 showed as Pulling %s after the spec changed", shown.Round(time.Millisecond))
}

// A pull that fails at every registry starts over with exponential back-off: over a window its
// attempts, and its status writes, stay a handful, not one per RetryFailed.
func TestFailingPullBacksOff(t *testing.T) {
	const window = 8 * time.Second
	const retry, retryMax = 200 * time.Millisecond, 1600 * time.Millisecond
	c := startSpoke(t, "app-backoff")
	closed := testbed.ClosedAddrT(t)
	putChain(t, c, ocichain.Chain{Workspace: "backoff", Route: "r", Registries: []puller.Registry{testbed.AddrEntry("down", closed)}})
	runAgent(t, func(o *agent.Options) { o.RetryFailed, o.RetryFailedMax = retry, retryMax })

	wc, err := client.NewWithWatch(spoke.Config, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), &v1alpha1.OCIPullList{}, client.InNamespace(ocichain.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var writes atomic.Int64
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*v1alpha1.OCIPull); ok && ev.Type == watch.Modified && p.Name == "down" {
				writes.Add(1)
			}
		}
	}()
	before := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "down"})
	p := newPull(t, c, ocichain.Namespace, "down", v1alpha1.OCIPullSpec{Workspace: "backoff", Repository: "apps/down", Tag: "v1"})
	s := waitFor(t, c, p, 10*time.Second, "failed", func(s v1alpha1.OCIPullStatus) error {
		if s.State != v1alpha1.OCIPullFailed {
			return fmt.Errorf("state %q", s.State)
		}
		return nil
	})
	if s.NextRetry == nil || s.Reason != string(puller.Unreachable) {
		t.Errorf("failed status: %+v; want reason Unreachable and the time the pull starts over", s)
	}
	if r := ready(t, s); r.Reason != v1alpha1.ReasonPullFailed || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready: %+v", r)
	}
	time.Sleep(window)
	attempts := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "down"}) - before
	n := writes.Load()
	// Back-off of 0.1–0.2 s doubling to 0.8–1.6 s: at most 4 retries in the first 1.5 s and one
	// per 0.8 s after; a fixed 200 ms would make 40.
	if maxAttempts := 1 + 4 + float64(window/(retryMax/2)); attempts > maxAttempts || attempts < 4 {
		t.Errorf("%v attempts in %s; want between 4 and %v (back-off from %s to %s)", attempts, window, maxAttempts, retry, retryMax)
	}
	if float64(n) > attempts+2 {
		t.Errorf("%d status writes for %v attempts; want at most one per attempt (and the first two)", n, attempts)
	}
	var got v1alpha1.OCIPull
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &got); err != nil {
		t.Fatal(err)
	}
	if r := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition); r == nil || r.LastTransitionTime != ready(t, s).LastTransitionTime {
		t.Errorf("Ready changed its transition time while the pull kept failing: %+v", r)
	}
	t.Logf("a pull failing everywhere for %s: %v attempts, %d status writes (RetryFailed %s, RetryFailedMax %s)", window, attempts, n, retry, retryMax)
}
