package controller_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// benchFleet is the benchmark's inventory: clusters in blocks of ten per zone, one route per zone
// (routes-1 of them) and a wide route that selects band b0 (the first 1% of clusters, ten zones)
// at a priority after every zone route, so that it wins nothing until it is moved first.
type benchFleet struct{ clusters, routes int }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkController prints, for the routing reconciler and for a naive baseline that rewrites
// every work and status on every reconcile, measured the same way on a fresh local hub each:
//
//	controller: clusters=10000 routes=1000 converge_s=… writes_per_changed_cluster=… steady_writes=…
//
// ceiling_s is the apiserver's own time to take the writes of convergence from plain parallel
// clients (measureCeiling) on the same hub, efficiency ceiling_s/converge_s; watched_ceiling_s
// and watched_efficiency the same for clients that watch what they write, as the controller does.
// controller_peak_rss_mib is the benchmark process's peak RSS from the manager's start to the end
// of convergence, steady_peak_rss_mib its peak from then to the end of the steady window (the
// route move included): the controller's, plus the little the benchmark's own client holds (the
// peak is reset once the fleet is seeded). peak_live_heap_mib and steady_peak_live_heap_mib are
// the live heap's peaks over the same two spans (liveHeapPeak). The heap profiles at those peaks
// and at the end of the steady window, and the CPU profile of convergence, go to the artifact
// directory (go test -artifacts).
//
// FLEET_BENCH_CLUSTERS, FLEET_BENCH_ROUTES and FLEET_BENCH_STEADY (a duration, default 2m) scale
// it; FLEET_BENCH_BASELINE=0 skips the baseline; FLEET_BENCH_WRITES sets the writes in flight
// (--max-concurrent-writes, default controller.DefaultMaxConcurrentWrites); FLEET_BENCH_MEMLIMIT the
// limits.memory under test (benchMemoryLimit).
func BenchmarkController(b *testing.B) {
	f := benchFleet{clusters: envInt("FLEET_BENCH_CLUSTERS", 10000), routes: envInt("FLEET_BENCH_ROUTES", 1000)}
	steady := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("FLEET_BENCH_STEADY")); err == nil {
		steady = d
	}
	for b.Loop() {
		ours := f.measure(b, false, steady)
		fmt.Printf("controller: %s\n", ours)
		if os.Getenv("FLEET_BENCH_BASELINE") == "0" {
			continue
		}
		naive := f.measure(b, true, steady)
		fmt.Printf("controller (baseline: rewrite everything on every reconcile): %s\n", naive)
		fmt.Printf("controller: ratio baseline/ours: converge %.2fx, writes per changed cluster %.0fx, steady writes %s\n",
			naive.converge.Seconds()/ours.converge.Seconds(), naive.perChanged/ours.perChanged, ratio(naive.steadyWrites, ours.steadyWrites))
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return fmt.Sprintf("%.0f vs 0", a)
	}
	return fmt.Sprintf("%.0fx", a/b)
}

type benchResult struct {
	f                        benchFleet
	converge                 time.Duration
	moved                    int
	perChanged, routeWrites  float64
	steadyWrites, reconciles float64
	steady                   time.Duration
	peakMiB, steadyPeakMiB   float64
	peakLiveMiB              float64 // the live heap's peak over convergence (liveHeapPeak)
	steadyPeakLiveMiB        float64 // and from then to the end of the steady window
	convergeWrites           float64
	firstWrite               time.Duration // from the manager's start to its first write: cache sync and the first plan
	ceiling, watched         ceiling       // measured right after ours' convergence only
	memLimit                 string        // the limits.memory under test and its soft limit (benchMemoryLimit)
}

func (r benchResult) String() string {
	ceil := ""
	if r.ceiling.took > 0 {
		ceil = fmt.Sprintf(" ceiling_s=%.1f efficiency=%.2f watched_ceiling_s=%.1f watched_efficiency=%.2f", r.ceiling.took.Seconds(), r.ceiling.took.Seconds()/r.converge.Seconds(),
			r.watched.took.Seconds(), r.watched.took.Seconds()/r.converge.Seconds())
	}
	return fmt.Sprintf("clusters=%d routes=%d converge_s=%.1f%s writes_per_changed_cluster=%.2f steady_writes=%.0f controller_peak_rss_mib=%.0f steady_peak_rss_mib=%.0f %s (moved=%d route_status_writes=%.0f steady_window=%s reconciles_in_window=%.0f converge_writes=%.0f first_write_s=%.1f peak_live_heap_mib=%.0f steady_peak_live_heap_mib=%.0f%s)",
		r.f.clusters, r.f.routes, r.converge.Seconds(), ceil, r.perChanged, r.steadyWrites, r.peakMiB, r.steadyPeakMiB, r.memLimit, r.moved, r.routeWrites, r.steady, r.reconciles, r.convergeWrites, r.firstWrite.Seconds(), r.peakLiveMiB, r.steadyPeakLiveMiB, strings.TrimRight(" "+r.ceiling.String()+" "+r.watched.String(), " "))
}

const benchWS = "bench"

func (f benchFleet) measure(b *testing.B, naive bool, steady time.Duration) benchResult {
	ctx := context.Background()
	h, err := testbed.Start(ctx, testbed.Options{})
	if err != nil {
		b.Skip(err)
	}
	defer func() {
		if err := h.Stop(); err != nil {
			b.Error(err)
		}
	}()
	cfg := *h.Config
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.NewWithWatch(&cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	f.seed(b, ctx, c)

	res := benchResult{f: f, steady: steady}
	mgr, err := controller.NewHubManager(h.Config, controller.HubOptions{Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "routing",
		QPS: 2000, Burst: 4000, SyncPeriod: 30 * time.Second, Options: controller.Options{AlwaysWrite: naive, MaxConcurrentWrites: envInt("FLEET_BENCH_WRITES", 0)}})
	if err != nil {
		b.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	memLimit, unlimit := benchMemoryLimit(b)
	res.memLimit = memLimit
	defer unlimit()
	resetPeakRSS(b)
	startWrites := writeCount()
	works0, storages0 := writes("manifestwork", "create"), writes("clusterocistorage", "")
	stopProfile := startCPUProfile(b, fmt.Sprintf("controller-cpu-%d-clusters%s.pprof", f.clusters, map[bool]string{true: "-baseline"}[naive]))
	liveHeap := startLiveHeapPeak(b, fmt.Sprintf("controller-heap-peak-%d-clusters%s.pprof", f.clusters, map[bool]string{true: "-baseline"}[naive]))
	start := time.Now()
	go func() { done <- mgr.Start(mctx) }()
	var firstWrite atomic.Int64
	go func() {
		for writeCount() == startWrites && mctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		firstWrite.Store(int64(time.Since(start)))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()

	// Converged: every cluster has its work and its ClusterOCIStorage, every route its status.
	res.peakMiB = f.waitConverged(b, ctx, c, works0, storages0, liveHeap)
	res.converge = time.Since(start)
	res.firstWrite = time.Duration(firstWrite.Load())
	stopProfile()
	res.peakLiveMiB = liveHeap.Stop()
	res.convergeWrites = writeCount() - startWrites
	printMemory(b, "at convergence")
	if !naive {
		// Right after convergence, so that the two figures see the same load on a shared
		// machine; the ceiling's lists are collected before the steady window's peak is taken.
		// Its plain clients run in this process but are no part of the controller: the soft
		// memory limit is lifted meanwhile, lest it slow them.
		limited := debug.SetMemoryLimit(math.MaxInt64)
		res.ceiling = measureCeiling(b, ctx, c, false)
		res.watched = measureCeiling(b, ctx, c, true)
		debug.SetMemoryLimit(limited)
		resetPeakRSS(b)
	}
	steadyHeap := startLiveHeapPeak(b, fmt.Sprintf("controller-heap-steady-peak-%d-clusters%s.pprof", f.clusters, map[bool]string{true: "-baseline"}[naive]))
	settle(15 * time.Second)

	// One route change that moves 1% of the clusters: the wide route goes first.
	base := writeCount()
	routeBase := writes("ocistorageroute", "")
	var wide v1alpha1.OCIStorageRoute
	if err := c.Get(ctx, client.ObjectKey{Namespace: benchWS, Name: "wide"}, &wide); err != nil {
		b.Fatal(err)
	}
	wide.Spec.Priority = 0
	if err := c.Update(ctx, &wide); err != nil {
		b.Fatal(err)
	}
	res.moved = f.clusters / 100
	waitFor(b, "the wide route to win 1% of the clusters", func() bool {
		var r v1alpha1.OCIStorageRoute
		return c.Get(ctx, client.ObjectKeyFromObject(&wide), &r) == nil && r.Status.ObservedGeneration == r.Generation && int(r.Status.MatchedClusters) == res.moved
	})
	settle(15 * time.Second)
	res.perChanged = (writeCount() - base) / float64(res.moved)
	res.routeWrites = writes("ocistorageroute", "") - routeBase

	// The steady window: resyncs every 30 s, and a no-op touch of the workspace every 10 s.
	base = writeCount()
	reconciles := testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "routing"})
	touchWorkspace(ctx, c, steady)
	res.steadyWrites = writeCount() - base
	res.steadyPeakMiB = peakRSSMiB(b)
	res.steadyPeakLiveMiB = steadyHeap.Stop()
	printMemory(b, "after the steady window")
	if !naive {
		saveHeapProfile(b, fmt.Sprintf("controller-heap-%d-clusters.pprof", f.clusters))
	}
	res.reconciles = testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "routing"}) - reconciles
	if res.reconciles == 0 {
		b.Fatal("no reconcile in the steady window: its write count proves nothing")
	}
	return res
}

func writeCount() float64 { return writes("", "") }

// touchWorkspace makes a no-op change to the workspace's binding every 10 s for d: each one
// reconciles the workspace, which must write nothing.
func touchWorkspace(ctx context.Context, c client.Client, d time.Duration) {
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		var bind clusterv1beta2.ManagedClusterSetBinding
		if err := c.Get(ctx, client.ObjectKey{Namespace: benchWS, Name: "bench"}, &bind); err == nil {
			metav1.SetMetaDataAnnotation(&bind.ObjectMeta, "bench/touch", strconv.Itoa(i))
			_ = c.Update(ctx, &bind)
		}
		time.Sleep(min(10*time.Second, time.Until(end)))
	}
}

// resetPeakRSS collects what the seeding left and resets the process's peak RSS (VmHWM) to its
// current RSS.
func resetPeakRSS(b *testing.B) {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatal(err)
	}
}

// peakRSSMiB returns the process's peak RSS since resetPeakRSS, and resets it.
func peakRSSMiB(b *testing.B) float64 {
	peak := procStatusMiB(b, "self", "VmHWM")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatal(err)
	}
	return peak
}

// procStatusMiB reads a memory field of a process's /proc/<pid>/status ("self" for this one),
// such as VmHWM (its peak RSS) or VmRSS, in MiB.
func procStatusMiB(b *testing.B, pid, field string) float64 {
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kib / 1024
		}
	}
	b.Fatalf("no %s in /proc/%s/status", field, pid)
	return 0
}

// saveHeapProfile writes the heap profile, after a collection, into the artifact directory.
func saveHeapProfile(b *testing.B, name string) {
	runtime.GC()
	path := filepath.Join(b.ArtifactDir(), name)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("controller: heap profile %s\n", path)
}

// liveHeapPeak follows the live heap (what each collection kept) from its start to its stop and
// keeps its peak, with the heap profile of the collection that saw it in the artifact directory.
// The heap grows to (1 + GOGC/100) times what the last collection kept before the next, so the
// peak RSS follows this peak: it is what to make smaller. What the benchmark itself holds
// while it confirms convergence (aside) is left out.
type liveHeapPeak struct {
	path       string
	mu         sync.Mutex
	peak       uint64
	cycle      uint64 // the last collection sampled
	aside      bool   // the benchmark holds its own lists
	asideUntil uint64 // collections up to this one may have seen them
	stop, done chan struct{}
}

// liveHeap returns the live heap's bytes and the collections so far.
func liveHeap() (live, cycle uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

func startLiveHeapPeak(b *testing.B, name string) *liveHeapPeak {
	p := &liveHeapPeak{path: filepath.Join(b.ArtifactDir(), name), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for tick := time.NewTicker(100 * time.Millisecond); ; {
			p.sample()
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *liveHeapPeak) sample() {
	p.mu.Lock()
	defer p.mu.Unlock()
	live, cycle := liveHeap()
	if cycle == p.cycle || p.aside || cycle <= p.asideUntil {
		return
	}
	p.cycle = cycle
	if live > p.peak {
		p.peak = live
		if f, err := os.Create(p.path); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
}

// setAside runs f, the benchmark's own reads, leaving out of the peak the collections that may
// have seen what it held: those until the one after f returns.
func (p *liveHeapPeak) setAside(f func() bool) bool {
	p.mu.Lock()
	p.aside = true
	p.mu.Unlock()
	ok := f()
	_, cycle := liveHeap()
	p.mu.Lock()
	p.aside, p.asideUntil = false, cycle+1
	p.mu.Unlock()
	return ok
}

// Stop stops following and returns the peak in MiB.
func (p *liveHeapPeak) Stop() float64 {
	close(p.stop)
	<-p.done
	fmt.Printf("controller: heap profile at the live heap's peak %s\n", p.path)
	return float64(p.peak) / (1 << 20)
}

// startCPUProfile profiles the process's CPU (the controller's, and the little the benchmark's
// convergence polls take) into the artifact directory until the returned function is called.
func startCPUProfile(b *testing.B, name string) func() {
	path := filepath.Join(b.ArtifactDir(), name)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
		fmt.Printf("controller: CPU profile of convergence %s\n", path)
	}
}

// settle waits until the controller has written nothing for two seconds, or at most max: the
// baseline, which rewrites everything on every resync, never goes quiet for long.
func settle(max time.Duration) {
	last, quiet := writeCount(), 0
	for start := time.Now(); quiet < 10 && time.Since(start) < max; {
		time.Sleep(200 * time.Millisecond)
		if n := writeCount(); n != last {
			last, quiet = n, 0
		} else {
			quiet++
		}
	}
}

func waitFor(b *testing.B, what string, ok func() bool) {
	deadline := time.Now().Add(20 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: timed out after %.0f writes", what, writeCount())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitConverged waits until every cluster has its work and its ClusterOCIStorage and every route
// its status, and returns the process's peak RSS until then. The writes metric, cheap to read,
// says when to look (a work created and a storage written per cluster since works0 and
// storages0); only then is the hub listed to confirm, at most every 2 s, by metadata and in pages
// (countPaged), since the lists bring works and storages into the process whose memory is
// measured: the RSS peak is read before each confirming list so that the one which confirms is
// left out of it, and the lists are set aside from the live heap's peak.
func (f benchFleet) waitConverged(b *testing.B, ctx context.Context, c client.Client, works0, storages0 float64, heap *liveHeapPeak) float64 {
	var (
		peak   float64
		polled time.Time
	)
	waitFor(b, "convergence", func() bool {
		if writes("manifestwork", "create")-works0 < float64(f.clusters) || writes("clusterocistorage", "")-storages0 < float64(f.clusters) || time.Since(polled) < 2*time.Second {
			return false
		}
		polled = time.Now()
		peak = max(peak, peakRSSMiB(b))
		return heap.setAside(func() bool {
			if countPaged(ctx, c, workv1.SchemeGroupVersion.WithKind("ManifestWorkList"), client.MatchingLabels{hub.WorkspaceLabel: benchWS}) != f.clusters ||
				countPaged(ctx, c, v1alpha1.GroupVersion.WithKind("ClusterOCIStorageList"), client.InNamespace(benchWS)) != f.clusters {
				return false
			}
			var routes v1alpha1.OCIStorageRouteList
			if err := c.List(ctx, &routes, client.InNamespace(benchWS)); err != nil {
				return false
			}
			for _, r := range routes.Items {
				if r.Status.ObservedGeneration != r.Generation {
					return false
				}
			}
			return true
		})
	})
	return peak
}

// seed creates the fleet with 32 writers in parallel.
func (f benchFleet) seed(b *testing.B, ctx context.Context, c client.Client) {
	var objs []client.Object
	zones := f.routes - 1
	for z := 0; z < zones; z++ {
		objs = append(objs, route(benchWS, fmt.Sprintf("zone-%d", z), v1alpha1.OCIStorageRouteSpec{Priority: int32(10 + z), ClusterSelectors: selector("zone", fmt.Sprintf("z%d", z)), Registries: []string{"mirror", "source"}}))
	}
	objs = append(objs, route(benchWS, "wide", v1alpha1.OCIStorageRouteSpec{Priority: int32(10 + zones), ClusterSelectors: selector("band", "b0"), Registries: []string{"source"}}))
	for i := 0; i < f.clusters; i++ {
		objs = append(objs, benchCluster(fmt.Sprintf("c%05d", i), map[string]string{"zone": fmt.Sprintf("z%d", (i/10)%zones), "band": fmt.Sprintf("b%d", i/(f.clusters/100))})...)
	}
	n, ws := each(benchWorkspace())
	createEach(b, c, 1, n, ws)
	n, all := each(objs)
	createEach(b, c, 32, n, all)
}

// benchWorkspace is the benchmarks' workspace: its namespace, the cluster set bound to it and
// its two registries (source and mirror).
func benchWorkspace() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchWS}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "bench"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: benchWS}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "bench"}},
		testkit.RegistrySecret(benchWS, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example/fleet", AgentUsername: "a", AgentPassword: "p"}),
		testkit.RegistrySecret(benchWS, "mirror", registrysecret.RoleMirror, registrysecret.Registry{Reference: "mirror.example/fleet", AgentUsername: "a", AgentPassword: "p"}),
	}
}

// benchCluster is one cluster of the bench set, labelled: its namespace and its ManagedCluster.
func benchCluster(name string, labels map[string]string) []client.Object {
	labels[clusterv1beta2.ClusterSetLabel] = "bench"
	return []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}}
}

// createEach creates obj(0) to obj(n-1), skipping nils and those that exist, with workers
// writers in parallel (one creates them in order), and fails on the first other error.
func createEach(t testing.TB, c client.Client, workers, n int, obj func(int) client.Object) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				o := obj(i)
				if o == nil {
					continue
				}
				if err := c.Create(context.Background(), o); client.IgnoreAlreadyExists(err) != nil {
					mu.Lock()
					first = cmp.Or(first, fmt.Errorf("%T %s: %w", o, o.GetName(), err))
					mu.Unlock()
					next.Store(int64(n)) // stop every writer
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

func each(objs []client.Object) (int, func(int) client.Object) {
	return len(objs), func(i int) client.Object { return objs[i] }
}

// BenchmarkControllerLabelFlip prints the routing work of one ManagedCluster label flip on a
// fresh hub of many workspaces, for the routing reconciler's mapping (the workspaces bound to a
// set that held or holds the cluster) and for the mapping to every workspace it replaced,
// measured in the same run:
//
//	controller_label_flip: workspaces=500 clusters=2000 reconciles_per_flip=… baseline_reconciles_per_flip=… ratio=…x flip_s=… baseline_flip_s=…
//
// FLEET_BENCH_FLIP_WORKSPACES (default 500) and FLEET_BENCH_FLIP_CLUSTERS (per workspace,
// default 4) scale it.
func BenchmarkControllerLabelFlip(b *testing.B) {
	f := flipFleet{prefix: "lf", workspaces: envInt("FLEET_BENCH_FLIP_WORKSPACES", 500), clusters: envInt("FLEET_BENCH_FLIP_CLUSTERS", 4)}
	for b.Loop() {
		h, err := testbed.Start(context.Background(), testbed.Options{})
		if err != nil {
			b.Skip(err)
		}
		cfg := *h.Config
		cfg.QPS, cfg.Burst = 2000, 4000
		c, err := client.New(&cfg, client.Options{Scheme: controller.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		f.seed(b, c)
		m := f.measureFlips(b, h.Config, c, 4)
		var ours float64
		for _, n := range m.ours {
			ours += n / float64(len(m.ours))
		}
		fmt.Printf("controller_label_flip: workspaces=%d clusters=%d reconciles_per_flip=%.1f baseline_reconciles_per_flip=%.0f ratio=%.0fx flip_s=%.2f baseline_flip_s=%.2f\n",
			f.workspaces, f.workspaces*f.clusters, ours, m.naive, m.naive/ours, m.tookOurs.Seconds(), m.tookNaive.Seconds())
		if err := h.Stop(); err != nil {
			b.Error(err)
		}
	}
}
