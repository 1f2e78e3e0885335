package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// startAgentOn runs an in-process agent on the cache folder dir until stop or the test's end.
func startAgentOn(t *testing.T, dir string, opts ...func(*agent.Options)) (stop func()) {
	t.Helper()
	mgr, err := agent.NewManager(agentConfig(t), withOptions(agent.Options{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, CacheDir: dir, RetryFailed: time.Minute,
		Backoff: puller.Backoff{Initial: 400 * time.Millisecond, Max: time.Second},
	}, opts))
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Run(t, mgr)
}

// TestCacheIndexTruncatedByHand: with the agent stopped, its cache's index.json is cut in half;
// the restarted agent rebuilds it, the pull completes again without downloading anything, and
// the chart already cached still loads: a new generation of the release upgrades it.
func TestCacheIndexTruncatedByHand(t *testing.T) {
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	m := reg.PushChartT(t, "charts/trunc", testbed.HelloChart("trunc", "0.1.0"))
	putChain(t, c, ocichain.Chain{Workspace: "trunc", Route: "r", Registries: []puller.Registry{reg.entry("only")}})
	dir := filepath.Join(t.TempDir(), "cache")
	stop := startAgentOn(t, dir)

	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "trunc"},
		Spec:       v1alpha1.FleetReleaseSpec{Workspace: "trunc", App: "trunc", Pull: "trunc", ReleaseName: "trunc", Namespace: "app-trunc"},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, rel) })
	pull := newPull(t, c, ocichain.Namespace, "trunc", v1alpha1.OCIPullSpec{Workspace: "trunc", Repository: "charts/trunc", Tag: "0.1.0"})
	waitRelease(t, c, rel, "installed", deployed(1, 1))
	stop()

	index := filepath.Join(dir, "index.json")
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	blobGets := reg.Proxy.BlobGets.Load()
	attempts := func() float64 {
		return testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "only", "class": ""})
	}
	before := attempts()
	restarted := time.Now()
	startAgentOn(t, dir)
	testkit.Eventually(t, 30*time.Second, "the restarted agent pulls again", func() error {
		if n := attempts() - before; n < 1 {
			return fmt.Errorf("%v successful attempts since the restart", n)
		}
		return nil
	})
	s := waitFor(t, c, pull, 10*time.Second, "pulled", pulled)
	t.Logf("pulled again %s after the restart on a truncated index (%d of %d bytes kept)", time.Since(restarted).Round(10*time.Millisecond), len(data)/2, len(data))
	if s.Digest != m.Digest.String() || ready(t, s).Reason != v1alpha1.ReasonPulled {
		t.Errorf("status after the restart: %+v; want Pulled %s", s, m.Digest)
	}
	if n := reg.Proxy.BlobGets.Load() - blobGets; n != 0 {
		t.Errorf("the pull after the rebuild downloaded %d blobs; want none, they were cached", n)
	}
	if reached := testkit.VerifyCache(t, dir); !reached[m.Digest] {
		t.Errorf("the rebuilt index does not reach the chart %s", m.Digest)
	}

	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) { r.Spec.Repairs++ })
	waitRelease(t, c, rel, "upgraded from the cached chart", deployed(2, 2))
	if n := reg.Proxy.BlobGets.Load() - blobGets; n != 0 {
		t.Errorf("the upgrade downloaded %d blobs; want none", n)
	}
	deleteRelease(t, c, rel) // while the restarted agent runs: it removes the finalizer
}

// TestCacheGarbageCollection: past --cache-max-bytes the agent removes the artifacts that no
// OCIPull and no FleetRelease references, and never one that is referenced, even when that
// leaves the cache over its bound.
func TestCacheGarbageCollection(t *testing.T) {
	const ws, mib = "gc", 1 << 20
	c := startSpoke(t, "app-gc")
	reg := startRegistry(t)
	arts := map[string]digest.Digest{}
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		m, err := reg.PushRandom(t.Context(), "apps/gc", name, 1, mib, uint64(40+i))
		if err != nil {
			t.Fatal(err)
		}
		arts[name] = m.Digest
	}
	putChain(t, c, ocichain.Chain{Workspace: ws, Route: "r", Registries: []puller.Registry{reg.entry("reg")}})
	const bound = 3*mib + mib/2
	dir := filepath.Join(t.TempDir(), "cache")
	startAgentOn(t, dir, func(o *agent.Options) { o.CacheMaxBytes, o.CacheMinAge = bound, time.Second })
	inCache := func(names ...string) error {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", arts[n].Encoded())); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
		return nil
	}
	pulls := map[string]*v1alpha1.OCIPull{}
	pullOf := func(name string) {
		t.Helper()
		p := &v1alpha1.OCIPull{ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "gc-" + name},
			Spec: v1alpha1.OCIPullSpec{Workspace: ws, Repository: "apps/gc", Tag: name}}
		if err := c.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.IgnoreNotFound(c.Delete(context.Background(), p)) })
		pulls[name] = p
		waitFor(t, c, p, 20*time.Second, "pulled "+name, pulled)
	}
	for _, n := range []string{"a", "b", "c"} {
		pullOf(n)
	}
	evictions := value(agent.CacheEvictions)

	// a stays referenced by a release that deployed it; b is referenced by nothing.
	keeper := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "gc-keeper"},
		Spec:       v1alpha1.FleetReleaseSpec{Workspace: ws, App: "keeper", Pull: "gc-gone", ReleaseName: "keeper", Namespace: "app-gc"},
	}
	if err := c.Create(t.Context(), keeper); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, keeper) })
	waitRelease(t, c, keeper, "pending", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleasePending {
			return fmt.Errorf("phase %q", s.Phase)
		}
		return nil
	})
	testkit.Eventually(t, 10*time.Second, "the keeper's status names a's digest", func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(keeper), keeper); err != nil {
			return err
		}
		keeper.Status.Digest = arts["a"].String()
		return c.Status().Update(t.Context(), keeper)
	})
	for _, n := range []string{"a", "b"} {
		if err := c.Delete(t.Context(), pulls[n]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // past the minimum age

	pullOf("d")
	testkit.Eventually(t, 10*time.Second, "b removed, the cache under its bound", func() error {
		if size := value(agent.CacheBytes); size > bound {
			return fmt.Errorf("%v bytes", size)
		}
		if inCache("b") == nil {
			return fmt.Errorf("b is still cached")
		}
		return nil
	})
	if err := inCache("a", "c", "d"); err != nil {
		t.Errorf("a referenced artifact was removed: %v", err)
	}
	if n := value(agent.CacheEvictions) - evictions; n != 1 {
		t.Errorf("%v evictions, want 1 (b)", n)
	}
	t.Logf("after d: %v bytes in %v artifacts, bound %d", value(agent.CacheBytes), value(agent.CacheArtifacts), bound)

	// Everything referenced: e takes the cache over its bound, and nothing is removed.
	time.Sleep(1500 * time.Millisecond)
	pullOf("e")
	time.Sleep(time.Second)
	if err := inCache("a", "c", "d", "e"); err != nil {
		t.Errorf("a referenced artifact was removed to meet the bound: %v", err)
	}
	if size := value(agent.CacheBytes); size <= bound {
		t.Errorf("the cache holds %v bytes, at most its bound %d, with four referenced artifacts of 1 MiB", size, bound)
	}
	if n := value(agent.CacheEvictions) - evictions; n != 1 {
		t.Errorf("%v evictions, want still 1", n)
	}
	testkit.VerifyCache(t, dir)
	t.Logf("after e: %v bytes in %v artifacts, over the bound %d: all referenced", value(agent.CacheBytes), value(agent.CacheArtifacts), bound)
}

// value reads a gauge or a counter of this process.
func value(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		panic(err)
	}
	if g := out.GetGauge(); g != nil {
		return g.GetValue()
	}
	return out.GetCounter().GetValue()
}

// TestLeadersShareACache runs two agents of the real binary on one cache folder, as replicas on
// a ReadWriteMany claim do: the standby leaves the cache alone (it neither locks it nor repairs
// it) until the leader, SIGKILLed, is gone; then it opens the cache, keeps what the first leader
// pulled and pulls into it.
func TestLeadersShareACache(t *testing.T) {
	const ws, timeout = "shared", time.Minute
	c := startSpoke(t, "app-shared")
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	v1 := reg.PushT(t, "apps/shared", "v1", []byte("pulled by the first leader"))
	v2 := reg.PushT(t, "apps/shared", "v2", []byte("pulled by the second"))
	putChain(t, c, ocichain.Chain{Workspace: ws, Route: "r", Registries: []puller.Registry{reg.Entry("reg")}})

	bin := testkit.Binary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	dir := filepath.Join(t.TempDir(), "cache")
	a, b, held := testkit.LeaderAndStandby(t, c, ocichain.Namespace, agent.DefaultLeaderElectionID, timeout, func(name string) *testkit.Process {
		return testkit.StartProcess(t, bin, name, append([]string{"agent", "--kubeconfig", spoke.Kubeconfig, "--cache-dir", dir},
			testkit.LeaderElectionFlags(ocichain.Namespace)...)...)
	})
	one := newPull(t, c, ocichain.Namespace, "shared-one", v1alpha1.OCIPullSpec{Workspace: ws, Repository: "apps/shared", Tag: "v1"})
	waitFor(t, c, one, timeout, "pulled by the leader", pulled)
	if n, err := b.Scrape("fleet_agent_cache_artifacts", ""); err != nil || n != 0 {
		t.Errorf("the standby's fleet_agent_cache_artifacts = %v (%v), want 0: it has not opened the cache", n, err)
	}
	if strings.Contains(b.Log(), "cache repaired") {
		t.Errorf("the standby repaired the leader's cache:\n%s", b.Log())
	}

	testkit.TakeOver(t, c, ocichain.Namespace, agent.DefaultLeaderElectionID, timeout, a, b, held)
	two := newPull(t, c, ocichain.Namespace, "shared-two", v1alpha1.OCIPullSpec{Workspace: ws, Repository: "apps/shared", Tag: "v2"})
	if s := waitFor(t, c, two, timeout, "pulled by the new leader", pulled); s.Digest != v2.Digest.String() {
		t.Errorf("status %+v, want digest %s", s, v2.Digest)
	}
	reached := testkit.VerifyCache(t, dir)
	if !reached[v1.Digest] || !reached[v2.Digest] {
		t.Errorf("the shared cache reaches v1: %v, v2: %v; want both", reached[v1.Digest], reached[v2.Digest])
	}
	testkit.Eventually(t, timeout, "the new leader's cache metrics", func() error {
		if n, err := b.Scrape("fleet_agent_cache_artifacts", ""); err != nil || n != 2 {
			return fmt.Errorf("fleet_agent_cache_artifacts = %v (%v), want 2", n, err)
		}
		return nil
	})
}
