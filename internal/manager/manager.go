// Package manager builds the controller-runtime managers of fleet-controller's modes (hub and
// agent) the same way: metrics and probe endpoints, leader election with a Lease, a readiness
// check that waits for the cache, the release of the binary's start-up pages (startupPages), and
// flags for all of it; and what the reconcilers of both modes share (PatchFinalizers).
package manager

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are what every mode's manager is configured with.
type Options struct {
	MetricsAddr, ProbeAddr string
	LeaderElect            bool
	LeaderElectionID       string
	LeaderElectionNS       string
	// Lease timing; a zero LeaseDuration takes controller-runtime's defaults (15 s, 10 s, 2 s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ShutdownTimeout bounds how long the manager waits for its reconcilers to return once
	// stopped; zero is controller-runtime's 30 s. Set by the mode, not by a flag.
	ShutdownTimeout time.Duration
}

// BindFlags registers the options' flags on fs; lease is the default name of the Lease.
func (o *Options) BindFlags(fs *flag.FlagSet, lease string) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "`address` the Prometheus /metrics endpoint binds to; 0 disables it")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "`address` the /healthz and /readyz probes bind to")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader with a Lease, so that of several replicas one is active")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", lease, "`name` of the leader-election Lease")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "`namespace` of the leader-election Lease; defaults to the pod's namespace in a cluster")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long standby replicas wait before taking over a leader that stopped renewing")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often replicas try to acquire or renew the Lease")
}

// New builds a manager that talks to cfg as userAgent, with scheme and cache options, the
// endpoints and leader election of o, and the health and readiness checks.
func New(cfg *rest.Config, o Options, userAgent string, scheme *runtime.Scheme, cacheOpts cache.Options) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	mopts := ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		// Tests and benchmarks run several managers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if o.ShutdownTimeout > 0 {
		mopts.GracefulShutdownTimeout = &o.ShutdownTimeout
	}
	if o.LeaseDuration > 0 {
		mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(startupPages{cache: mgr.GetCache()}); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("cache-synced", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("the cache has not synced yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}
