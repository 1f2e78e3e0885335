package agent

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// Options are the settings of `fleet-controller agent`, bound to its flags by BindFlags.
type Options struct {
	Manager manager.Options
	// CacheDir is the directory of the OCI image layout every pull writes.
	CacheDir string
	// CacheMaxBytes is the size garbage collection keeps the cache under, removing the
	// artifacts no OCIPull or FleetRelease references, least recently used first; 0 means no
	// bound. BindFlags defaults it to DefaultCacheMaxBytes.
	CacheMaxBytes int64
	// CacheMinAge is how long after its last use an unreferenced artifact is kept anyway; 0
	// means DefaultCacheMinAge. Tests shorten it.
	CacheMinAge time.Duration
	// AttemptTimeout bounds one attempt at a registry, downloads included.
	AttemptTimeout time.Duration
	// IdleTimeout bounds each pause in what a registry sends, within an attempt.
	IdleTimeout time.Duration
	// RetryFailed is how long after every registry of a chain failed a pull starts over the first
	// time; the wait doubles per failure, with jitter, up to RetryFailedMax.
	RetryFailed, RetryFailedMax time.Duration
	// ParallelPulls is how many pulls run at once; 0 means DefaultParallelPulls.
	ParallelPulls int
	// ProgressInterval is how often a running pull's status is updated; 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// UserAgent is sent to registries; empty means the puller's.
	UserAgent string
	// Backoff spaces the attempts at a registry that lacks an artifact; zero is the puller's.
	Backoff puller.Backoff
	// Namespace is the agent's namespace: the only one whose OCIPulls, FleetReleases and
	// Secrets it reads, and where the workspaces' ServiceAccounts live; empty means
	// ocichain.Namespace, where the hub's ManifestWorks put them.
	Namespace string
	// WorkspaceRole is the ClusterRole bound to each workspace's ServiceAccount in the
	// namespaces of its releases; empty means DefaultWorkspaceRole.
	WorkspaceRole string
	// ReleaseBackoff spaces the attempts at a release that keeps failing; zero fields are
	// DefaultReleaseBackoffInitial and DefaultReleaseBackoffMax.
	ReleaseBackoff puller.Backoff
	// fixedRetry runs the release reconciler as before back-off (WithFixedRetry: the
	// baseline of internal/e2e's BenchmarkFaultsFailingReleases).
	fixedRetry bool
	// releaseClient, when set, wraps the release reconciler's client (a test's lagging cache).
	releaseClient func(client.Client) client.Client
	// DriftInterval is how often each deployed release is compared with the cluster's objects
	// (with up to 10% jitter); 0 turns drift checks off. BindFlags defaults it to
	// DefaultDriftInterval.
	DriftInterval time.Duration
	// ProbeInterval is how often every registry of every delivered chain is probed (GET /v2/,
	// with up to ±10% jitter); 0 turns probes off. BindFlags defaults it to DefaultProbeInterval.
	ProbeInterval time.Duration
	// ProbeRefresh bounds how old a probe's probedAt grows while no result changes; 0 means
	// DefaultProbeRefresh.
	ProbeRefresh time.Duration
	// ProbeConcurrency is how many registries of one chain are probed at once; 0 means
	// DefaultParallelProbes.
	ProbeConcurrency int
	// ProbeTimeout bounds one probe of one registry; 0 means puller.DefaultProbeTimeout.
	ProbeTimeout time.Duration
}

// DefaultLeaderElectionID is the name of the Lease agents of one cluster elect a leader with.
const DefaultLeaderElectionID = "fleet-controller-agent.fleet.umkim.io"

// DefaultCacheDir is where the agent keeps pulled artifacts by default.
const DefaultCacheDir = "/var/cache/fleet-controller/oci"

// BindFlags registers the options' flags on fs, with their defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.Manager.BindFlags(fs, DefaultLeaderElectionID)
	fs.StringVar(&o.CacheDir, "cache-dir", DefaultCacheDir, "`directory` of the OCI image layout that holds every pulled artifact, content-addressed")
	fs.Int64Var(&o.CacheMaxBytes, "cache-max-bytes", DefaultCacheMaxBytes, "`bytes` the cache is kept under: past them, the artifacts that no OCIPull or FleetRelease of the cluster references are removed, least recently used first (referenced ones never are); 0 for no bound")
	fs.DurationVar(&o.AttemptTimeout, "attempt-timeout", puller.DefaultAttemptTimeout, "how long one attempt at a registry, downloads included, may take; negative for no limit")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", puller.DefaultIdleTimeout, "how long a registry may send nothing, while a response or the rest of a download is awaited, before that registry counts as failed (Unreachable, stalled) and the pull moves to the next; negative for no limit")
	fs.DurationVar(&o.RetryFailed, "retry-failed", DefaultRetryFailed, "how long after every registry of a chain failed a pull starts over the first time; the wait doubles per failure, with jitter, up to --retry-failed-max")
	fs.DurationVar(&o.RetryFailedMax, "retry-failed-max", DefaultRetryFailedMax, "longest wait before a pull that keeps failing at every registry starts over")
	fs.IntVar(&o.ParallelPulls, "parallel-pulls", DefaultParallelPulls, "how many artifacts are pulled at once, so that one slow artifact or registry does not hold back the others")
	fs.DurationVar(&o.ProgressInterval, "progress-interval", DefaultProgressInterval, "how often a running pull's status is updated with its registry and bytes")
	fs.DurationVar(&o.Backoff.Initial, "backoff-initial", puller.DefaultBackoffInitial, "first delay before asking again a registry that lacks an artifact (replication behind); doubles per attempt, with jitter")
	fs.StringVar(&o.Namespace, "namespace", ocichain.Namespace, "the agent's `namespace`: the only one whose OCIPulls, FleetReleases and Secrets it reads (the hub's ManifestWorks put them in "+ocichain.Namespace+"), and where it creates each workspace's ServiceAccount")
	fs.StringVar(&o.WorkspaceRole, "workspace-role", DefaultWorkspaceRole, "the `ClusterRole` bound to each workspace's ServiceAccount, which Helm acts as, in the namespaces of its releases")
	fs.DurationVar(&o.DriftInterval, "drift-interval", DefaultDriftInterval, "how often each deployed Helm release is compared with the cluster's objects, to report the ones changed or deleted there (drift), with up to 10% jitter; 0 turns drift checks off, else at least 1s")
	fs.DurationVar(&o.ProbeInterval, "probe-interval", DefaultProbeInterval, "how often the agent probes every registry of every delivered chain (GET /v2/ with its credentials and TLS settings), with up to ±10% jitter; results are written when they change and at least every --probe-refresh; 0 turns probes off")
	fs.DurationVar(&o.ProbeRefresh, "probe-refresh", DefaultProbeRefresh, "how old a probe's probedAt may grow while no registry's result changes before it is written again")
	fs.IntVar(&o.ProbeConcurrency, "probe-concurrency", DefaultParallelProbes, "how many registries of one chain are probed at once, so that registries that do not answer hold back the others' probes by no more than --probe-timeout")
	fs.DurationVar(&o.ProbeTimeout, "probe-timeout", puller.DefaultProbeTimeout, "how long one probe of one registry may take before the registry counts as Unreachable")
	fs.DurationVar(&o.Backoff.Max, "backoff-max", puller.DefaultBackoffMax, "longest delay between attempts at a registry that lacks an artifact")
	fs.DurationVar(&o.ReleaseBackoff.Initial, "release-backoff-initial", DefaultReleaseBackoffInitial, "first delay before a failed Helm release is tried again; doubles per failure of the same generation, chart and values, with jitter")
	fs.DurationVar(&o.ReleaseBackoff.Max, "release-backoff-max", DefaultReleaseBackoffMax, "longest delay between attempts at a Helm release that keeps failing")
}

// ShutdownTimeout bounds the agent's stop on SIGTERM: the running Helm operations are cancelled
// (Helm records them failed) and their operation Leases deleted within it. The chart's
// terminationGracePeriodSeconds (10 s) is longer.
const ShutdownTimeout = 8 * time.Second

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

// CacheOptions narrow the manager's cache to the agent's namespace: OCIPulls, FleetReleases and
// Secrets elsewhere are neither watched nor acted on, and the agent's Role grants only that
// namespace.
func CacheOptions(namespace string) cache.Options {
	return cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}}
}

// NewManager builds the manager of `fleet-controller agent` against a workload cluster: it pulls
// OCIPulls' artifacts and installs FleetReleases' charts from them.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.CacheDir == "" {
		return nil, errors.New("--cache-dir is empty; give the directory to keep pulled artifacts in")
	}
	if o.CacheMaxBytes < 0 {
		return nil, fmt.Errorf("--cache-max-bytes %d: give 0 (no bound) or a size in bytes", o.CacheMaxBytes)
	}
	if o.ParallelPulls < 0 {
		return nil, fmt.Errorf("--parallel-pulls %d: give 1 or more", o.ParallelPulls)
	}
	if o.ProbeConcurrency < 0 {
		return nil, fmt.Errorf("--probe-concurrency %d: give 1 or more", o.ProbeConcurrency)
	}
	if o.ProbeInterval < 0 || o.ProbeRefresh < 0 {
		return nil, fmt.Errorf("--probe-interval %s, --probe-refresh %s: give 0 (probes off; refresh: the default) or a positive duration", o.ProbeInterval, o.ProbeRefresh)
	}
	if o.DriftInterval < 0 || o.DriftInterval > 0 && o.DriftInterval < MinDriftInterval {
		return nil, fmt.Errorf("--drift-interval %s: give 0 (no drift checks) or at least %s", o.DriftInterval, MinDriftInterval)
	}
	ns := cmp.Or(o.Namespace, ocichain.Namespace)
	mopts := o.Manager
	mopts.ShutdownTimeout = cmp.Or(mopts.ShutdownTimeout, ShutdownTimeout)
	mgr, err := manager.New(cfg, mopts, "fleet-controller-agent", Scheme(), CacheOptions(ns))
	if err != nil {
		return nil, err
	}
	// Opened once, by the leader: pulls share its index in memory; opening repairs what a crash left.
	oci := NewLeaderCache(o.CacheDir)
	if err := mgr.Add(&cacheCollector{Reader: mgr.GetClient(), Namespace: ns, Cache: oci, MaxBytes: o.CacheMaxBytes, MinAge: cmp.Or(o.CacheMinAge, DefaultCacheMinAge)}); err != nil {
		return nil, err
	}
	r := &OCIPullReconciler{
		Client: mgr.GetClient(), Namespace: ns, Cache: oci, AttemptTimeout: o.AttemptTimeout, IdleTimeout: o.IdleTimeout,
		RetryFailed: o.RetryFailed, RetryFailedMax: o.RetryFailedMax, Parallel: o.ParallelPulls, ProgressInterval: o.ProgressInterval,
		UserAgent: o.UserAgent, Backoff: o.Backoff,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// Values Secrets live in the agent's namespace beside the chain Secrets, which the cache covers.
	releases := &FleetReleaseReconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Config: mgr.GetConfig(), Namespace: ns,
		WorkspaceRole: o.WorkspaceRole, Cache: oci, DriftInterval: o.DriftInterval,
		Backoff: o.ReleaseBackoff, fixedRetry: o.fixedRetry,
	}
	if o.releaseClient != nil {
		releases.Client = o.releaseClient(releases.Client)
	}
	if err := releases.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if o.ProbeInterval > 0 {
		probes := &RegistryProbeReconciler{
			Client: mgr.GetClient(), Namespace: ns, Interval: o.ProbeInterval, Refresh: o.ProbeRefresh, Timeout: o.ProbeTimeout,
			IdleTimeout: o.IdleTimeout, UserAgent: o.UserAgent, Parallel: o.ProbeConcurrency,
		}
		if err := probes.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}
