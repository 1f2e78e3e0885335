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
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/internal/manager"
)

// benchMemoryLimit sets the collector's soft limit the controller sets itself in the chart's
// default deployment: manager.SetMemoryLimit of the chart's default limits.memory (what its
// FLEET_MEMORY_LIMIT carries). FLEET_BENCH_MEMLIMIT=0 leaves the collector without one, to
// measure against. It returns the soft limit (0: none) and what undoes it.
func benchMemoryLimit(b *testing.B) (int64, func()) {
	if os.Getenv("FLEET_BENCH_MEMLIMIT") == "0" {
		return 0, func() {}
	}
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
	limit := values.Resources.Limits.Memory().Value()
	if limit == 0 {
		b.Fatal("the chart's values.yaml sets no resources.limits.memory")
	}
	prev := debug.SetMemoryLimit(-1)
	soft := manager.SetMemoryLimit(limit)
	return soft, func() { debug.SetMemoryLimit(prev) }
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
