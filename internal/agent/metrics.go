package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// Metrics of `fleet-controller agent`, served on its /metrics endpoint with controller-runtime's.
var (
	// Pulls counts the states pulls reach: each pull counts once for every state it enters
	// (WaitingForArtifact, then Pulled, say), when the agent records it in the OCIPull's status.
	Pulls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleet_agent_pulls_total",
		Help: "Pulls of OCIPulls by the state they entered: Pulled, WaitingForArtifact or Failed.",
	}, []string{"state"})

	// PullAttempts counts the attempts at registries, by registry and failure class; the class
	// is empty for a successful attempt.
	PullAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleet_agent_pull_attempts_total",
		Help: "Attempts at a registry of a chain, by registry name and failure class (empty on success).",
	}, []string{"registry", "class"})

	// PullDuration is the duration of each attempt at a registry, downloads included.
	PullDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fleet_agent_pull_duration_seconds",
		Help:    "Duration of one attempt at a registry, downloads included.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16), // 10 ms … 5.5 min
	})

	// PulledBytes counts the bytes read from registries: manifests and blobs that were not in
	// the cache already.
	PulledBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleet_agent_pulled_bytes_total",
		Help: "Bytes of manifests and blobs downloaded from registries; content already cached is not downloaded.",
	})

	// CacheBytes and CacheArtifacts are the size of the agent's OCI cache: the bytes of its
	// blobs and the artifacts (manifests) of its index.
	CacheBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleet_agent_cache_bytes",
		Help: "Bytes of the blobs in the agent's OCI cache (--cache-dir).",
	})
	CacheArtifacts = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleet_agent_cache_artifacts",
		Help: "Artifacts (manifests of the index) in the agent's OCI cache.",
	})
	// CacheEvictions counts the artifacts garbage collection removed to keep the cache under
	// --cache-max-bytes.
	CacheEvictions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleet_agent_cache_evictions_total",
		Help: "Artifacts removed from the OCI cache by garbage collection (no OCIPull or FleetRelease referenced them).",
	})

	// ReleaseAttempts counts the Helm installs and upgrades the agent ran, by result (deployed
	// or failed): a failing release's attempts follow its back-off.
	ReleaseAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleet_agent_release_attempts_total",
		Help: "Helm installs and upgrades of FleetReleases, by result: deployed or failed.",
	}, []string{"result"})

	// ReleaseRecoveries counts the releases an interrupted operation left pending that the agent
	// recovered, by the pending status and what it did: rolled-back, uninstalled or failed.
	ReleaseRecoveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleet_agent_release_recoveries_total",
		Help: "Releases left pending by an interrupted Helm operation that the agent recovered, by pending status and action (rolled-back, uninstalled, failed).",
	}, []string{"status", "action"})
)

func init() {
	metrics.Registry.MustRegister(Pulls, PullAttempts, PullDuration, PulledBytes, CacheBytes, CacheArtifacts, CacheEvictions, ReleaseAttempts, ReleaseRecoveries)
}

// observeAttempt records one attempt of the puller.
func observeAttempt(a puller.Attempt) {
	PullAttempts.WithLabelValues(a.Registry, string(a.Class)).Inc()
	PullDuration.Observe(a.End.Sub(a.Start).Seconds())
}
