package agent

import (
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"

	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// TestProbeConcurrencyAndMetrics probes a chain of three registries that each hold GET /v2/ for
// 300 ms and one whose port refuses connections, with Parallel (--probe-concurrency) 1, 2 and 0
// (the default, 4): no more probes than Parallel are in flight at the registries, and each probe
// counts once in fleet_agent_probes_total by its result and once in the duration histogram.
func TestProbeConcurrencyAndMetrics(t *testing.T) {
	var inFlight, peak atomic.Int32
	var slow []puller.Registry
	for i := range 3 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v2/" {
				http.NotFound(w, r)
				return
			}
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(300 * time.Millisecond)
			inFlight.Add(-1)
			w.WriteHeader(http.StatusOK)
		}))
		t.Cleanup(srv.Close)
		slow = append(slow, puller.Registry{Name: "up-" + string(rune('a'+i)), Reference: strings.TrimPrefix(srv.URL, "http://"), BasicHTTP: true})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	_ = l.Close()
	chain := ocichain.Chain{Registries: append(slow, puller.Registry{Name: "down", Reference: refused, BasicHTTP: true})}

	for _, tc := range []struct{ parallel, wantPeak int }{{1, 1}, {2, 2}, {0, 3}} {
		peak.Store(0)
		reachable, unreachable := probeCount(t, "Reachable"), probeCount(t, "Unreachable")
		observed := probeSamples(t)
		r := &RegistryProbeReconciler{Parallel: tc.parallel, Timeout: 5 * time.Second}
		start := time.Now()
		results, err := r.probeChain(t.Context(), chain)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, res := range results {
			got = append(got, res.Registry+"="+probeResult(res))
		}
		if strings.Join(got, ",") != "up-a=Reachable,up-b=Reachable,up-c=Reachable,down=Unreachable" {
			t.Fatalf("parallel %d: results %v", tc.parallel, got)
		}
		if p := int(peak.Load()); p != tc.wantPeak {
			t.Errorf("parallel %d: %d probes in flight at once, want %d", tc.parallel, p, tc.wantPeak)
		}
		if d := probeCount(t, "Reachable") - reachable; d != 3 {
			t.Errorf("parallel %d: fleet_agent_probes_total{result=Reachable} rose by %v, want 3", tc.parallel, d)
		}
		if d := probeCount(t, "Unreachable") - unreachable; d != 1 {
			t.Errorf("parallel %d: fleet_agent_probes_total{result=Unreachable} rose by %v, want 1", tc.parallel, d)
		}
		if d := probeSamples(t) - observed; d != 4 {
			t.Errorf("parallel %d: fleet_agent_probe_duration_seconds observed %d probes, want 4", tc.parallel, d)
		}
		t.Logf("parallel %d: chain of 4 probed in %s, peak %d in flight", tc.parallel, took.Round(10*time.Millisecond), peak.Load())
	}
}

// probeSamples is how many probes the duration histogram observed.
func probeSamples(t *testing.T) uint64 {
	t.Helper()
	var m dto.Metric
	if err := ProbeDuration.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// probeCount is fleet_agent_probes_total of result.
func probeCount(t *testing.T, result string) float64 {
	t.Helper()
	var m dto.Metric
	if err := Probes.WithLabelValues(result).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestProbeConcurrencyFlag: --probe-concurrency defaults to today's 4, is what the probe
// reconciler gets, and a negative value is refused naming the flag before anything starts.
func TestProbeConcurrencyFlag(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	o.BindFlags(fs)
	if o.ProbeConcurrency != DefaultParallelProbes || DefaultParallelProbes != 4 {
		t.Errorf("--probe-concurrency defaults to %d (DefaultParallelProbes %d), want 4", o.ProbeConcurrency, DefaultParallelProbes)
	}
	if err := fs.Parse([]string{"--probe-concurrency=9"}); err != nil || o.ProbeConcurrency != 9 {
		t.Errorf("--probe-concurrency=9 parsed to %d (%v)", o.ProbeConcurrency, err)
	}
	o.CacheDir, o.ProbeConcurrency = t.TempDir(), -1
	if _, err := NewManager(&rest.Config{}, o); err == nil || !strings.Contains(err.Error(), "--probe-concurrency -1: give 1 or more") {
		t.Errorf("--probe-concurrency=-1: %v, want it refused naming the flag", err)
	}
}
