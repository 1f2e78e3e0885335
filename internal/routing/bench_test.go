package routing_test

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

const (
	benchClusters = 100_000
	benchSites    = 5_000
	benchGroups   = 300
)

// benchInventory builds a deterministic fleet: clusters with eight labels (one in twenty has a
// ninth, gpu) in one or two cluster groups, and 1000 routes as a platform team would write
// them: per-cluster and per-group overrides, one route per site for 700 sites, region/tier and
// region/env routes, hardware routes, a few negative catch-alls and a default, specific before
// general.
func benchInventory() ([]routing.Route, []routing.Cluster) {
	rng := rand.New(rand.NewPCG(1, 2))
	regions := make([]string, 12)
	for i := range regions {
		regions[i] = fmt.Sprintf("region-%02d", i)
	}
	tiers := []string{"edge", "edge", "store", "core"}
	envs := []string{"prod", "prod", "staging", "dev"}
	hws := []string{"x86-small", "x86-large", "arm-small", "arm-large", "gpu-node", "appliance"}
	oses := []string{"sle-micro", "ubuntu", "rhel"}

	clusters := make([]routing.Cluster, benchClusters)
	for i := range clusters {
		site := rng.IntN(benchSites)
		region := regions[site%len(regions)]
		labels := map[string]string{
			"region": region,
			"zone":   region + "-" + string(rune('a'+rng.IntN(3))),
			"site":   fmt.Sprintf("site-%04d", site),
			"tier":   tiers[rng.IntN(len(tiers))],
			"env":    envs[rng.IntN(len(envs))],
			"hw":     hws[rng.IntN(len(hws))],
			"os":     oses[rng.IntN(len(oses))],
			"rack":   fmt.Sprintf("rack-%02d", rng.IntN(40)),
		}
		if rng.IntN(20) == 0 {
			labels["gpu"] = "a100"
		}
		groups := []string{fmt.Sprintf("set-%03d", rng.IntN(benchGroups))}
		if rng.IntN(5) == 0 {
			groups = append(groups, fmt.Sprintf("set-%03d", rng.IntN(benchGroups)))
		}
		clusters[i] = routing.Cluster{Name: fmt.Sprintf("cluster-%06d", i), Labels: labels, Groups: groups}
	}

	var routes []routing.Route
	var category []string
	kind := ""
	add := func(r routing.Route) {
		category = append(category, kind)
		r.Name = fmt.Sprintf("route-%04d", len(routes))
		r.Registries = []string{"harbor-" + r.Name, "harbor-central"}
		routes = append(routes, r)
	}
	kind = "names"
	for range 40 {
		var names []string
		for range 5 {
			names = append(names, clusters[rng.IntN(len(clusters))].Name)
		}
		add(routing.Route{ClusterNames: slices.Compact(slices.Sorted(slices.Values(names)))})
	}
	kind = "groups"
	for range 30 {
		var groups []string
		for range 1 + rng.IntN(3) {
			groups = append(groups, fmt.Sprintf("set-%03d", rng.IntN(benchGroups)))
		}
		add(routing.Route{ClusterGroups: slices.Compact(slices.Sorted(slices.Values(groups)))})
	}
	kind = "site"
	for _, site := range rng.Perm(benchSites)[:700] {
		add(routing.Route{ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"site": fmt.Sprintf("site-%04d", site)}}}})
	}
	kind = "region-tier"
	for i := range 120 {
		r, t := regions[i%len(regions)], tiers[rng.IntN(len(tiers))]
		if i%2 == 0 {
			add(routing.Route{ClusterSelectors: []routing.Selector{{MatchLabels: map[string]string{"region": r, "tier": t}}}})
			continue
		}
		add(routing.Route{ClusterSelectors: []routing.Selector{{MatchExpressions: []routing.Requirement{
			{Key: "region", Operator: routing.In, Values: []string{r, regions[rng.IntN(len(regions))]}},
			{Key: "tier", Operator: routing.In, Values: []string{t}},
			{Key: "os", Operator: routing.NotIn, Values: []string{oses[rng.IntN(len(oses))]}},
		}}}})
	}
	kind = "region-env"
	for i := range 60 {
		add(routing.Route{ClusterSelectors: []routing.Selector{{
			MatchLabels:      map[string]string{"region": regions[i%len(regions)]},
			MatchExpressions: []routing.Requirement{{Key: "env", Operator: routing.NotIn, Values: []string{envs[rng.IntN(len(envs))]}}},
		}}})
	}
	kind = "hardware"
	for i := range 40 {
		s := routing.Selector{MatchExpressions: []routing.Requirement{{Key: "hw", Operator: routing.In, Values: []string{hws[i%len(hws)], hws[rng.IntN(len(hws))]}}}}
		if i%2 == 0 {
			s.MatchExpressions = append(s.MatchExpressions, routing.Requirement{Key: "gpu", Operator: routing.Exists})
		}
		add(routing.Route{ClusterSelectors: []routing.Selector{s, {MatchLabels: map[string]string{"rack": fmt.Sprintf("rack-%02d", rng.IntN(40))}}}})
	}
	kind = "negative"
	for i := range 9 {
		add(routing.Route{ClusterSelectors: []routing.Selector{{MatchExpressions: []routing.Requirement{
			{Key: "env", Operator: routing.NotIn, Values: []string{envs[i%len(envs)]}},
			{Key: "gpu", Operator: routing.DoesNotExist},
		}}}})
	}
	kind = "default"
	add(routing.Route{Default: true})

	// Priorities go category by category, in the order added, shuffled within each category.
	for lo := 0; lo < len(routes); {
		hi := lo + 1
		for hi < len(routes) && category[hi] == category[lo] {
			hi++
		}
		for pos, i := range rng.Perm(hi - lo) {
			routes[lo+i].Priority = int64(10 * (lo + pos + 1))
		}
		lo = hi
	}
	return routes, clusters
}

type benchFigures struct {
	ours, reference, bare float64 // ns per cluster
}

var (
	benchOnce   sync.Once
	benchRouter *routing.Router
	benchFleet  []routing.Cluster
	benchResult benchFigures
	benchSink   uint64 // keeps the bare pass from being optimized away
)

// BenchmarkResolve measures, in one run and on one inventory, our resolver, the Fleet-style
// reference loop and a bare pass over every label of every cluster, checks that the two
// resolvers agree on every cluster, and prints the ratios and our allocations per cluster. The
// bare pass reads every label once and hashes its key and value, as a resolver looking labels up
// in an index at least must; it reads neither names nor groups, which ours does. The figures do
// not depend on b.N; each b.N iteration resolves the whole inventory once more.
func BenchmarkResolve(b *testing.B) {
	benchOnce.Do(func() {
		routes, clusters := benchInventory()
		router, err := routing.Compile(routes)
		if err != nil {
			b.Fatal(err)
		}
		ref := newReference(b, routes)
		benchRouter, benchFleet = router, clusters
		ours := make([]routing.Resolution, len(clusters))
		theirs := make([]routing.Resolution, len(clusters))

		var h uint64
		seed := maphash.MakeSeed()
		// Ours and the bare pass alternate, so that load from other processes hits both alike.
		oursNs, bareNs := fastest(15, len(clusters), func(lo, hi int) {
			for i, c := range clusters[lo:hi] {
				ours[lo+i] = router.Resolve(c)
			}
		}, func(lo, hi int) {
			for _, c := range clusters[lo:hi] {
				for k, v := range c.Labels {
					h += maphash.String(seed, k) ^ maphash.String(seed, v)
				}
			}
		})
		refNs, _ := fastest(1, len(clusters), func(lo, hi int) {
			for i, c := range clusters[lo:hi] {
				theirs[lo+i] = ref.resolve(c)
			}
		}, func(int, int) {})
		for i := range clusters {
			if !sameResolution(ours[i], theirs[i]) {
				b.Fatalf("cluster %s: ours %+v, reference %+v", clusters[i].Name, ours[i], theirs[i])
			}
		}
		allocs := testing.AllocsPerRun(10, func() { // per cluster, on every 100th
			for i := 0; i < len(clusters); i += 100 {
				router.Resolve(clusters[i])
			}
		}) / float64((len(clusters)+99)/100)
		benchResult = benchFigures{ours: oursNs, reference: refNs, bare: bareNs}
		benchSink = h
		fmt.Printf("ns/cluster for %d clusters x %d routes: ours=%.0f reference=%.0f bare_pass=%.0f\n",
			len(clusters), len(routes), oursNs, refNs, bareNs)
		fmt.Printf("routing: speedup_vs_reference=%.1f bare_pass_ratio=%.2f allocs_per_cluster=%.2f\n", refNs/oursNs, oursNs/bareNs, allocs)
	})
	b.ResetTimer()
	for range b.N {
		for _, c := range benchFleet {
			benchRouter.Resolve(c)
		}
	}
	b.ReportMetric(benchResult.ours, "ours-ns/cluster")
	b.ReportMetric(benchResult.reference, "reference-ns/cluster")
	b.ReportMetric(benchResult.bare, "bare-ns/cluster")
}

// fastest runs a and b alternately over every cluster, runs times each, and returns the cost
// of each in ns per cluster. A pass is timed by the CPU time of its thread, not the wall clock,
// so that a loaded machine (several engineers on two cores) stretches neither figure by its
// waits; and it is timed block by block, each block's cost being its fastest run, so that
// a pass need not run undisturbed from end to end for its figure to be the undisturbed one. A
// block is small enough to fit in a scheduler's time slice and large enough that its clusters
// are cold in the cache again by its next run, for a and b alike.
func fastest(runs, clusters int, a, b func(lo, hi int)) (float64, float64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			panic(err)
		}
		return time.Duration(ts.Nano())
	}
	const block = 2000
	blocks := (clusters + block - 1) / block
	bestA, bestB := make([]time.Duration, blocks), make([]time.Duration, blocks)
	for i := range blocks {
		bestA[i], bestB[i] = 1<<63-1, 1<<63-1
	}
	timed := func(pass func(lo, hi int), best []time.Duration) {
		runtime.GC()
		for i := range blocks {
			lo := i * block
			start := cpu()
			pass(lo, min(lo+block, clusters))
			best[i] = min(best[i], cpu()-start)
		}
	}
	for range runs {
		timed(a, bestA)
		timed(b, bestB)
	}
	perCluster := func(best []time.Duration) float64 {
		var sum time.Duration
		for _, d := range best {
			sum += d
		}
		return float64(sum.Nanoseconds()) / float64(clusters)
	}
	return perCluster(bestA), perCluster(bestB)
}
