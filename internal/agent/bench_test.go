package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2/content/oci"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// BenchmarkAgentPullRSS measures the peak RSS of the agent's pull of a 256 MiB artifact (four
// random 64 MiB layers) from a local registry: `fleet-controller pull`, built from this tree,
// runs the agent's code (internal/puller into an OCI-layout cache) as a child process, and the
// oras CLI pulls the same artifact as the peer, measured alike in the same run. Both pulls are
// checked against the pushed digests. It prints one line and reports the figures as metrics;
// nothing is asserted about them.
func BenchmarkAgentPullRSS(b *testing.B) {
	const (
		mib       = 1 << 20
		layers    = 4
		layerSize = 64 * mib
		repo      = "bench/agent-rss"
		tag       = "256mib"
	)
	orasBin := testbed.BinaryT(b, "oras")
	reg := testbed.StartRegistryT(b, testbed.RegistryOptions{})
	tmp := b.TempDir()
	fleetBin := filepath.Join(tmp, "fleet-controller")
	build := exec.Command("go", "build", "-o", fleetBin, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build fleet-controller: %v\n%s", err, out)
	}
	launcher := testkit.NewRSSLauncher(b)
	chain := filepath.Join(tmp, "chain.json")
	chainJSON, err := json.Marshal(ocichain.Chain{Registries: []puller.Registry{reg.Entry("local")}})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(chain, chainJSON, 0o600); err != nil {
		b.Fatal(err)
	}
	m, err := reg.PushRandom(context.Background(), repo, tag, layers, layerSize, 256)
	if err != nil {
		b.Fatal(err)
	}
	manifest := fetchManifest(b, reg, repo, m)
	ref := repo + "@" + m.Digest.String()

	b.ResetTimer()
	oursDest, peerDest := filepath.Join(tmp, "agent-cache"), filepath.Join(tmp, "oras")
	ours, _ := launcher.Run(b, 0, fleetBin, "pull", "--chain", chain, "--artifact", ref, "--dest", oursDest)
	peer, peerOut := launcher.Run(b, 0, orasBin, "pull", "--plain-http", "--no-tty", "-o", peerDest, reg.Addr+"/"+ref)
	b.StopTimer()
	if floor, _ := launcher.Run(b, 0, "true"); ours <= floor || peer <= floor {
		b.Logf("warning: a pull's peak RSS is at the launcher's own floor of %.1f MiB; the figures are upper bounds", floor)
	}
	// What fleet-controller takes before it pulls anything (its packages' init; it exits 0
	// after printing the agent mode's usage), to tell the pull's own memory from the binary's.
	startup, _ := launcher.Run(b, 0, fleetBin, "agent", "--help")
	agentIdle, managerIdle, agentFile, agentAnon := idleRSS(b, launcher, tmp, fleetBin)

	// What each pulled: our OCI layout resolves the artifact to the pushed manifest and holds
	// every layer; oras names the manifest and writes every layer under its title.
	store, err := oci.New(oursDest)
	if err != nil {
		b.Fatal(err)
	}
	if got, err := store.Resolve(context.Background(), ref); err != nil || got.Digest != m.Digest {
		b.Fatalf("fleet-controller pull: the cache resolves %s to %s, %v; want %s", ref, got.Digest, err, m.Digest)
	}
	if !strings.Contains(peerOut, "Digest: "+m.Digest.String()) {
		b.Fatalf("oras pull did not report digest %s:\n%s", m.Digest, peerOut)
	}
	for _, l := range manifest.Layers {
		checkFile(b, "fleet-controller pull", filepath.Join(oursDest, "blobs", l.Digest.Algorithm().String(), l.Digest.Encoded()), l)
		checkFile(b, "oras pull", filepath.Join(peerDest, l.Annotations[ocispec.AnnotationTitle]), l)
	}

	const artifactMiB = layers * layerSize / mib
	ratio := ours / peer
	b.ReportMetric(artifactMiB, "artifact_MiB")
	b.ReportMetric(ours, "peak_rss_MiB")
	b.ReportMetric(peer, "oras_peak_rss_MiB")
	b.ReportMetric(ratio, "rss_ratio_vs_oras")
	b.ReportMetric(startup, "startup_rss_MiB")
	b.ReportMetric(ours-startup, "pull_added_rss_MiB")
	b.ReportMetric(agentIdle, "agent_idle_rss_MiB")
	b.ReportMetric(managerIdle, "idle_manager_rss_MiB")
	fmt.Printf("agent: artifact_mib=%d peak_rss_mib=%.1f oras_peak_rss_mib=%.1f ratio=%.2f startup_rss_mib=%.1f pull_added_rss_mib=%.1f agent_idle_rss_mib=%.1f idle_manager_rss_mib=%.1f agent_idle_file_rss_mib=%.1f agent_idle_anon_rss_mib=%.1f\n",
		artifactMiB, ours, peer, ratio, startup, ours-startup, agentIdle, managerIdle, agentFile, agentAnon)
}

// idleRSS returns the peak RSS of `fleet-controller agent` and of an idle controller-runtime
// manager (testdata/idlemanager: client-go's scheme, no controllers), each run for a few
// seconds against the package's cluster, the agent's CRDs installed, and stopped by SIGINT; and
// what the agent's resident memory is made of after 4 s: pages of the binary and other files
// mapped (its code and data), and anonymous memory (heap, stacks).
func idleRSS(b *testing.B, launcher *testkit.RSSLauncher, tmp, fleetBin string) (agentMiB, managerMiB, fileMiB, anonMiB float64) {
	b.Helper()
	spokeOnce.Do(func() { spoke, spokeErr = testbed.Start(context.Background(), testbed.Options{}) })
	if spokeErr != nil {
		b.Fatal(spokeErr)
	}
	idleBin := filepath.Join(tmp, "idlemanager")
	build := exec.Command("go", "build", "-o", idleBin, "./testdata/idlemanager")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the idle manager: %v\n%s", err, out)
	}
	agentArgs := []string{"agent", "--kubeconfig", spoke.Kubeconfig, "--cache-dir", filepath.Join(tmp, "idle-cache"),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	agentMiB, _ = launcher.Run(b, 0, append([]string{"timeout", "--preserve-status", "-s", "INT", "5", fleetBin}, agentArgs...)...)
	managerMiB, _ = launcher.Run(b, 0, idleBin, "--kubeconfig", spoke.Kubeconfig, "--for", "5s")

	cmd := exec.Command(fleetBin, agentArgs...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", cmd.Process.Pid))
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if err != nil {
		b.Fatal(err)
	}
	kib := map[string]float64{}
	for _, line := range strings.Split(string(rollup), "\n") {
		var key string
		var v float64
		if n, _ := fmt.Sscanf(line, "%s %f kB", &key, &v); n == 2 {
			kib[strings.TrimSuffix(key, ":")] = v
		}
	}
	return agentMiB, managerMiB, (kib["Rss"] - kib["Anonymous"]) / 1024, kib["Anonymous"] / 1024
}

// fetchManifest returns the image manifest m of repo in reg.
func fetchManifest(b *testing.B, reg *testbed.Registry, repo string, m ocispec.Descriptor) ocispec.Manifest {
	b.Helper()
	rc, err := reg.Repository(repo).Fetch(context.Background(), m)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	var manifest ocispec.Manifest
	if err := json.NewDecoder(rc).Decode(&manifest); err != nil {
		b.Fatal(err)
	}
	return manifest
}

// checkFile checks that path holds exactly the content of desc, hashing it as a stream.
func checkFile(b *testing.B, who, path string, desc ocispec.Descriptor) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatalf("%s: layer %s: %v", who, desc.Digest, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		b.Fatal(err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); n != desc.Size || got != desc.Digest.String() {
		b.Fatalf("%s: %s holds %d bytes with digest %s; want %d bytes of %s", who, path, n, got, desc.Size, desc.Digest)
	}
}

// BenchmarkFailingReleases measures the status writes of 100 FleetReleases whose chart always
// fails, run by the agent (real Helm, the package's cluster) with its default back-off, and by
// the baseline, the agent as it was before back-off (agent.WithFixedRetry: Installing written at
// each attempt, a retry every 30 s), side by side on the same cluster, each in its own
// namespace. After a minute of first attempts it counts, for a minute, the changes of the
// releases' status: each one is what the work agent feeds back to the hub, one ManifestWork
// status write and one FleetApp status write. It prints
// `faults: failing_release_hub_writes_per_min=<x>` per release, the baseline's and the ratio.
func BenchmarkFailingReleases(b *testing.B) {
	const (
		releases = 100
		warmup   = time.Minute
		window   = time.Minute
		// hubWritesPerChange: a work status write and a FleetApp status write on the hub.
		hubWritesPerChange = 2
	)
	spokeOnce.Do(func() { spoke, spokeErr = testbed.Start(context.Background(), testbed.Options{}) })
	if spokeErr != nil {
		if errors.Is(spokeErr, testbed.ErrBinariesMissing) && os.Getenv(testbed.EnvRequire) != "1" {
			b.Skip(spokeErr)
		}
		b.Fatal(spokeErr)
	}
	c, err := client.NewWithWatch(spoke.Config, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	// The workspace role Helm acts with; the agents run as the admin, in namespaces of their own.
	if _, err := testbed.GrantFleetAgent(context.Background(), spoke.Config); err != nil {
		b.Fatal(err)
	}
	reg := testbed.StartRegistryT(b, testbed.RegistryOptions{})
	reg.PushChartT(b, "charts/broken", brokenChart("broken"))

	type run struct {
		name, ns string
		opts     []func(*agent.Options)
		changes  atomic.Int64
	}
	runs := []*run{{name: "ours", ns: "bench-backoff"}, {name: "baseline", ns: "bench-fixed", opts: []func(*agent.Options){agent.WithFixedRetry}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var counting atomic.Bool
	for _, r := range runs {
		// The releases' namespace r.ns-apps is the agent's to create, for the workspace.
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
		data, err := ocichain.Chain{Workspace: "bench", Route: "r", Registries: []puller.Registry{reg.Entry("only")}}.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: ocichain.SecretName("bench")},
			Data: map[string][]byte{ocichain.Key: data}}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
		mgr, err := agent.NewManager(spoke.Config, withOptions(agent.Options{
			Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, CacheDir: filepath.Join(b.TempDir(), r.name), Namespace: r.ns,
			RetryFailed: time.Minute,
		}, r.opts))
		if err != nil {
			b.Fatal(err)
		}
		testkit.Run(b, mgr)
		// Status changes, seen by a watch: what the work agent would feed back.
		var list v1alpha1.FleetReleaseList
		w, err := c.Watch(ctx, &list, client.InNamespace(r.ns))
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			seen := map[string]v1alpha1.FleetReleaseStatus{}
			for ev := range w.ResultChan() {
				rel, ok := ev.Object.(*v1alpha1.FleetRelease)
				if !ok {
					continue
				}
				if prev, ok := seen[rel.Name]; ok && !equality.Semantic.DeepEqual(prev, rel.Status) && counting.Load() {
					r.changes.Add(1)
				}
				seen[rel.Name] = rel.Status
			}
		}()
		defer w.Stop()
		if err := c.Create(ctx, &v1alpha1.OCIPull{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "broken"},
			Spec: v1alpha1.OCIPullSpec{Workspace: "bench", Repository: "charts/broken", Tag: "0.1.0"}}); err != nil {
			b.Fatal(err)
		}
		for i := range releases {
			name := fmt.Sprintf("broken-%03d", i)
			if err := c.Create(ctx, &v1alpha1.FleetRelease{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name},
				Spec: v1alpha1.FleetReleaseSpec{Workspace: "bench", App: name, Pull: "broken", ReleaseName: name, Namespace: r.ns + "-apps"}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	time.Sleep(warmup)
	counting.Store(true)
	time.Sleep(window)
	counting.Store(false)
	b.StopTimer()

	// Every release failed in both runs, with the chart's error (the baseline's may be in the
	// middle of an attempt): else nothing was measured.
	for _, r := range runs {
		var list v1alpha1.FleetReleaseList
		if err := c.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
			b.Fatal(err)
		}
		for _, rel := range list.Items {
			failing := rel.Status.Phase == v1alpha1.ReleaseFailed && strings.Contains(rel.Status.Message, "this chart always fails")
			trying := r.name == "baseline" && rel.Status.Phase == v1alpha1.ReleaseInstalling
			if !failing && !trying {
				b.Fatalf("%s: release %s is %s (%q), want Failed with the chart's error", r.name, rel.Name, rel.Status.Phase, rel.Status.Message)
			}
		}
	}
	if runs[1].changes.Load() == 0 {
		b.Fatal("the baseline's status never changed in the window: nothing was measured")
	}
	perMin := func(r *run) float64 {
		return float64(r.changes.Load()*hubWritesPerChange) / releases / window.Minutes()
	}
	ours, base := perMin(runs[0]), perMin(runs[1])
	b.ReportMetric(ours, "hub_writes/release/min")
	b.ReportMetric(base, "baseline_hub_writes/release/min")
	ratio := "inf"
	if ours > 0 {
		ratio = fmt.Sprintf("%.1f", base/ours)
	}
	fmt.Printf("faults: failing_release_hub_writes_per_min=%.2f baseline_fixed_retry=%.2f ratio=%s releases=%d after=%s window=%s status_changes=%d baseline_status_changes=%d\n",
		ours, base, ratio, releases, warmup, window, runs[0].changes.Load(), runs[1].changes.Load())
}
