package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// One local cluster, the "spoke", serves the package's tests, which run one after another; each
// test runs its own agent manager with its own cache directory and stops it.
var (
	spoke     *testbed.Hub
	spokeErr  error
	spokeOnce sync.Once
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	if spoke != nil {
		if err := spoke.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// startSpoke returns the package's cluster and a client of it, with fleet-system and the
// test's namespace created.
func startSpoke(t *testing.T, ns string) client.Client {
	t.Helper()
	spokeOnce.Do(func() { spoke, spokeErr = testbed.Start(context.Background(), testbed.Options{}) })
	if errors.Is(spokeErr, testbed.ErrBinariesMissing) && os.Getenv(testbed.EnvRequire) != "1" {
		t.Skip(spokeErr)
	}
	if spokeErr != nil {
		t.Fatal(spokeErr)
	}
	c, err := client.New(spoke.Config, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ocichain.Namespace, ns} {
		if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return c
}

var (
	grantOnce sync.Once
	grantCfg  *rest.Config
	grantErr  error
)

// agentConfig is the spoke's config acting as the agent's ServiceAccount, granted what the chart
// grants (testbed.GrantFleetAgent: the generated agent roles, the default workspace role).
func agentConfig(t *testing.T) *rest.Config {
	t.Helper()
	grantOnce.Do(func() { grantCfg, grantErr = testbed.GrantFleetAgent(context.Background(), spoke.Config) })
	if grantErr != nil {
		t.Fatal(grantErr)
	}
	return grantCfg
}

// runAgent runs an agent manager on the spoke, as the agent's ServiceAccount with only the chart's roles,
// until the test ends, its options changed by opts; it returns the cache dir.
func runAgent(t *testing.T, opts ...func(*agent.Options)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	mgr, err := agent.NewManager(agentConfig(t), withOptions(agent.Options{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, CacheDir: dir, RetryFailed: time.Minute,
		Backoff: puller.Backoff{Initial: 400 * time.Millisecond, Max: time.Second},
	}, opts))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, mgr)
	return dir
}

// withOptions is o changed by opts.
func withOptions(o agent.Options, opts []func(*agent.Options)) agent.Options {
	for _, f := range opts {
		f(&o)
	}
	return o
}

// putChain creates or updates the chain Secret of a workspace.
func putChain(t *testing.T, c client.Client, chain ocichain.Chain) {
	t.Helper()
	data, err := chain.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: ocichain.SecretName(chain.Workspace)}}
	_, err = ctrlCreateOrUpdate(t.Context(), c, s, func() { s.Data = map[string][]byte{ocichain.Key: data} })
	if err != nil {
		t.Fatal(err)
	}
}

func ctrlCreateOrUpdate(ctx context.Context, c client.Client, s *corev1.Secret, mutate func()) (bool, error) {
	err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
	if apierrors.IsNotFound(err) {
		mutate()
		return true, c.Create(ctx, s)
	}
	if err != nil {
		return false, err
	}
	mutate()
	return false, c.Update(ctx, s)
}

func newPull(t *testing.T, c client.Client, ns, name string, spec v1alpha1.OCIPullSpec) *v1alpha1.OCIPull {
	t.Helper()
	p := &v1alpha1.OCIPull{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	// Gone before the test's agent stops, so that the next test's agent does not pull it.
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), p); err != nil {
			t.Error(err)
		}
	})
	return p
}

// waitFor polls the pull every 100 ms until check accepts its status, and returns it.
func waitFor(t *testing.T, c client.Client, p *v1alpha1.OCIPull, timeout time.Duration, what string, check func(s v1alpha1.OCIPullStatus) error) v1alpha1.OCIPullStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var got v1alpha1.OCIPull
		err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &got)
		if err == nil {
			if err = check(got.Status); err == nil {
				return got.Status
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v (status %+v)", what, timeout, err, got.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func pulled(s v1alpha1.OCIPullStatus) error {
	if s.State != v1alpha1.OCIPullPulled {
		return fmt.Errorf("state %q", s.State)
	}
	return nil
}

func ready(t *testing.T, s v1alpha1.OCIPullStatus) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(s.Conditions, v1alpha1.ReadyCondition)
	if c == nil {
		t.Fatalf("no Ready condition in %+v", s)
	}
	return c
}

// inCache says whether the layout in dir holds the blob d.
func inCache(dir string, d ocispec.Descriptor) bool {
	_, err := os.Stat(filepath.Join(dir, "blobs", d.Digest.Algorithm().String(), d.Digest.Encoded()))
	return err == nil
}

// A mirror that lacks the artifact is waited for until the chain's replication wait passes, then
// the next registry serves it.
func TestFailoverAfterReplicationWait(t *testing.T) {
	start := time.Now()
	c := startSpoke(t, "app-failover")
	mirror, source := startRegistry(t), startRegistry(t)
	m := source.PushT(t, "apps/web", "v1", []byte("layer one"), []byte("layer two"))
	putChain(t, c, ocichain.Chain{Workspace: "failover", Route: "edge", ReplicationWait: "3s",
		Registries: []puller.Registry{mirror.entry("mirror"), source.entry("source")}})
	attemptsBefore := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "source", "class": ""})
	waitingBefore := testkit.Counter("fleet_agent_pulls_total", map[string]string{"state": "WaitingForArtifact"})
	dir := runAgent(t)
	t.Logf("spoke and registries up in %s", time.Since(start))

	created := time.Now()
	p := newPull(t, c, ocichain.Namespace, "web", v1alpha1.OCIPullSpec{Workspace: "failover", Repository: "apps/web", Tag: "v1"})
	s := waitFor(t, c, p, 20*time.Second, "waiting for the mirror", func(s v1alpha1.OCIPullStatus) error {
		if s.State != v1alpha1.OCIPullWaitingForArtifact {
			return fmt.Errorf("state %q", s.State)
		}
		return nil
	})
	if s.Registry != "mirror" || s.Reason != string(puller.NotFound) || s.NextRetry == nil || s.Attempts < 1 || s.Route != "edge" || s.ObservedGeneration != 1 {
		t.Errorf("waiting status: %+v; want registry mirror, reason NotFound, a nextRetry, attempts ≥ 1, route edge, observedGeneration 1", s)
	}
	if s.NextRetry != nil && (s.NextRetry.Before(&metav1.Time{Time: created.Add(-time.Second)}) || s.NextRetry.After(created.Add(5*time.Second))) {
		t.Errorf("nextRetry %s: want within the 3 s replication wait after %s", s.NextRetry, created)
	}
	if r := ready(t, s); r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonWaitingForArtifact {
		t.Errorf("Ready while waiting: %+v", r)
	}
	waiting := time.Now()

	s = waitFor(t, c, p, 20*time.Second, "pulled from the source", pulled)
	if took := time.Since(created); took < 3*time.Second {
		t.Errorf("pulled after %s: the mirror was given up before the 3 s replication wait", took)
	}
	if s.Registry != "source" || s.Digest != m.Digest.String() || s.Reason != "" || s.LastSuccess == nil || s.NextRetry != nil || s.Route != "edge" || s.Attempts != 1 {
		t.Errorf("pulled status: %+v; want registry source, digest %s, no reason, lastSuccess, route edge, 1 attempt", s, m.Digest)
	}
	if r := ready(t, s); r.Status != metav1.ConditionTrue || r.Reason != v1alpha1.ReasonPulled {
		t.Errorf("Ready once pulled: %+v", r)
	}
	if !inCache(dir, m) {
		t.Errorf("manifest %s is not in the cache layout %s", m.Digest, dir)
	}
	if got := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "source", "class": ""}) - attemptsBefore; got != 1 {
		t.Errorf("successful attempts at source: %v, want 1", got)
	}
	if got := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "mirror", "class": "NotFound"}); got < 2 {
		t.Errorf("NotFound attempts at mirror: %v, want ≥ 2 (back-off 400 ms–1 s over 3 s)", got)
	}
	if got := testkit.Counter("fleet_agent_pulls_total", map[string]string{"state": "WaitingForArtifact"}) - waitingBefore; got != 1 {
		t.Errorf("pulls entering WaitingForArtifact: %v, want 1", got)
	}
	if source.Proxy.BlobGets.Load() != 3 || mirror.Proxy.BlobGets.Load() != 0 {
		t.Errorf("blob GETs: source %d, mirror %d; want 3 (config and two layers) and 0", source.Proxy.BlobGets.Load(), mirror.Proxy.BlobGets.Load())
	}
	t.Logf("pulled %s %s after the OCIPull's creation, %s after it was seen waiting", s.Digest, time.Since(created), time.Since(waiting))
}

// A pull created before the hub delivered its chain waits with ChainNotDelivered, without an
// error loop, and pulls as soon as the chain Secret arrives.
func TestChainArrivesAfterPull(t *testing.T) {
	c := startSpoke(t, "app-late")
	reg := startRegistry(t)
	m := reg.PushT(t, "apps/api", "v2", []byte("api"))
	runAgent(t)

	p := newPull(t, c, ocichain.Namespace, "api", v1alpha1.OCIPullSpec{Workspace: "late", Repository: "apps/api", Digest: m.Digest.String()})
	s := waitFor(t, c, p, 20*time.Second, "ChainNotDelivered", func(s v1alpha1.OCIPullStatus) error {
		if r := meta.FindStatusCondition(s.Conditions, v1alpha1.ReadyCondition); r == nil || r.Reason != v1alpha1.ReasonChainNotDelivered {
			return fmt.Errorf("ready %+v", r)
		}
		return nil
	})
	if s.State != "" || s.ObservedGeneration != 1 || ready(t, s).Status != metav1.ConditionFalse {
		t.Errorf("status without a chain: %+v; want no state, observedGeneration 1, Ready False", s)
	}
	time.Sleep(time.Second) // no error loop: the status stays as it is
	var got v1alpha1.OCIPull
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(p), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != "" || ready(t, got.Status).LastTransitionTime != ready(t, s).LastTransitionTime {
		t.Errorf("status changed while the chain is missing: %+v", got.Status)
	}

	arrived := time.Now()
	putChain(t, c, ocichain.Chain{Workspace: "late", Route: "late-route", Registries: []puller.Registry{reg.entry("only")}})
	s = waitFor(t, c, p, 15*time.Second, "pulled once the chain arrives", pulled)
	if s.Registry != "only" || s.Digest != m.Digest.String() || s.Route != "late-route" || ready(t, s).Reason != v1alpha1.ReasonPulled {
		t.Errorf("status: %+v", s)
	}
	t.Logf("pulled %s after the chain arrived", time.Since(arrived))
}

// A new chain (route and registries) applies to the next pull: the pull runs again through it.
func TestChainChange(t *testing.T) {
	c := startSpoke(t, "app-change")
	first, second := startRegistry(t), startRegistry(t)
	m := first.PushT(t, "apps/db", "v3", []byte("db"))
	if m2 := second.PushT(t, "apps/db", "v3", []byte("db")); m2.Digest != m.Digest {
		t.Fatalf("the same artifact has two digests: %s, %s", m.Digest, m2.Digest)
	}
	putChain(t, c, ocichain.Chain{Workspace: "change", Route: "old", Registries: []puller.Registry{first.entry("first")}})
	runAgent(t)

	p := newPull(t, c, ocichain.Namespace, "db", v1alpha1.OCIPullSpec{Workspace: "change", Repository: "apps/db", Tag: "v3"})
	s := waitFor(t, c, p, 20*time.Second, "pulled through the old chain", pulled)
	if s.Registry != "first" || s.Route != "old" {
		t.Fatalf("status: %+v; want registry first, route old", s)
	}
	before := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "second"})

	putChain(t, c, ocichain.Chain{Workspace: "change", Route: "new", Registries: []puller.Registry{second.entry("second")}})
	s = waitFor(t, c, p, 15*time.Second, "pulled through the new chain", func(s v1alpha1.OCIPullStatus) error {
		if s.Route != "new" {
			return fmt.Errorf("route %q", s.Route)
		}
		return pulled(s)
	})
	if s.Registry != "second" || s.Digest != m.Digest.String() || ready(t, s).Status != metav1.ConditionTrue {
		t.Errorf("status: %+v; want registry second, digest %s, Ready", s, m.Digest)
	}
	if got := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "second"}) - before; got != 1 {
		t.Errorf("attempts at the new chain's registry: %v, want 1", got)
	}
	// The content was cached by the first pull: the new chain resolves it, and downloads nothing.
	if second.Proxy.BlobGets.Load() != 0 {
		t.Errorf("blob GETs at second: %d; the cached content was downloaded again", second.Proxy.BlobGets.Load())
	}
}

// A second pull of a digest already in the cache downloads nothing: one layout serves every pull.
func TestCachedDigestNotDownloadedAgain(t *testing.T) {
	c := startSpoke(t, "app-cache")
	reg := startRegistry(t)
	m := reg.PushT(t, "apps/cache", "v1", []byte("a big layer"), []byte("another layer"))
	putChain(t, c, ocichain.Chain{Workspace: "cache", Route: "r", Registries: []puller.Registry{reg.entry("reg")}})
	dir := runAgent(t)

	bytesBefore := testkit.Counter("fleet_agent_pulled_bytes_total", nil)
	one := newPull(t, c, ocichain.Namespace, "by-tag", v1alpha1.OCIPullSpec{Workspace: "cache", Repository: "apps/cache", Tag: "v1"})
	waitFor(t, c, one, 20*time.Second, "first pull", pulled)
	blobs, manifests := reg.Proxy.BlobGets.Load(), reg.Proxy.ManifestGets.Load()
	pulledBytes := testkit.Counter("fleet_agent_pulled_bytes_total", nil) - bytesBefore
	if blobs != 3 || manifests != 1 || pulledBytes == 0 {
		t.Errorf("first pull: %d blob GETs, %d manifest GETs, %v bytes; want 3, 1 and some bytes", blobs, manifests, pulledBytes)
	}

	two := newPull(t, c, ocichain.Namespace, "by-digest", v1alpha1.OCIPullSpec{Workspace: "cache", Repository: "apps/cache", Digest: m.Digest.String()})
	s := waitFor(t, c, two, 20*time.Second, "second pull", pulled)
	if s.Digest != m.Digest.String() || s.Registry != "reg" {
		t.Errorf("second pull: %+v", s)
	}
	if b, mf := reg.Proxy.BlobGets.Load(), reg.Proxy.ManifestGets.Load(); b != blobs || mf != manifests {
		t.Errorf("second pull of a cached digest: %d blob GETs and %d manifest GETs, want none (had %d, %d)", b-blobs, mf-manifests, blobs, manifests)
	}
	if got := testkit.Counter("fleet_agent_pulled_bytes_total", nil) - bytesBefore; got != pulledBytes {
		t.Errorf("pulled bytes: %v after the second pull, want %v as after the first", got, pulledBytes)
	}
	if !inCache(dir, m) {
		t.Errorf("manifest %s not in the cache", m.Digest)
	}
}

// The API server enforces exactly one of tag and digest; a chain of which every registry lacks
// the artifact ends the pull as Failed, with the last class, and no error loop.
func TestSpecRulesAndFailure(t *testing.T) {
	c := startSpoke(t, "app-fail")
	for name, spec := range map[string]v1alpha1.OCIPullSpec{
		"both":    {Workspace: "fail", Repository: "apps/x", Tag: "v1", Digest: "sha256:" + fmt.Sprintf("%064d", 0)},
		"neither": {Workspace: "fail", Repository: "apps/x"},
	} {
		err := c.Create(t.Context(), &v1alpha1.OCIPull{ObjectMeta: metav1.ObjectMeta{Namespace: "app-fail", Name: name}, Spec: spec})
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "set exactly one of tag and digest") {
			t.Errorf("%s: err = %v, want Invalid: set exactly one of tag and digest", name, err)
		}
	}

	reg := startRegistry(t)
	putChain(t, c, ocichain.Chain{Workspace: "fail", Route: "r", ReplicationWait: "0s", Registries: []puller.Registry{reg.entry("empty")}})
	runAgent(t)
	failedBefore := testkit.Counter("fleet_agent_pulls_total", map[string]string{"state": "Failed"})
	p := newPull(t, c, ocichain.Namespace, "missing", v1alpha1.OCIPullSpec{Workspace: "fail", Repository: "apps/missing", Tag: "v1"})
	s := waitFor(t, c, p, 20*time.Second, "failed", func(s v1alpha1.OCIPullStatus) error {
		if s.State != v1alpha1.OCIPullFailed {
			return fmt.Errorf("state %q", s.State)
		}
		return nil
	})
	if s.Reason != string(puller.NotFound) || s.Registry != "empty" || s.Attempts != 1 || s.Message == "" || s.LastSuccess != nil {
		t.Errorf("failed status: %+v; want reason NotFound at empty after 1 attempt, with a message", s)
	}
	if r := ready(t, s); r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonPullFailed {
		t.Errorf("Ready: %+v", r)
	}
	time.Sleep(time.Second) // RetryFailed is a minute: nothing more happens meanwhile
	if got := testkit.Counter("fleet_agent_pull_attempts_total", map[string]string{"registry": "empty"}); got != 1 {
		t.Errorf("attempts at empty: %v, want 1 until the pull starts over", got)
	}
	if got := testkit.Counter("fleet_agent_pulls_total", map[string]string{"state": "Failed"}) - failedBefore; got != 1 {
		t.Errorf("pulls entering Failed: %v, want 1", got)
	}
}
