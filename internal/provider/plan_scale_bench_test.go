package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// A benchmark's CLI starts the test binary as its plugin (the CLI configuration's dev_overrides
// point at it). It then runs the provider binary envBenchProviderExec names as its child, on the
// same standard streams, and appends the child's CPU time and peak RSS to the file
// envBenchProviderStats names when the CLI has stopped it. With envBenchProviderProfile (a folder)
// instead, it serves the provider itself, with a CPU profile and a heap profile (as it stops) saved
// in that folder, and appends its own usage.
const (
	envBenchProviderStats   = "FLEET_BENCH_PROVIDER_STATS"
	envBenchProviderExec    = "FLEET_BENCH_PROVIDER_EXEC"
	envBenchProviderProfile = "FLEET_BENCH_PROVIDER_PROFILE"
)

// serveBenchProvider serves the provider to the CLI that started this process, instead of
// running the tests, and returns the exit code.
func serveBenchProvider(stats string) int {
	var ru *syscall.Rusage
	var err error
	if bin := os.Getenv(envBenchProviderExec); bin != "" && os.Getenv(envBenchProviderProfile) == "" {
		cmd := exec.Command(bin)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = cmd.Run()
		if cmd.ProcessState != nil {
			ru, _ = cmd.ProcessState.SysUsage().(*syscall.Rusage)
		}
	} else {
		dir := os.Getenv(envBenchProviderProfile)
		if dir != "" {
			f, e := os.Create(filepath.Join(dir, fmt.Sprintf("provider-%d.pprof", os.Getpid())))
			if e == nil && pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
			defer sampleHeap(filepath.Join(dir, fmt.Sprintf("provider-%d", os.Getpid())))()
		}
		err = Serve("bench", false)
		if dir != "" { // what the provider still holds as it stops, every call done
			runtime.GC() // the profile is as of the last collection: one after the calls
			if f, e := os.Create(filepath.Join(dir, fmt.Sprintf("provider-%d.heap", os.Getpid()))); e == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
		ru = new(syscall.Rusage)
		if syscall.Getrusage(syscall.RUSAGE_SELF, ru) != nil {
			ru = nil
		}
	}
	if ru != nil {
		if f, e := os.OpenFile(stats, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); e == nil {
			fmt.Fprintf(f, "%d %d %d %d\n", os.Getpid(), time.Duration(ru.Utime.Nano()).Microseconds(), time.Duration(ru.Stime.Nano()).Microseconds(), ru.Maxrss)
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sampleHeap records the live heap (as of the last collection), the heap goal and the Go
// runtime's total memory every 100 ms into prefix+".mem" (their peaks and the last sample,
// rewritten every second: the CLI may kill the provider before it stops), and each time the live
// heap reaches a new peak (by a tenth at least) a heap profile into prefix+".peak.heap" and the
// goroutines into prefix+".peak.goroutines": what the
// plan refers to at its most, against what the collector lets grow up to its goal.
func sampleHeap(prefix string) (stop func()) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/total:bytes"}}
	peaks := make([]uint64, len(samples))
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	write := func() {
		line := fmt.Sprintf("peak_live_heap_mib=%.1f peak_heap_goal_mib=%.1f peak_go_total_mib=%.1f last_live_heap_mib=%.1f\n",
			mib(peaks[0]), mib(peaks[1]), mib(peaks[2]), mib(samples[0].Value.Uint64()))
		_ = os.WriteFile(prefix+".mem", []byte(line), 0o644)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var profiled uint64
		for i := 0; ; i++ {
			metrics.Read(samples)
			for i, s := range samples {
				peaks[i] = max(peaks[i], s.Value.Uint64())
			}
			if live := samples[0].Value.Uint64(); live > profiled+profiled/10 && live > 16<<20 {
				if f, err := os.Create(prefix + ".peak.heap"); err == nil {
					_ = pprof.WriteHeapProfile(f) // as of the last collection: the live heap just read
					f.Close()
				}
				if f, err := os.Create(prefix + ".peak.goroutines"); err == nil {
					_ = pprof.Lookup("goroutine").WriteTo(f, 1) // what holds on to its calls
					f.Close()
				}
				profiled = live
			}
			if i%10 == 0 {
				write()
			}
			select {
			case <-done:
				write()
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// buildProvider builds the provider binary (main.go at the module's root) into dir.
func buildProvider(b *testing.B, dir string) string {
	b.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		b.Fatalf("go list -m: %v", err)
	}
	bin := filepath.Join(dir, "terraform-provider-fleet")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build the provider: %v\n%s", err, out)
	}
	return bin
}

// providerUsage is what the provider processes of one CLI command used: their CPU (user+sys)
// summed, the largest peak RSS, and how many the CLI started.
type providerUsage struct {
	cpu       time.Duration
	peakRSSKB int64
	processes int
}

func readProviderUsage(b *testing.B, path string) providerUsage {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("the provider wrote no usage (%v): did the CLI start the test binary as its plugin?", err)
	}
	var u providerUsage
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			b.Fatalf("provider usage line %q", line)
		}
		user, _ := strconv.ParseInt(f[1], 10, 64)
		sys, _ := strconv.ParseInt(f[2], 10, 64)
		rss, _ := strconv.ParseInt(f[3], 10, 64)
		u.cpu += time.Duration(user+sys) * time.Microsecond
		u.peakRSSKB = max(u.peakRSSKB, rss)
		u.processes++
	}
	return u
}

// BenchmarkPlanScale runs the CLI's no-change plan (refresh and plan, as `terraform plan` does)
// of a configuration of FLEET_BENCH_PLAN_ROUTES routes (default 100,500,5000: one count-ed
// fleet_oci_route, each route selecting its own clusters by label) on a hub with 10,000
// ManagedClusters, the provider served by this test binary in a process of its own, and prints
// one line per size
//
//	plan: routes=N clusters=10000 plan_s=… provider_cpu_ms_per_route=… provider_peak_rss_mib=… provider_rss_mib_per_route=…
//
// then how the provider's CPU per route grows: flatness is its value at the largest size over
// at the smallest (1 is flat; a fixed cost per plan, such as listing the clusters, makes it
// less), and marginal_ms_per_route the CPU each route past the smallest size added; likewise
// marginal_rss_mib_per_route, the peak RSS each route past the smallest size added, and
// fixed_rss_mib, what is left of the smallest size's peak without its routes' share. The routes
// are written to the hub as the provider writes them (the first by an apply, the others copied
// from it) and their state copied from the applied one, so that only the plan is timed; each
// plan must find no changes. FLEET_BENCH_PLAN_PROFILE=<folder> saves the provider's CPU profile
// of each plan there. The CLI is TF_ACC_TERRAFORM_PATH, else the test bed's tofu.
func BenchmarkPlanScale(b *testing.B) {
	sizes := []int{100, 500, 5000}
	if v := os.Getenv("FLEET_BENCH_PLAN_ROUTES"); v != "" {
		sizes = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				b.Fatalf("FLEET_BENCH_PLAN_ROUTES: %q is no count of routes", s)
			}
			sizes = append(sizes, n)
		}
	}
	cli := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if cli == "" {
		dir, err := testbed.BinDir()
		if err != nil {
			b.Fatal(err)
		}
		cli = filepath.Join(dir, "tofu")
	}
	kube := testHub(b)
	fleet := benchFleet(b)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	provider := buildProvider(b, b.TempDir())
	type result struct {
		n     int
		plan  time.Duration
		usage providerUsage
	}
	var results []result
	for _, n := range sizes {
		ws := testWorkspace(b, kube)
		wf := newHubFixtures(b, ws)
		wf.Bind(fleet.set)
		wf.Registry("central", "source", "harbor.example.com/fleet")
		benchClusterStorages(b, fleet, ws, n)
		w := newBenchCLI(b, cli, self, provider)
		w.write(ws, 1)
		if _, _, err := w.run("apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
			b.Fatal(err)
		}
		w.copyRoutes(ws, n)
		w.write(ws, n)
		var best result
		for range max(b.N, 1) {
			start := time.Now()
			out, usage, err := w.run("plan", "-detailed-exitcode", "-input=false", "-no-color", "-lock=false")
			took := time.Since(start)
			if err != nil {
				b.Fatalf("%d routes: the plan found changes or failed (a no-change plan was expected): %v\n%s", n, err, tail(out, 4000))
			}
			if best.n == 0 || took < best.plan {
				best = result{n: n, plan: took, usage: usage}
			}
		}
		results = append(results, best)
		perRoute := float64(best.usage.cpu.Microseconds()) / 1000 / float64(n)
		rssMiB := float64(best.usage.peakRSSKB) / 1024
		fmt.Printf("plan: routes=%d clusters=%d plan_s=%.2f provider_cpu_ms_per_route=%.3f provider_peak_rss_mib=%.1f provider_rss_mib_per_route=%.3f (provider_cpu_s=%.2f provider_processes=%d cli=%s)\n",
			n, fleet.clusters, best.plan.Seconds(), perRoute, rssMiB, rssMiB/float64(n), best.usage.cpu.Seconds(), best.usage.processes, filepath.Base(cli))
	}
	if len(results) > 1 {
		first, last := results[0], results[len(results)-1]
		per := func(r result) float64 { return float64(r.usage.cpu.Microseconds()) / 1000 / float64(r.n) }
		marginal := float64((last.usage.cpu - first.usage.cpu).Microseconds()) / 1000 / float64(last.n-first.n)
		rss := func(r result) float64 { return float64(r.usage.peakRSSKB) / 1024 }
		marginalRSS := (rss(last) - rss(first)) / float64(last.n-first.n)
		fmt.Printf("plan: flatness_%d_vs_%d=%.2f marginal_ms_per_route=%.3f fixed_ms=%.0f marginal_rss_mib_per_route=%.3f fixed_rss_mib=%.0f\n", last.n, first.n, per(last)/per(first), marginal,
			float64(first.usage.cpu.Microseconds())/1000-marginal*float64(first.n), marginalRSS, rss(first)-marginalRSS*float64(first.n))
		b.ReportMetric(per(last), "cpu_ms/route")
		b.ReportMetric(per(last)/per(first), "flatness")
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// benchCLI is one working directory of the CLI whose provider is this test binary.
type benchCLI struct {
	b        *testing.B
	cli, dir string
	env      []string
	dyn      dynamic.Interface
}

func newBenchCLI(b *testing.B, cli, self, provider string) *benchCLI {
	b.Helper()
	dir := b.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(plugins, "terraform-provider-fleet")); err != nil {
		b.Fatal(err)
	}
	rc := filepath.Join(dir, "cli.tfrc")
	conf := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"umkim/fleet\" = %q\n  }\n  direct {}\n}\n", plugins)
	if err := os.WriteFile(rc, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", envBenchProviderExec+"="+provider)
	if p := os.Getenv("FLEET_BENCH_PLAN_PROFILE"); p != "" {
		// This test binary then serves the provider itself: with the SDK's logs off, as the
		// provider's main turns them off when no TF_LOG variable asks for them (quietSDKLogs).
		env = append(env, envBenchProviderProfile+"="+p, "TF_LOG_SDK=OFF", "TF_LOG_SDK_FRAMEWORK=OFF", "TF_LOG_SDK_PROTO=OFF")
	}
	return &benchCLI{b: b, cli: cli, dir: work, env: env, dyn: dynamic.NewForConfigOrDie(testRESTConfig(b))}
}

// benchRouteName, benchZone: route i selects the clusters of zone i (benchFleet's labels).
func benchRouteName(i int) string { return fmt.Sprintf("r%05d", i) }
func benchZone(i int) string      { return fmt.Sprintf("z%05d", i) }

// write replaces the configuration with n routes in workspace ws.
func (w *benchCLI) write(ws string, n int) {
	w.b.Helper()
	config := fmt.Sprintf(`terraform {
  required_providers {
    fleet = { source = "umkim/fleet" }
  }
}

provider "fleet" {
  config_path = %q
  workspace   = %q
}

resource "fleet_oci_route" "r" {
  count            = %d
  name             = format("r%%05d", count.index)
  priority         = 10 + count.index
  registries       = ["central"]
  replication_wait = "0s"
  cluster_selectors = [{ match_labels = { zone = format("z%%05d", count.index) } }]
}
`, os.Getenv("KUBE_CONFIG_PATH"), ws, n)
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(config), 0o644); err != nil {
		w.b.Fatal(err)
	}
}

// run runs the CLI; usage is what its provider processes used.
func (w *benchCLI) run(args ...string) (string, providerUsage, error) {
	w.b.Helper()
	stats := filepath.Join(w.dir, fmt.Sprintf("provider-usage-%d", time.Now().UnixNano()))
	cmd := exec.Command(w.cli, args...)
	cmd.Dir = w.dir
	cmd.Env = append(slices.Clone(w.env), envBenchProviderStats+"="+stats)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), providerUsage{}, fmt.Errorf("%s %s: %w", filepath.Base(w.cli), strings.Join(args, " "), err)
	}
	return out.String(), readProviderUsage(w.b, stats), nil
}

// copyRoutes makes routes 1..n-1 of workspace ws copies of route 0, which an apply wrote, on the
// hub and in state, as if the apply had written them all.
func (w *benchCLI) copyRoutes(ws string, n int) {
	w.b.Helper()
	first, err := w.dyn.Resource(routesGVR).Namespace(ws).Get(context.Background(), benchRouteName(0), metav1.GetOptions{})
	if err != nil {
		w.b.Fatal(err)
	}
	spec, err := json.Marshal(first.Object["spec"])
	if err != nil {
		w.b.Fatal(err)
	}
	createAll(w.b, routesGVR, n-1, func(j int) map[string]any {
		i := j + 1
		var s map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(spec), strconv.Quote(benchZone(0)), strconv.Quote(benchZone(i)))), &s); err != nil {
			panic(err)
		}
		s["priority"] = 10 + i
		return map[string]any{"apiVersion": first.GetAPIVersion(), "kind": first.GetKind(),
			"metadata": map[string]any{"name": benchRouteName(i), "namespace": ws, "labels": stringMapAny(first.GetLabels()), "annotations": stringMapAny(first.GetAnnotations())},
			"spec":     s}
	})

	path := filepath.Join(w.dir, "terraform.tfstate")
	data, err := os.ReadFile(path)
	if err != nil {
		w.b.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(data, &state); err != nil {
		w.b.Fatal(err)
	}
	resources, _ := state["resources"].([]any)
	if len(resources) != 1 {
		w.b.Fatalf("state has %d resources, want the one route", len(resources))
	}
	res := resources[0].(map[string]any)
	instances, _ := res["instances"].([]any)
	if len(instances) != 1 {
		w.b.Fatalf("state has %d route instances, want 1", len(instances))
	}
	one, err := json.Marshal(instances[0])
	if err != nil {
		w.b.Fatal(err)
	}
	all := make([]any, n)
	for i := range n {
		text := strings.ReplaceAll(string(one), strconv.Quote(benchZone(0)), strconv.Quote(benchZone(i)))
		text = strings.ReplaceAll(text, benchRouteName(0)+`"`, benchRouteName(i)+`"`) // name, id and identity
		var inst map[string]any
		if err := json.Unmarshal([]byte(text), &inst); err != nil {
			w.b.Fatal(err)
		}
		inst["index_key"] = i
		inst["attributes"].(map[string]any)["priority"] = 10 + i
		all[i] = inst
	}
	res["instances"] = all
	state["serial"] = state["serial"].(float64) + 1
	if data, err = json.Marshal(state); err != nil {
		w.b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		w.b.Fatal(err)
	}
}

func stringMapAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// benchFleetHub is the hub's fleet the plan benchmarks share: 10,000 ManagedClusters
// (FLEET_BENCH_PLAN_CLUSTERS) in one
// set, each labelled site (1,000 sites), region (12) and zone (5,000 zones, two clusters each).
type benchFleetHub struct {
	set          string
	clusters     int
	zones        int
	clusterNamed func(i int) string
}

var sharedBenchFleet *benchFleetHub

// benchFleet creates the fleet once per process.
func benchFleet(b *testing.B) *benchFleetHub {
	b.Helper()
	if sharedBenchFleet != nil {
		return sharedBenchFleet
	}
	const sites, zones = 1_000, 5_000
	clusters := 10_000
	if n, err := strconv.Atoi(os.Getenv("FLEET_BENCH_PLAN_CLUSTERS")); err == nil && n > 0 {
		clusters = n // a quicker run, to try the benchmark
	}
	f := newHubFixtures(b, fmt.Sprintf("bench-fleet-%d", os.Getpid()))
	set := f.Name("fleet")
	f.create(clusterSetsGVR, map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
		"metadata": map[string]any{"name": set},
		"spec":     map[string]any{"clusterSelector": map[string]any{"selectorType": string(clusterv1beta2.ExclusiveClusterSetLabel)}},
	})
	named := func(i int) string { return f.Name(fmt.Sprintf("c%05d", i)) }
	createAll(b, managedClustersGVR, clusters, func(i int) map[string]any {
		return map[string]any{
			"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
			"metadata": map[string]any{"name": named(i), "labels": map[string]any{
				clusterv1beta2.ClusterSetLabel: set, "site": fmt.Sprintf("site-%04d", i%sites),
				"region": fmt.Sprintf("region-%d", i%12), "zone": benchZone(i % zones)}},
			"spec": map[string]any{"hubAcceptsClient": true},
		}
	})
	sharedBenchFleet = &benchFleetHub{set: set, clusters: clusters, zones: zones, clusterNamed: named}
	return sharedBenchFleet
}

// benchClusterStorages writes, as the controller and the clusters' probes would have, the
// ClusterOCIStorage of each cluster that the first n routes of workspace ws win: routed, its chain
// delivered, the registry probed Reachable. The plan's reachability check reads them.
func benchClusterStorages(b *testing.B, fleet *benchFleetHub, ws string, n int) {
	b.Helper()
	var clusters []int
	for c := range fleet.clusters {
		if c%fleet.zones < n {
			clusters = append(clusters, c)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	createAll(b, clusterStorageKind.GroupVersionResource, len(clusters), func(j int) map[string]any {
		c := clusters[j]
		return map[string]any{
			"apiVersion": clusterStorageKind.APIVersion(), "kind": clusterStorageKind.Kind,
			"metadata": map[string]any{"name": fleet.clusterNamed(c), "namespace": ws},
			"status": map[string]any{
				"route": benchRouteName(c % fleet.zones), "matchedBy": "spec.clusterSelectors[0]", "chain": []any{"central"}, "replicationWait": "0s",
				"reachability": []any{map[string]any{"registry": "central", "state": "Reachable", "probedAt": now}},
				"conditions":   []any{map[string]any{"type": "Ready", "status": "True", "reason": "Delivered", "message": "delivered", "lastTransitionTime": now}},
			},
		}
	})
}
