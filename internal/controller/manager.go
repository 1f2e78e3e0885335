package controller

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/umkim/terraform-provider-fleet/internal/manager"
)

// HubOptions are the settings of `fleet-controller hub`, bound to its flags by BindFlags.
type HubOptions struct {
	Manager manager.Options
	// SyncPeriod is how often informers resync, reconciling every workspace; 0 means 10 h.
	SyncPeriod  time.Duration
	Controllers string // comma-separated names of Reconcilers
	QPS         float64
	Burst       int
	Options
}

// The hub's write concurrency and client rate limits, sized from the write ceiling the
// controller benchmark measures (plain clients writing the controller's objects, the best of
// 16, 64 and 256 in flight). An idle local apiserver takes some 450 writes a second, which 50
// queries a second (client-go's habit) would cap at a ninth; plain writers are fastest at 64 in
// flight, and the routing reconciler keeps as many (its own writes not yet in its cache cost no
// extra write: kube.Expectations). Its workers share that bound: RoutingWorkers workspaces are
// reconciled at once, so that one large workspace's writes do not hold up the others' planning.
const (
	DefaultMaxConcurrentWrites = 64
	RoutingWorkers             = 4
	DefaultQPS                 = 500
	DefaultBurst               = 1000
)

// HubGCPercent is the collector's GOGC in `fleet-controller hub` (an operator's GOGC wins). Its
// heap is mostly the informers' cache, live for the process's life, so Go's default of 100,
// which lets the heap grow to twice what is live between collections, doubles its memory for
// little: at the API server's write ceiling the controller uses a quarter of a core, and
// collecting twice as often costs it less than it saves the node.
const HubGCPercent = 50

// DefaultLeaderElectionID is the name of the Lease the hub controllers elect a leader with.
const DefaultLeaderElectionID = "fleet-controller-hub.fleet.umkim.io"

// BindFlags registers the options' flags on fs, with their defaults.
func (o *HubOptions) BindFlags(fs *flag.FlagSet) {
	o.Manager.BindFlags(fs, DefaultLeaderElectionID)
	fs.StringVar(&o.Controllers, "controllers", strings.Join(sortedKeys(Reconcilers), ","), "comma-separated `list` of the reconcilers to run, of: "+strings.Join(sortedKeys(Reconcilers), ", "))
	fs.DurationVar(&o.SyncPeriod, "sync-period", 10*time.Hour, "how often every workspace is reconciled even without a change")
	fs.IntVar(&o.MaxConcurrentWrites, "max-concurrent-writes", DefaultMaxConcurrentWrites, "writes the routing reconciler may have in flight, all workspaces together")
	fs.StringVar(&o.GatewayNamespace, "gateway-namespace", DefaultGatewayNamespace, "`namespace` of the hub gateway's ConfigMaps (Traefik fragments of the hub-mode app routes): the controller's own, which tenants cannot write")
	fs.DurationVar(&o.OrphanAfter, "orphan-after", DefaultOrphanAfter, "how long a deleted app or storage deployment waits for its work on a cluster that is not available before it goes without it")
	fs.DurationVar(&o.ReplicationWindow, "replication-window", 24*time.Hour, "how far back the replication reconciler counts pushed artifacts in each registry's lag figures (OCIReplication)")
	fs.Float64Var(&o.QPS, "kube-api-qps", DefaultQPS, "queries per second to the hub's API server")
	fs.IntVar(&o.Burst, "kube-api-burst", DefaultBurst, "burst of queries to the hub's API server")
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
	cacheOpts := CacheOptions()
	if o.SyncPeriod > 0 {
		cacheOpts.SyncPeriod = &o.SyncPeriod
	}
	mgr, err := manager.New(cfg, o.Manager, "fleet-controller-hub", Scheme(), cacheOpts)
	if err != nil {
		return nil, err
	}
	if err := Setup(mgr, names, o.Options); err != nil {
		return nil, err
	}
	return mgr, nil
}
