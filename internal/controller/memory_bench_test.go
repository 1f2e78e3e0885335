package controller_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
)

// benchMemoryLimit sets the collector as `fleet-controller hub` sets it in the chart's
// deployment: GOGC to controller.HubGCPercent and the soft limit to manager.SetMemoryLimit of the
// container's limits.memory (what the chart's FLEET_MEMORY_LIMIT carries), by default the chart's.
// FLEET_BENCH_MEMLIMIT, a quantity (e.g. 150Mi), is the limits.memory under test instead; 0 leaves
// the collector without a soft limit, to measure against. It returns the settings as the
// controller line prints them and what undoes them.
func benchMemoryLimit(b *testing.B) (string, func()) {
	gogc := fmt.Sprintf("gogc=%d", manager.SetGCPercent(controller.HubGCPercent))
	ungc := func() { manager.SetGCPercent(100) } // Go's default, when GOGC is not set
	env := os.Getenv("FLEET_BENCH_MEMLIMIT")
	if env == "0" {
		return "memory_limit=none " + gogc, ungc
	}
	var limit resource.Quantity
	if env != "" {
		q, err := resource.ParseQuantity(env)
		if err != nil || q.Sign() <= 0 {
			b.Fatalf("FLEET_BENCH_MEMLIMIT=%q: want the limits.memory under test, a quantity such as 150Mi, or 0 for no soft limit", env)
		}
		limit = q
	} else {
		raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "fleet-controller", "values.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		var values struct {
			Resources corev1.ResourceRequirements `json:"resources"`
		}
		if err := yaml.Unmarshal(raw, &values); err != nil {
			b.Fatal(err)
		}
		if values.Resources.Limits.Memory().IsZero() {
			b.Fatal("the chart's values.yaml sets no resources.limits.memory")
		}
		limit = *values.Resources.Limits.Memory()
	}
	prev := debug.SetMemoryLimit(-1)
	soft := manager.SetMemoryLimit(limit.Value())
	return fmt.Sprintf("memory_limit=%s soft_limit_mib=%.0f %s", limit.String(), float64(soft)/(1<<20), gogc), func() { debug.SetMemoryLimit(prev); ungc() }
}

// printMemory prints what the process's memory is made of now: resident anonymous and
// file-backed pages (the binary's), the Go heap's live and idle parts, the collections so far,
// the collector's soft limit and the machine's load.
func printMemory(b *testing.B, when string) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	kib := map[string]float64{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(v, "kB") {
			kib[k], _ = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 64)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	load, _ := os.ReadFile("/proc/loadavg")
	limit := "none"
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		limit = fmt.Sprintf("%.0f", float64(l)/(1<<20))
	}
	const mib = 1 << 20
	fmt.Printf("controller: memory %s: rss_mib=%.0f anon_mib=%.0f file_mib=%.0f heap_inuse_mib=%.0f heap_idle_mib=%.0f heap_released_mib=%.0f stacks_mib=%.0f gc_cycles=%d soft_limit_mib=%s load=%s\n",
		when, kib["VmRSS"]/1024, kib["RssAnon"]/1024, kib["RssFile"]/1024, float64(ms.HeapInuse)/mib, float64(ms.HeapIdle)/mib,
		float64(ms.HeapReleased)/mib, float64(ms.StackSys)/mib, ms.NumGC, limit, strings.Join(strings.Fields(string(load))[:3], ","))
}
