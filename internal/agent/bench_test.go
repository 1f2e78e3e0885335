package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"

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
	fleetBin := testkit.ShippedBinary(b, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
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
	// The pull mode runs no pager (internal/initpages): what a pull adds is counted from its
	// own start-up.
	pullStartup, _ := launcher.Run(b, 0, fleetBin, "pull", "--help")
	agentIdle, managerIdle, atStart, steady := idleRSS(b, launcher, tmp, fleetBin)

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
	b.ReportMetric(ours-pullStartup, "pull_added_rss_MiB")
	b.ReportMetric(agentIdle, "agent_idle_rss_MiB")
	b.ReportMetric(managerIdle, "idle_manager_rss_MiB")
	b.ReportMetric(steady.rss, "agent_steady_rss_MiB")
	fmt.Printf("agent: artifact_mib=%d peak_rss_mib=%.1f oras_peak_rss_mib=%.1f ratio=%.2f startup_rss_mib=%.1f pull_startup_rss_mib=%.1f pull_added_rss_mib=%.1f agent_idle_rss_mib=%.1f idle_manager_rss_mib=%.1f agent_idle_file_rss_mib=%.1f agent_idle_anon_rss_mib=%.1f agent_steady_rss_mib=%.1f agent_steady_file_rss_mib=%.1f agent_steady_anon_rss_mib=%.1f\n",
		artifactMiB, ours, peer, ratio, startup, pullStartup, ours-pullStartup, agentIdle, managerIdle, atStart.file(), atStart.anon, steady.rss, steady.file(), steady.anon)
}

// idleRSS returns the peak RSS of `fleet-controller agent` and of an idle controller-runtime
// manager (testdata/idlemanager: client-go's scheme, no controllers), both built as the image
// is, each run for a few seconds against the package's cluster, the agent's CRDs installed, and
// stopped by SIGINT; and what the agent's resident memory is made of, 4 s after its start (the
// binary's pages that start-up touched) and once it released them (manager.StartupSettle after
// its caches synced): pages of the binary and other files mapped (its code and data), and
// anonymous memory (heap, stacks).
func idleRSS(b *testing.B, launcher *testkit.RSSLauncher, tmp, fleetBin string) (agentMiB, managerMiB float64, startup, steady rssParts) {
	b.Helper()
	spokeOnce.Do(func() { spoke, spokeErr = testbed.Start(context.Background(), testbed.Options{}) })
	if spokeErr != nil {
		b.Fatal(spokeErr)
	}
	idleBin := testkit.ShippedBinary(b, "./testdata/idlemanager")
	agentArgs := []string{"agent", "--kubeconfig", spoke.Kubeconfig, "--cache-dir", filepath.Join(tmp, "idle-cache"),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	// --foreground: without it timeout also signals its process group, and a second SIGINT
	// makes controller-runtime exit 1 at once.
	agentMiB, _ = launcher.Run(b, 0, append([]string{"timeout", "--foreground", "--preserve-status", "-s", "INT", "5", fleetBin}, agentArgs...)...)
	managerMiB, _ = launcher.Run(b, 0, idleBin, "--kubeconfig", spoke.Kubeconfig, "--for", "5s")

	cmd := exec.Command(fleetBin, agentArgs...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	time.Sleep(4 * time.Second)
	startup = readRSSParts(b, cmd.Process.Pid)
	time.Sleep(manager.StartupSettle + 4*time.Second)
	steady = readRSSParts(b, cmd.Process.Pid)
	return agentMiB, managerMiB, startup, steady
}

// rssParts is a process's resident memory in MiB: all of it, and its anonymous part (the rest
// is files mapped, the binary's pages).
type rssParts struct{ rss, anon float64 }

func (p rssParts) file() float64 { return p.rss - p.anon }

// readRSSParts reads /proc/pid/smaps_rollup.
func readRSSParts(b *testing.B, pid int) rssParts {
	b.Helper()
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
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
	return rssParts{rss: kib["Rss"] / 1024, anon: kib["Anonymous"] / 1024}
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
