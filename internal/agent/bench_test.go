package agent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"

	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
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
	launcher := buildRSSLauncher(b, tmp)
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
	ours, _ := peakRSS(b, launcher, 0, fleetBin, "pull", "--chain", chain, "--artifact", ref, "--dest", oursDest)
	peer, peerOut := peakRSS(b, launcher, 0, orasBin, "pull", "--plain-http", "--no-tty", "-o", peerDest, reg.Addr+"/"+ref)
	b.StopTimer()
	if floor, _ := peakRSS(b, launcher, 0, "true"); ours <= floor || peer <= floor {
		b.Logf("warning: a pull's peak RSS is at the launcher's own floor of %.1f MiB; the figures are upper bounds", floor)
	}
	// What fleet-controller takes before it pulls anything (its packages' init; it exits 2
	// after printing its usage), to tell the pull's own memory from the binary's.
	startup, _ := peakRSS(b, launcher, 2, fleetBin, "help")

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
	fmt.Printf("agent: artifact_mib=%d peak_rss_mib=%.1f oras_peak_rss_mib=%.1f ratio=%.2f\n", artifactMiB, ours, peer, ratio)
}

// Peak RSS is the child's rusage Maxrss (KiB on Linux), but not as the benchmark's own child:
// Linux keeps the high-water mark of the memory a process had before exec, and Go starts a
// child sharing its parent's memory (vfork), so every child of this test binary, tens of MiB
// of Kubernetes packages, would report at least the test binary's own peak. A tiny launcher,
// built here from rssLauncherSource, starts each pull instead and writes its Maxrss to a file;
// its own floor (a few MiB) is far below a pull's.

// rssLauncherSource is `launcher <file> <command> [args]`: it runs the command with the
// launcher's stdio, writes the command's Maxrss into file and exits with its exit code.
const rssLauncherSource = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func main() {
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	maxrss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if err := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(maxrss, 10)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
`

func buildRSSLauncher(b *testing.B, tmp string) string {
	b.Helper()
	dir := filepath.Join(tmp, "rss-launcher")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	src, bin := filepath.Join(dir, "main.go"), filepath.Join(dir, "rss-launcher")
	if err := os.WriteFile(src, []byte(rssLauncherSource), 0o600); err != nil {
		b.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin, src)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the RSS launcher: %v\n%s", err, out)
	}
	return bin
}

// peakRSS runs command through the launcher, expecting exit code wantExit, and returns its
// peak resident set size in MiB and its stdout.
func peakRSS(b *testing.B, launcher string, wantExit int, command ...string) (float64, string) {
	b.Helper()
	result, err := os.CreateTemp(b.TempDir(), "maxrss-")
	if err != nil {
		b.Fatal(err)
	}
	result.Close()
	cmd := exec.Command(launcher, append([]string{result.Name()}, command...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != wantExit {
		b.Fatalf("%s: %v, want exit code %d\n%s%s", strings.Join(command, " "), err, wantExit, stdout.String(), stderr.String())
	}
	data, err := os.ReadFile(result.Name())
	if err != nil {
		b.Fatal(err)
	}
	kib, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		b.Fatalf("the launcher wrote %q: %v", data, err)
	}
	return float64(kib) / 1024, stdout.String()
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
