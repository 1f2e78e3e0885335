package puller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	. "github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// BenchmarkPull pulls a 256 MiB artifact of 4 layers from a local registry with
// `fleet-controller pull` (built as the image is) and with the oras CLI, both as child
// processes measured alike (wall time, CPU time, peak RSS), alternately, three times each, with
// the machine's load average; checks that memory does not grow with artifact
// size (32 MiB vs 256 MiB); times failover from a closed port to the next registry; and counts the
// bytes downloaded twice when a registry freezes mid-blob and the pull fails over (resumed at the
// next registry: ideally none, at most one copy buffer). It prints one summary line.
func BenchmarkPull(b *testing.B) {
	orasBin := testbed.BinaryT(b, "oras")
	reg := testbed.StartRegistryT(b, testbed.RegistryOptions{})
	tmp := b.TempDir()
	fleetBin := testkit.ShippedBinary(b, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	chain := filepath.Join(tmp, "chain.json")
	chainJSON, _ := json.Marshal(map[string][]Registry{"registries": {reg.Entry("local")}})
	if err := os.WriteFile(chain, chainJSON, 0o600); err != nil {
		b.Fatal(err)
	}

	const mib = 1 << 20
	big := pushGenerated(b, reg, "bench/big", 4, 64*mib)
	small := pushGenerated(b, reg, "bench/small", 4, 8*mib)

	launcher := testkit.NewRSSLauncher(b)
	ours := func(repo string, d digest.Digest) run {
		return measure(b, tmp, launcher, func(dest string) []string {
			return []string{fleetBin, "pull", "--chain", chain, "--artifact", repo + "@" + d.String(), "--dest", dest}
		})
	}
	peer := func(repo string, d digest.Digest) run {
		return measure(b, tmp, launcher, func(dest string) []string {
			return []string{orasBin, "pull", "--plain-http", "--no-tty", "-o", dest, reg.Addr + "/" + repo + "@" + d.String()}
		})
	}
	loadBefore := loadAverage(b)
	b.ResetTimer()
	// Alternate the two sides and keep each side's best time, so that neither pays alone for a
	// cold cache or a busy neighbour; peak RSS is the highest seen.
	var oursBig, peerBig []run
	for range 3 {
		oursBig = append(oursBig, ours("bench/big", big))
		peerBig = append(peerBig, peer("bench/big", big))
	}
	oursSmall := ours("bench/small", small)
	// Each binary's start-up and exit alone (usage / version), to tell the transfer from it.
	var oursStart, peerStart []run
	for range 3 {
		oursStart = append(oursStart, measure(b, tmp, launcher, func(string) []string { return []string{fleetBin, "pull", "--help"} }))
		peerStart = append(peerStart, measure(b, tmp, launcher, func(string) []string { return []string{orasBin, "version"} }))
	}
	failover := failoverLatency(b, reg)
	redownloaded, brokenAt := resumedFailover(b, reg)
	b.StopTimer()

	size := float64(256 * mib)
	oursTP, peerTP := size/best(oursBig).Seconds()/mib, size/best(peerBig).Seconds()/mib
	oursRSS, peerRSS := maxRSS(oursBig), maxRSS(peerBig)
	b.Logf("fleet-controller pull: %.0f MiB/s, peak RSS %.1f MiB at 256 MiB, %.1f MiB at 32 MiB", oursTP, oursRSS, oursSmall.rssMiB)
	b.Logf("oras pull:             %.0f MiB/s, peak RSS %.1f MiB at 256 MiB", peerTP, peerRSS)
	b.Logf("failover from a closed port: %.2f ms, one attempt", failover)
	b.Logf("failover mid-blob: the first registry froze after %d bytes of the 64 MiB layer; %d bytes downloaded twice", brokenAt, redownloaded)
	ratios := make([]float64, len(oursBig))
	for i := range oursBig {
		ratios[i] = peerBig[i].elapsed.Seconds() / oursBig[i].elapsed.Seconds()
	}
	slices.Sort(ratios)
	b.Logf("pairwise ratios (oras time / ours): %.2f", ratios)
	// On a shared machine wall time follows the load; the CPU each side spends does not.
	cpuRatios := make([]float64, len(oursBig))
	for i := range oursBig {
		cpuRatios[i] = peerBig[i].cpu.Seconds() / oursBig[i].cpu.Seconds()
	}
	slices.Sort(cpuRatios)
	loadAfter := loadAverage(b)
	b.Logf("pairwise CPU ratios (oras CPU / ours): %.2f; CPU of the best pull: fleet-controller %s, oras %s; load average %.2f before, %.2f after",
		cpuRatios, bestCPU(oursBig), bestCPU(peerBig), loadBefore, loadAfter)
	transfer := (best(peerBig) - best(peerStart)).Seconds() / (best(oursBig) - best(oursStart)).Seconds()
	b.Logf("start-up and exit alone: fleet-controller %s, oras %s; ratio without them %.2f", best(oursStart), best(peerStart), transfer)
	b.ReportMetric(oursTP/peerTP, "throughput_ratio_vs_oras")
	b.ReportMetric(oursRSS, "peak_rss_MiB")
	b.ReportMetric(failover, "failover_ms")
	b.ReportMetric(float64(redownloaded), "resumed_failover_redownloaded_bytes")
	b.ReportMetric(transfer, "transfer_ratio_vs_oras")
	b.ReportMetric(cpuRatios[len(cpuRatios)/2], "cpu_ratio_vs_oras")
	fmt.Printf("pull: throughput_ratio_vs_oras=%.2f peak_rss_mib=%.1f failover_ms=%.2f median_pair_ratio=%.2f transfer_ratio_vs_oras=%.2f startup_ms=%d oras_startup_ms=%d resumed_failover_redownloaded_bytes=%d resumed_failover_broken_at_bytes=%d median_pair_cpu_ratio=%.2f cpu_ms=%d oras_cpu_ms=%d startup_cpu_ms=%d oras_startup_cpu_ms=%d load1=%.1f\n",
		oursTP/peerTP, oursRSS, failover, ratios[len(ratios)/2], transfer, best(oursStart).Milliseconds(), best(peerStart).Milliseconds(), redownloaded, brokenAt,
		cpuRatios[len(cpuRatios)/2], bestCPU(oursBig).Milliseconds(), bestCPU(peerBig).Milliseconds(), bestCPU(oursStart).Milliseconds(), bestCPU(peerStart).Milliseconds(), max(loadBefore, loadAfter))
}

// resumedFailover pulls a one-layer 64 MiB artifact through a registry that freezes once 16 MiB
// of it went through, then the next registry holding the same artifact. It returns the bytes of
// the layer read more than once across the two attempts, and how far the first got.
func resumedFailover(b *testing.B, next *testbed.Registry) (redownloaded, brokenAt int64) {
	b.Helper()
	first := testbed.StartRegistryT(b, testbed.RegistryOptions{})
	b.Cleanup(func() { _ = first.Thaw() })
	const size = 64 << 20
	var m digest.Digest
	for _, r := range []*testbed.Registry{first, next} {
		m = pushGenerated(b, r, "bench/resume", 1, size)
	}
	frozen := testbed.StartProxyT(b, first, testbed.ProxyOptions{FreezeAfter: 16 << 20})
	var layer atomic.Int64
	var attempts []Attempt
	p, err := New([]Registry{frozen.Entry("frozen"), next.Entry("next")}, b.TempDir(), Options{
		IdleTimeout: time.Second,
		OnAttempt:   func(a Attempt) { attempts = append(attempts, a) },
		OnRead: func(desc ocispec.Descriptor, n int) {
			if desc.Size == size {
				layer.Add(int64(n))
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Pull(context.Background(), Artifact{Repository: "bench/resume", Digest: m}); err != nil {
		b.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0].Class != Unreachable || frozen.BlobBytes.Load() >= size {
		b.Fatalf("attempts %+v after %d bytes; want the frozen registry to fail mid-blob, then next to succeed", attempts, frozen.BlobBytes.Load())
	}
	return layer.Load() - size, frozen.BlobBytes.Load()
}

// run is one measured pull.
type run struct {
	elapsed, cpu time.Duration
	rssMiB       float64
}

func best(runs []run) time.Duration {
	return slices.MinFunc(runs, func(a, b run) int { return int(a.elapsed - b.elapsed) }).elapsed
}

func bestCPU(runs []run) time.Duration {
	return slices.MinFunc(runs, func(a, b run) int { return int(a.cpu - b.cpu) }).cpu
}

// loadAverage returns the machine's one-minute load average, 0 where /proc has none.
func loadAverage(b *testing.B) float64 {
	b.Helper()
	var load float64
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		_, _ = fmt.Sscanf(string(data), "%f", &load)
	}
	return load
}

func maxRSS(runs []run) float64 {
	return slices.MaxFunc(runs, func(a, b run) int { return int(a.rssMiB - b.rssMiB) }).rssMiB
}

// measure runs a pull into a fresh directory, which it removes afterwards, and returns its wall
// time, CPU time and peak RSS (through the launcher: see testkit.RSSLauncher).
func measure(b *testing.B, tmp string, launcher *testkit.RSSLauncher, command func(dest string) []string) run {
	b.Helper()
	dest, err := os.MkdirTemp(tmp, "dest-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dest)
	start := time.Now()
	rss, cpu, _ := launcher.RunCPU(b, 0, command(dest)...)
	return run{elapsed: time.Since(start), cpu: cpu, rssMiB: rss}
}

// pushGenerated pushes an artifact of n pseudo-random blobs of size bytes each, streaming them
// so that the benchmark's own memory stays small, and returns the manifest digest.
func pushGenerated(b *testing.B, reg *testbed.Registry, repoPath string, n int, size int64) digest.Digest {
	b.Helper()
	m, err := reg.PushRandom(context.Background(), repoPath, "bench", n, size, uint64(len(repoPath)))
	if err != nil {
		b.Fatal(err)
	}
	return m.Digest
}

// failoverLatency returns the median time, over several pulls, from the start of an attempt at
// a closed port to the start of the attempt at the next registry.
func failoverLatency(b *testing.B, reg *testbed.Registry) float64 {
	b.Helper()
	art := newArtifact(b, []byte("chart"))
	push(b, reg, "bench/tiny", "1.0", art)
	down := Registry{Name: "down", Reference: testbed.ClosedAddrT(b), BasicHTTP: true}
	var samples []float64
	for range 5 {
		var attempts []Attempt
		p, err := New([]Registry{down, reg.Entry("local")}, b.TempDir(), Options{OnAttempt: func(a Attempt) { attempts = append(attempts, a) }})
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
