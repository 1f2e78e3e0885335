package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// Metrics of the connectivity probe, served on the agent's /metrics endpoint beside the pulls'.
var (
	// Probes counts the probes of registries by result: Reachable, or the failure class the
	// RegistryProbe's status records (Unreachable, Unauthorized, TLS, …). The registry is not
	// a label: the status names it, and a fleet's registries would multiply the series.
	Probes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleet_agent_probes_total",
		Help: "Probes of registries (GET /v2/), by result: Reachable or the failure class (Unreachable, Unauthorized, TLS, ...).",
	}, []string{"result"})

	// ProbeDuration is the duration of each probe of one registry, --probe-timeout included.
	ProbeDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fleet_agent_probe_duration_seconds",
		Help:    "Duration of one probe of one registry (GET /v2/ and its authentication), bounded by --probe-timeout.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms … 41 s
	})
)

func init() {
	metrics.Registry.MustRegister(Probes, ProbeDuration)
}

// probeResult is the state a probe's result records: Reachable or its failure class.
func probeResult(res puller.ProbeResult) string {
	if res.Class == "" {
		return v1alpha1.Reachable
	}
	return string(res.Class)
}

// observeProbe records one probe that took d.
func observeProbe(res puller.ProbeResult, d time.Duration) {
	Probes.WithLabelValues(probeResult(res)).Inc()
	ProbeDuration.Observe(d.Seconds())
}
