package controller_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// BenchmarkController100k runs the routing reconciler, as BenchmarkController does, on one
// workspace of FLEET_BENCH_100K_CLUSTERS (default 100,000) ManagedClusters labelled by region,
// zone and tier, routed by label (labelFleet: 296 routes and the default), on a hub sized for it
// (testbed.ScaleOptions), and prints
//
//	controller100k: clusters=100000 routes=296 create_s=… converge_s=… writes=… controller_peak_rss_mib=… controller_steady_rss_mib=… apiserver_peak_rss_mib=…
//
// create_s is the fleet's creation (namespaces and ManagedClusters, FLEET_BENCH_CREATE_WORKERS
// writers, default 64); converge_s from the manager's start until every cluster has its work and
// storage and every route its status, each route's matched count checked against the fleet's own
// winner; writes those of convergence. controller_peak_rss_mib is the process's peak RSS over
// convergence (the controller's, as BenchmarkController measures it), controller_steady_rss_mib
// its peak over the steady window that follows (FLEET_BENCH_STEADY, default 1m: resyncs every
// 30 s), apiserver_peak_rss_mib kube-apiserver's peak over the whole run; steady_reconcile_s is
// the mean routing reconcile of that window, stop_s how long the manager takes to stop after it
// (within its 30 s grace period, a reconcile in flight seeing its context end). A progress line every
// minute of convergence gives the rate reached; past FLEET_BENCH_100K_CONVERGE (default: go
// test's -timeout less the steady window and 5 minutes, counted from the bench's start) it prints
// where it stopped, saves the profiles and fails. The heap profile after the steady window
// and the CPU profile of convergence go to the artifact directory (go test -artifacts).
//
// It runs only with FLEET_BENCH_100K=1 (about half an hour at 100,000 clusters).
func BenchmarkController100k(b *testing.B) {
	if os.Getenv("FLEET_BENCH_100K") != "1" {
		b.Skip("FLEET_BENCH_100K=1 runs it")
	}
	f := labelFleet{clusters: envInt("FLEET_BENCH_100K_CLUSTERS", 100000)}
	steady := time.Minute
	if d, err := time.ParseDuration(os.Getenv("FLEET_BENCH_STEADY")); err == nil {
		steady = d
	}
	// Stop converging in time to report, rather than be killed by go test's -timeout.
	converge := time.Hour
	if t := flag.Lookup("test.timeout"); t != nil {
		if d, err := time.ParseDuration(t.Value.String()); err == nil && d > 0 {
			converge = max(time.Minute, d-steady-5*time.Minute)
		}
	}
	if d, err := time.ParseDuration(os.Getenv("FLEET_BENCH_100K_CONVERGE")); err == nil {
		converge = d
	}
	for b.Loop() {
		r := f.measure(b, envInt("FLEET_BENCH_CREATE_WORKERS", 64), steady, converge)
		fmt.Printf("controller100k: clusters=%d routes=%d create_s=%.1f converge_s=%.1f writes=%.0f controller_peak_rss_mib=%.0f controller_steady_rss_mib=%.0f apiserver_peak_rss_mib=%.0f (etcd_peak_rss_mib=%.0f create_workers=%d steady_window=%s steady_writes=%.0f steady_reconcile_s=%.1f stop_s=%.1f)\n",
			f.clusters, len(f.routes()), r.create.Seconds(), r.converge.Seconds(), r.writes, r.peakMiB, r.steadyMiB, r.apiserverMiB, r.etcdMiB, r.workers, steady, r.steadyWrites, r.reconcile.Seconds(), r.stop.Seconds())
	}
}

// labelFleet is one workspace of clusters labelled region (10), zone (30 per region) and tier
// (prod, staging 15%, edge 5%), routed by label: a route per region and tier for staging and
// edge first, then a route per zone (but every tenth zone, whose prod clusters fall through),
// then a route per even region for its prod clusters that fell through, then the default.
type labelFleet struct{ clusters int }

const (
	lfRegions = 10
	lfZones   = lfRegions * 30
)

func (f labelFleet) labels(i int) (region, zone int, tier string) {
	zone = (i / 10) % lfZones
	switch i % 20 {
	case 0:
		tier = "edge"
	case 1, 2, 3:
		tier = "staging"
	default:
		tier = "prod"
	}
	return zone / 30, zone, tier
}

// winner is the route the fleet's own rules give cluster i: what routes() says, evaluated by
// hand.
func (f labelFleet) winner(i int) string {
	region, zone, tier := f.labels(i)
	switch {
	case tier != "prod":
		return fmt.Sprintf("r%d-%s", region, tier)
	case zone%10 != 9:
		return fmt.Sprintf("zone-%d", zone)
	case region%2 == 0:
		return fmt.Sprintf("r%d-prod-rest", region)
	default:
		return "default"
	}
}

func (f labelFleet) routes() []client.Object {
	var objs []client.Object
	regs := []string{"mirror", "source"}
	for r := range lfRegions {
		for t, tier := range []string{"staging", "edge"} {
			objs = append(objs, route(benchWS, fmt.Sprintf("r%d-%s", r, tier), v1alpha1.OCIStorageRouteSpec{Priority: int32(10 + 2*r + t),
				ClusterSelectors: []v1alpha1.LabelSelector{{MatchLabels: map[string]string{"region": fmt.Sprintf("r%d", r), "tier": tier}}}, Registries: regs}))
		}
	}
	for z := range lfZones {
		if z%10 == 9 {
			continue
		}
		sel := selector("zone", fmt.Sprintf("z%d", z))
		if z%2 == 1 {
			sel = []v1alpha1.LabelSelector{{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{fmt.Sprintf("z%d", z)}}}}}
		}
		objs = append(objs, route(benchWS, fmt.Sprintf("zone-%d", z), v1alpha1.OCIStorageRouteSpec{Priority: int32(100 + z), ClusterSelectors: sel, Registries: regs}))
	}
	for r := 0; r < lfRegions; r += 2 {
		objs = append(objs, route(benchWS, fmt.Sprintf("r%d-prod-rest", r), v1alpha1.OCIStorageRouteSpec{Priority: int32(1000 + r), Registries: []string{"source"},
			ClusterSelectors: []v1alpha1.LabelSelector{{MatchExpressions: []v1alpha1.LabelSelectorRequirement{
				{Key: "region", Operator: "In", Values: []string{fmt.Sprintf("r%d", r)}}, {Key: "tier", Operator: "NotIn", Values: []string{"staging", "edge"}}}}}}))
	}
	return append(objs, route(benchWS, "default", v1alpha1.OCIStorageRouteSpec{Priority: 100000, Default: true, Registries: []string{"source"}}))
}

// seed creates the workspace and its routes, then each cluster's namespace and ManagedCluster
// with workers writers in parallel.
func (f labelFleet) seed(b *testing.B, c client.Client, workers int) {
	n, ws := each(append(benchWorkspace(), f.routes()...))
	createEach(b, c, 1, n, ws)
	createEach(b, c, workers, 2*f.clusters, func(j int) client.Object {
		i := j / 2
		region, zone, tier := f.labels(i)
		return benchCluster(fmt.Sprintf("c%06d", i), map[string]string{"region": fmt.Sprintf("r%d", region), "zone": fmt.Sprintf("z%d", zone), "tier": tier})[j%2]
	})
}

type result100k struct {
	create, converge      time.Duration
	writes, steadyWrites  float64
	peakMiB, steadyMiB    float64
	apiserverMiB, etcdMiB float64
	workers               int
	// reconcile is the mean routing reconcile of the steady window, stop how long the manager
	// took to stop after it (a reconcile running then must see its context end).
	reconcile, stop time.Duration
}

func (f labelFleet) measure(b *testing.B, workers int, steady, deadline time.Duration) result100k {
	ctx, begin := context.Background(), time.Now()
	h, err := testbed.Start(ctx, testbed.ScaleOptions())
	if err != nil {
		b.Skip(err)
	}
	defer func() {
		if err := h.Stop(); err != nil {
			b.Error(err)
		}
	}()
	apiserver, etcd := strconv.Itoa(h.PID("kube-apiserver")), strconv.Itoa(h.PID("etcd"))
	cfg := *h.Config
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(&cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	res := result100k{workers: workers}
	start := time.Now()
	f.seed(b, c, workers)
	res.create = time.Since(start)
	fmt.Printf("controller100k: created %d clusters in %.1f s (%.0f objects/s)\n", f.clusters, res.create.Seconds(), float64(2*f.clusters)/res.create.Seconds())

	mgr, err := controller.NewHubManager(h.Config, controller.HubOptions{Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "routing",
		QPS: 2000, Burst: 4000, SyncPeriod: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	resetPeakRSS(b)
	startWrites := writeCount()
	works0, storages0 := writes("manifestwork", "create"), writes("clusterocistorage", "")
	stopProfile := startCPUProfile(b, fmt.Sprintf("controller100k-cpu-%d-clusters.pprof", f.clusters))
	start = time.Now()
	go func() { done <- mgr.Start(mctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		from := time.Now()
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		res.stop = time.Since(from)
	}
	defer stop()

	// Converged: the writes metric (cheap to read) counts a work created per cluster and as many
	// storage writes (a storage's creation counts as its status write), every route has its
	// status and the routes' counts add up to the fleet; then the hub is listed once to confirm
	// it. The peak is read before each confirming list, which would add itself to it.
	progress := time.Now()
	for {
		time.Sleep(2 * time.Second)
		works, storages := writes("manifestwork", "create")-works0, writes("clusterocistorage", "")-storages0
		late := time.Since(begin) > deadline
		if time.Since(progress) >= time.Minute || late {
			progress = time.Now()
			fmt.Printf("controller100k: progress t=%.0fs works=%.0f storage_writes=%.0f writes=%.0f rate=%.0f writes/s rss_mib=%.0f apiserver_rss_mib=%.0f etcd_rss_mib=%.0f cpu_s=%.0f apiserver_cpu_s=%.0f etcd_cpu_s=%.0f load=%s\n",
				time.Since(start).Seconds(), works, storages, writeCount()-startWrites, (writeCount()-startWrites)/time.Since(start).Seconds(),
				procStatusMiB(b, "self", "VmRSS"), procStatusMiB(b, apiserver, "VmRSS"), procStatusMiB(b, etcd, "VmRSS"),
				procCPUSeconds(b, "self"), procCPUSeconds(b, apiserver), procCPUSeconds(b, etcd), loadAverage())
		}
		if late {
			stopProfile()
			fmt.Printf("controller100k: not converged: clusters=%d create_s=%.1f converging_s=%.1f controller_peak_rss_mib=%.0f apiserver_peak_rss_mib=%.0f\n",
				f.clusters, res.create.Seconds(), time.Since(start).Seconds(), max(res.peakMiB, peakRSSMiB(b)), procStatusMiB(b, apiserver, "VmHWM"))
			saveHeapProfile(b, fmt.Sprintf("controller100k-heap-%d-clusters.pprof", f.clusters))
			b.Fatalf("not converged %s after the bench's start", deadline)
		}
		if works < float64(f.clusters) || storages < float64(f.clusters) || !f.routesSettled(ctx, c) {
			continue
		}
		res.peakMiB = max(res.peakMiB, peakRSSMiB(b))
		if f.converged(ctx, c) {
			break
		}
	}
	res.converge = time.Since(start)
	stopProfile()
	res.writes = writeCount() - startWrites
	f.checkRoutes(b, ctx, c)

	// The steady window, from a collected heap: resyncs every 30 s and a no-op touch of the
	// workspace every 10 s, as BenchmarkController's.
	settle(15 * time.Second)
	resetPeakRSS(b)
	base := writeCount()
	routing := map[string]string{"controller": "routing"}
	took, reconciles := testkit.Histogram("controller_runtime_reconcile_time_seconds", routing)
	touchWorkspace(ctx, c, steady)
	res.steadyWrites = writeCount() - base
	res.steadyMiB = peakRSSMiB(b)
	tookAfter, reconcilesAfter := testkit.Histogram("controller_runtime_reconcile_time_seconds", routing)
	if reconcilesAfter == reconciles {
		b.Fatal("no reconcile in the steady window: its RSS and write count prove nothing")
	}
	res.reconcile = time.Duration((tookAfter - took) / (reconcilesAfter - reconciles) * float64(time.Second))
	saveHeapProfile(b, fmt.Sprintf("controller100k-heap-%d-clusters.pprof", f.clusters))
	stop()
	res.apiserverMiB, res.etcdMiB = procStatusMiB(b, apiserver, "VmHWM"), procStatusMiB(b, etcd, "VmHWM")
	return res
}

// routesSettled: every route has the status of its generation, and their matched counts add up to
// the fleet (the default route catches every cluster no other one wins).
func (f labelFleet) routesSettled(ctx context.Context, c client.Client) bool {
	var routes v1alpha1.OCIStorageRouteList
	if err := c.List(ctx, &routes, client.InNamespace(benchWS)); err != nil {
		return false
	}
	matched := 0
	for _, r := range routes.Items {
		if r.Status.ObservedGeneration != r.Generation {
			return false
		}
		matched += int(r.Status.MatchedClusters)
	}
	return matched == f.clusters
}

// converged lists the workspace's works and storages, by metadata and in pages: one of each per
// cluster.
func (f labelFleet) converged(ctx context.Context, c client.Client) bool {
	return countPaged(ctx, c, workv1.SchemeGroupVersion.WithKind("ManifestWorkList"), client.MatchingLabels{hub.WorkspaceLabel: benchWS}) == f.clusters &&
		countPaged(ctx, c, v1alpha1.GroupVersion.WithKind("ClusterOCIStorageList"), client.InNamespace(benchWS)) == f.clusters
}

// countPaged counts the objects of gvk that opts select, listing them by metadata in pages of 500,
// so that what the benchmark holds at a time stays small next to the controller whose memory it
// measures.
func countPaged(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, opts ...client.ListOption) int {
	n, cont := 0, ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		if err := c.List(ctx, list, append(opts, client.Limit(500), client.Continue(cont))...); err != nil {
			return -1
		}
		n += len(list.Items)
		if cont = list.Continue; cont == "" {
			return n
		}
	}
}

// checkRoutes fails unless each route matched the clusters the fleet's own rules give it.
func (f labelFleet) checkRoutes(b *testing.B, ctx context.Context, c client.Client) {
	want := map[string]int{}
	for i := range f.clusters {
		want[f.winner(i)]++
	}
	var routes v1alpha1.OCIStorageRouteList
	if err := c.List(ctx, &routes, client.InNamespace(benchWS)); err != nil {
		b.Fatal(err)
	}
	if len(routes.Items) != len(f.routes()) {
		b.Fatalf("%d routes on the hub, want %d", len(routes.Items), len(f.routes()))
	}
	for _, r := range routes.Items {
		if got := int(r.Status.MatchedClusters); got != want[r.Name] {
			b.Errorf("route %s matched %d clusters, want %d", r.Name, got, want[r.Name])
		}
	}
}

// procCPUSeconds is the CPU time (user and system) a process has used since it started, from
// /proc/<pid>/stat: where convergence time goes, this process's or the hub's.
func procCPUSeconds(b *testing.B, pid string) float64 {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command's closing parenthesis, from the third: utime and stime are the
	// 14th and 15th, in clock ticks of 1/100 s.
	_, rest, _ := strings.Cut(string(stat), ") ")
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		b.Fatalf("/proc/%s/stat: %q", pid, stat)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%s/stat: %q", pid, stat)
	}
	return (utime + stime) / 100
}

// loadAverage is the machine's one-minute load average, which the figures depend on.
func loadAverage() string {
	l, _ := os.ReadFile("/proc/loadavg")
	first, _, _ := strings.Cut(string(l), " ")
	return first
}
