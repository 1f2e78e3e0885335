package controller

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// HubOptions are the settings of `fleet-controller hub`, bound to its flags by BindFlags.
type HubOptions struct {
	MetricsAddr, ProbeAddr string
	LeaderElect            bool
	LeaderElectionID       string
	LeaderElectionNS       string
	// Lease timing; zero LeaseDuration takes controller-runtime's defaults (15 s, 10 s, 2 s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// SyncPeriod is how often informers resync, reconciling every workspace; 0 means 10 h.
	SyncPeriod  time.Duration
	Controllers string // comma-separated names of Reconcilers
	QPS         float64
	Burst       int
	Options
}

// DefaultLeaderElectionID is the name of the Lease the hub controllers elect a leader with.
const DefaultLeaderElectionID = "fleet-controller-hub.fleet.umkim.io"

// BindFlags registers the options' flags on fs, with their defaults.
func (o *HubOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "`address` the Prometheus /metrics endpoint binds to; 0 disables it")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "`address` the /healthz and /readyz probes bind to")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader with a Lease, so that of several replicas one is active")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", DefaultLeaderElectionID, "`name` of the leader-election Lease")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "`namespace` of the leader-election Lease; defaults to the pod's namespace in a cluster")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long standby replicas wait before taking over a leader that stopped renewing")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often replicas try to acquire or renew the Lease")
	fs.StringVar(&o.Controllers, "controllers", strings.Join(sortedKeys(Reconcilers), ","), "comma-separated `list` of the reconcilers to run, of: "+strings.Join(sortedKeys(Reconcilers), ", "))
	fs.DurationVar(&o.SyncPeriod, "sync-period", 10*time.Hour, "how often every workspace is reconciled even without a change")
	fs.IntVar(&o.MaxConcurrentWrites, "max-concurrent-writes", 16, "writes one reconcile may have in flight")
	fs.Float64Var(&o.QPS, "kube-api-qps", 50, "queries per second to the hub's API server")
	fs.IntVar(&o.Burst, "kube-api-burst", 100, "burst of queries to the hub's API server")
}

// ControllerNames returns the reconcilers --controllers enables.
func (o *HubOptions) ControllerNames() []string {
	var names []string
	for _, n := range strings.Split(o.Controllers, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// NewHubManager builds the manager of `fleet-controller hub` with the reconcilers o enables.
func NewHubManager(cfg *rest.Config, o HubOptions) (ctrl.Manager, error) {
	names := o.ControllerNames()
	if len(names) == 0 {
		return nil, fmt.Errorf("--controllers enables no reconciler; give one or more of: %s", strings.Join(sortedKeys(Reconcilers), ", "))
	}
	cfg = rest.CopyConfig(cfg)
	if o.QPS > 0 {
		cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	}
	cfg.UserAgent = "fleet-controller-hub"
	cacheOpts := CacheOptions()
	if o.SyncPeriod > 0 {
		cacheOpts.SyncPeriod = &o.SyncPeriod
	}
	mopts := ctrl.Options{
		Scheme:                        Scheme(),
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		// Tests and the benchmark run several managers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if o.LeaseDuration > 0 {
		mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, err
	}
	if err := Setup(mgr, names, o.Options); err != nil {
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
