package puller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
)

// BenchmarkPull pulls a 256 MiB artifact from a local registry with `fleet-controller pull` and
// with the oras CLI, both as child processes measured alike (wall time, peak RSS), checks that
// memory does not grow with artifact size (32 MiB vs 256 MiB) and times failover from a closed
// port to the next registry. It prints one summary line.
func BenchmarkPull(b *testing.B) {
	orasBin := testbedBin(b, "oras")
	reg := startRegistry(b, regOptions{})
	tmp := b.TempDir()
	fleetBin := filepath.Join(tmp, "fleet-controller")
	build := exec.Command("go", "build", "-o", fleetBin, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build fleet-controller: %v\n%s", err, out)
	}
	chain := filepath.Join(tmp, "chain.json")
	chainJSON, _ := json.Marshal(map[string][]Registry{"registries": {reg.entry("local")}})
	writeFile(b, chain, chainJSON)

	const mib = 1 << 20
	big := pushGenerated(b, reg, "bench/big", 4, 64*mib)
	small := pushGenerated(b, reg, "bench/small", 4, 8*mib)

	ours := func(repo string, d digest.Digest) run {
		return measure(b, tmp, func(dest string) *exec.Cmd {
			return exec.Command(fleetBin, "pull", "--chain", chain, "--artifact", repo+"@"+d.String(), "--dest", dest)
		})
	}
	peer := func(repo string, d digest.Digest) run {
		return measure(b, tmp, func(dest string) *exec.Cmd {
			return exec.Command(orasBin, "pull", "--plain-http", "--no-tty", "-o", dest, reg.Addr+"/"+repo+"@"+d.String())
		})
	}
	b.ResetTimer()
	// Alternate the two sides and keep each side's best time, so that neither pays alone for a
	// cold cache or a busy neighbour; peak RSS is the highest seen.
	var oursBig, peerBig []run
	for range 2 {
		oursBig = append(oursBig, ours("bench/big", big))
		peerBig = append(peerBig, peer("bench/big", big))
	}
	oursSmall := ours("bench/small", small)
	failover := failoverLatency(b, reg)
	b.StopTimer()

	size := float64(256 * mib)
	oursTP, peerTP := size/best(oursBig).Seconds()/mib, size/best(peerBig).Seconds()/mib
	oursRSS, peerRSS := maxRSS(oursBig), maxRSS(peerBig)
	b.Logf("fleet-controller pull: %.0f MiB/s, peak RSS %.1f MiB at 256 MiB, %.1f MiB at 32 MiB", oursTP, oursRSS, oursSmall.rssMiB)
	b.Logf("oras pull:             %.0f MiB/s, peak RSS %.1f MiB at 256 MiB", peerTP, peerRSS)
	b.Logf("failover from a closed port: %.2f ms, one attempt", failover)
	b.ReportMetric(oursTP/peerTP, "throughput_ratio_vs_oras")
	b.ReportMetric(oursRSS, "peak_rss_MiB")
	b.ReportMetric(failover, "failover_ms")
	fmt.Printf("pull: throughput_ratio_vs_oras=%.2f peak_rss_mib=%.1f failover_ms=%.2f\n", oursTP/peerTP, oursRSS, failover)
}

// run is one measured pull.
type run struct {
	elapsed time.Duration
	rssMiB  float64
}

func best(runs []run) time.Duration {
	return slices.MinFunc(runs, func(a, b run) int { return int(a.elapsed - b.elapsed) }).elapsed
}

func maxRSS(runs []run) float64 {
	return slices.MaxFunc(runs, func(a, b run) int { return int(a.rssMiB - b.rssMiB) }).rssMiB
}

// measure runs a pull into a fresh directory, which it removes afterwards, and returns its wall
// time and peak RSS.
func measure(b *testing.B, tmp string, command func(dest string) *exec.Cmd) run {
	b.Helper()
	dest, err := os.MkdirTemp(tmp, "dest-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dest)
	cmd := command(dest)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", cmd, err, out.String())
	}
	elapsed := time.Since(start)
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	return run{elapsed: elapsed, rssMiB: float64(rss) / 1024}
}

// pushGenerated pushes an artifact of n pseudo-random blobs of size bytes each, streaming them
// so that the benchmark's own memory stays small, and returns the manifest digest.
func pushGenerated(b *testing.B, reg *testRegistry, repoPath string, n int, size int64) digest.Digest {
	b.Helper()
	ctx := context.Background()
	repo := reg.repo(b, repoPath)
	var layers []ocispec.Descriptor
	for i := range n {
		seed := [32]byte{byte(i)}
		copy(seed[1:], repoPath)
		gen := func() io.Reader { return io.LimitReader(randReader{rand.NewChaCha8(seed)}, size) }
		h := sha256.New()
		if _, err := io.Copy(h, gen()); err != nil {
			b.Fatal(err)
		}
		desc := ocispec.Descriptor{
			MediaType:   "application/vnd.fleet.test.layer",
			Digest:      digest.NewDigest(digest.SHA256, h),
			Size:        size,
			Annotations: map[string]string{ocispec.AnnotationTitle: fmt.Sprintf("blob-%d", i)},
		}
		if err := repo.Push(ctx, desc, gen()); err != nil {
			b.Fatal(err)
		}
		layers = append(layers, desc)
	}
	// The manifest and its empty config are small: pack them in memory and push them.
	if err := repo.Push(ctx, ocispec.DescriptorEmptyJSON, bytes.NewReader(ocispec.DescriptorEmptyJSON.Data)); err != nil {
		b.Fatal(err)
	}
	mem := memory.New()
	m, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, "application/vnd.fleet.test", oras.PackManifestOptions{Layers: layers})
	if err != nil {
		b.Fatal(err)
	}
	rc, err := mem.Fetch(ctx, m)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if err := repo.Push(ctx, m, rc); err != nil {
		b.Fatal(err)
	}
	return m.Digest
}

// randReader reads from a seeded ChaCha8 stream.
type randReader struct{ src *rand.ChaCha8 }

func (r randReader) Read(p []byte) (int, error) {
	n := len(p) &^ 7
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(p[i:], r.src.Uint64())
	}
	if n == 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.src.Uint64())
		n = copy(p, w[:])
	}
	return n, nil
}

// failoverLatency returns the median time, over several pulls, from the start of an attempt at
// a closed port to the start of the attempt at the next registry.
func failoverLatency(b *testing.B, reg *testRegistry) float64 {
	b.Helper()
	src, art := buildArtifact(b, []byte("chart"))
	push(b, src, art, reg.repo(b, "bench/tiny"), "1.0")
	down := Registry{Name: "down", Reference: freeAddr(b), BasicHTTP: true}
	var samples []float64
	for range 5 {
		var attempts []Attempt
		p, err := New([]Registry{down, reg.entry("local")}, b.TempDir(), Options{OnAttempt: func(a Attempt) { attempts = append(attempts, a) }})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Pull(context.Background(), Artifact{Repository: "bench/tiny", Digest: art.Manifest.Digest}); err != nil {
			b.Fatal(err)
		}
		if len(attempts) != 2 || attempts[0].Class != Unreachable {
			b.Fatalf("attempts %+v, want one Unreachable at down, then success at local", attempts)
		}
		samples = append(samples, float64(attempts[1].Start.Sub(attempts[0].Start).Microseconds())/1000)
	}
	slices.Sort(samples)
	return samples[len(samples)/2]
}
