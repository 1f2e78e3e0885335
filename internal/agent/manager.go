package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// Options are the settings of `fleet-controller agent`, bound to its flags by BindFlags.
type Options struct {
	MetricsAddr, ProbeAddr string
	LeaderElect            bool
	LeaderElectionID       string
	LeaderElectionNS       string
	// CacheDir is the directory of the OCI image layout every pull writes.
	CacheDir string
	// AttemptTimeout bounds one attempt at a registry, downloads included.
	AttemptTimeout time.Duration
	// RetryFailed is how long after every registry of a chain failed a pull starts over.
	RetryFailed time.Duration
	// UserAgent is sent to registries; empty means the puller's.
	UserAgent string
	// Backoff spaces the attempts at a registry that lacks an artifact; zero is the puller's.
	Backoff puller.Backoff
}

// DefaultLeaderElectionID is the name of the Lease agents of one cluster elect a leader with.
const DefaultLeaderElectionID = "fleet-controller-agent.fleet.umkim.io"

// DefaultCacheDir is where the agent keeps pulled artifacts by default.
const DefaultCacheDir = "/var/cache/fleet-controller/oci"

// BindFlags registers the options' flags on fs, with their defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "`address` the Prometheus /metrics endpoint binds to; 0 disables it")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "`address` the /healthz and /readyz probes bind to")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader with a Lease, so that of several replicas one is active")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", DefaultLeaderElectionID, "`name` of the leader-election Lease")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "`namespace` of the leader-election Lease; defaults to the pod's namespace in a cluster")
	fs.StringVar(&o.CacheDir, "cache-dir", DefaultCacheDir, "`directory` of the OCI image layout that holds every pulled artifact, content-addressed")
	fs.DurationVar(&o.AttemptTimeout, "attempt-timeout", puller.DefaultAttemptTimeout, "how long one attempt at a registry, downloads included, may take; negative for no limit")
	fs.DurationVar(&o.RetryFailed, "retry-failed", DefaultRetryFailed, "how long after every registry of a chain failed a pull starts over")
}

// Scheme holds every kind the agent reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registrations
		}
	}
	return s
}

// CacheOptions narrow the manager's cache of Secrets to the chain namespace, fleet-system: the
// agent neither caches nor can read other Secrets through it.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{ocichain.Namespace: {}}},
	}}
}

// NewManager builds the manager of `fleet-controller agent` against a workload cluster.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.CacheDir == "" {
		return nil, errors.New("--cache-dir is empty; give the directory to keep pulled artifacts in")
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "fleet-controller-agent"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        Scheme(),
		Cache:                         CacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		// Tests run several managers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	r := &OCIPullReconciler{
		Client: mgr.GetClient(), CacheDir: o.CacheDir, AttemptTimeout: o.AttemptTimeout,
		RetryFailed: o.RetryFailed, UserAgent: o.UserAgent, Backoff: o.Backoff,
	}
	if err := r.SetupWithManager(mgr); err != nil {
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
