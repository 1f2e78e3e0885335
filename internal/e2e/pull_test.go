package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// pullFleet is workload clusters (eu-01 alone unless pullFleetOptions name others), each with the
// real work agent and `fleet-controller agent` (in-process, on a cache folder of its own), the hub
// controller's routing and pull-status reconcilers (in-process), and real registries: the route
// "eu" of the workspace decides every cluster's chain, and each test changes its registries.
type pullFleet struct {
	t              testing.TB // the test the fleet and its agents live for, not a subtest
	ctx            context.Context
	hub            client.Client
	fleet          *testbed.Fleet
	source, mirror *testbed.Registry
	clusters       []string              // in the order of pullFleetOptions.clusters
	agents         map[string]*pullAgent // by cluster
	agentOptions   map[string][]func(*agent.Options)
	probe          probeOptions
}

// pullAgent is one workload cluster of a pullFleet: its admin client and its agent.
type pullAgent struct {
	cluster  string
	spoke    client.Client
	cacheDir string
	stop     func() // stops the agent; startAgent runs it again
}

// pullFleetOptions shape startPullFleet's fleet; the zero value is TestPullThroughTheFleet's.
type pullFleetOptions struct {
	// clusters are the workload clusters, each with its agent; nil means eu-01 alone. A name
	// the demo seed lacks joins the seed's set edge with region=eu, so that route eu takes it.
	clusters []string
	// statusSyncInterval is the work agents' --status-sync-interval; zero means 1 s.
	statusSyncInterval time.Duration
	// agentOptions change the options of a cluster's agent, by cluster.
	agentOptions map[string][]func(*agent.Options)
	// probe is the agents' connectivity probe (--probe-interval and --probe-timeout); the zero
	// value turns it off.
	probe probeOptions
}

const (
	pullWS      = demoseed.Workspace
	pullCluster = "eu-01"
	pullRepo    = "apps/web"
	agentPass   = "pull-s3cret"
)

// pullBackoff is every agent's back-off at a registry that lacks an artifact.
var pullBackoff = puller.Backoff{Initial: 300 * time.Millisecond, Max: time.Second}

func startPullFleet(t testing.TB, opts pullFleetOptions) *pullFleet {
	t.Helper()
	if len(opts.clusters) == 0 {
		opts.clusters = []string{pullCluster}
	}
	if opts.statusSyncInterval == 0 {
		opts.statusSyncInterval = time.Second
	}
	p := &pullFleet{t: t, ctx: t.Context(), clusters: opts.clusters, agents: map[string]*pullAgent{}, agentOptions: opts.agentOptions, probe: opts.probe}
	users := map[string]string{"puller": agentPass}
	p.source = testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: sourcePush, Users: users})
	p.mirror = testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: mirrorPush, Users: users})
	wait := (10 * time.Minute).String()
	seed := func(ctx context.Context, hub *testbed.Hub) error {
		c, err := client.New(hub.Config, client.Options{Scheme: controller.Scheme()})
		if err != nil {
			return err
		}
		if err := demoseed.Seed(ctx, c, pullWS); err != nil {
			return err
		}
		objs := []client.Object{
			registrySecret(pullWS, "source", registrysecret.RoleSource, p.source, agentPass),
			registrySecret(pullWS, "mirror", registrysecret.RoleMirror, p.mirror, agentPass),
			route(pullWS, "eu", v1alpha1.OCIStorageRouteSpec{Priority: 10, Registries: []string{"mirror", "source"}, ReplicationWait: wait,
				ClusterSelectors: []v1alpha1.LabelSelector{{MatchLabels: map[string]string{"region": "eu"}}}}),
		}
		for _, name := range opts.clusters {
			if _, ok := demoseed.Find(name); !ok {
				objs = append(objs, &clusterv1.ManagedCluster{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "edge", "region": "eu"}},
					Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
				})
			}
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				return err
			}
		}
		return nil
	}
	p.fleet = testbed.StartFleetT(t, testbed.FleetOptions{ClusterNames: opts.clusters, StatusSyncInterval: opts.statusSyncInterval, Prepare: seed})
	var err error
	if p.hub, err = client.New(p.fleet.Hub.Config, client.Options{Scheme: controller.Scheme()}); err != nil {
		t.Fatal(err)
	}
	for _, name := range opts.clusters {
		a := &pullAgent{cluster: name, cacheDir: t.TempDir()}
		if a.spoke, err = client.New(p.fleet.Cluster(name).Config, client.Options{Scheme: agent.Scheme()}); err != nil {
			t.Fatal(err)
		}
		p.agents[name] = a
	}
	runManager(t, p.fleet.Hub, "routing,pull-status,probe-status")
	for _, name := range opts.clusters {
		p.startAgent(name)
	}
	return p
}

// startAgent runs `fleet-controller agent` on cluster, in-process, on the cluster's cache folder,
// until the fleet's test ends or the cluster's stop is called. It runs as the agent's
// ServiceAccount, holding only the roles the chart gives it.
func (p *pullFleet) startAgent(cluster string) {
	t := p.t
	t.Helper()
	a := p.agents[cluster]
	o := agent.Options{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, CacheDir: a.cacheDir,
		AttemptTimeout: 3 * time.Second, RetryFailed: 2 * time.Second, Backoff: pullBackoff,
		ProbeInterval: p.probe.interval, ProbeTimeout: p.probe.timeout,
	}
	for _, f := range p.agentOptions[cluster] {
		f(&o)
	}
	mgr, err := agent.NewManager(p.fleet.Cluster(cluster).AgentConfig, o)
	if err != nil {
		t.Fatal(err)
	}
	a.stop = testkit.Run(t, mgr)
}

// registrySecret is workspace ws's registry Secret for a test registry, its agent identity
// "puller".
func registrySecret(ws, name, role string, r *testbed.Registry, agentPassword string) *corev1.Secret {
	e := r.Entry(name)
	return testkit.RegistrySecret(ws, name, role, registrysecret.Registry{
		Reference: e.Reference, BasicHTTP: e.BasicHTTP, CACerts: e.CACerts,
		Username: r.Username, Password: r.Password, AgentUsername: "puller", AgentPassword: agentPassword,
	})
}

// addRegistry adds a registry Secret for a chain entry made by a fault injector or a registry.
func (p *pullFleet) addRegistry(t *testing.T, name string, e puller.Registry, agentPassword string) {
	t.Helper()
	s := testkit.RegistrySecret(pullWS, name, registrysecret.RoleMirror, registrysecret.Registry{
		Reference: e.Reference, BasicHTTP: e.BasicHTTP, CACerts: e.CACerts, AgentUsername: "puller", AgentPassword: agentPassword,
	})
	if err := p.hub.Create(p.ctx, s); err != nil {
		t.Fatal(err)
	}
}

// setChain points route eu at registries, with a replication wait.
func (p *pullFleet) setChain(t *testing.T, wait time.Duration, registries ...string) {
	t.Helper()
	updateRoute(t, p.hub, pullWS, "eu", func(r *v1alpha1.OCIStorageRoute) {
		r.Spec.Registries, r.Spec.ReplicationWait = registries, wait.String()
	})
	p.awaitChain(t, registries...)
}

// awaitChain waits until every cluster of the fleet has the chain of route eu with registries.
func (p *pullFleet) awaitChain(t testing.TB, registries ...string) {
	t.Helper()
	for _, cluster := range p.clusters {
		testkit.Eventually(t, converge, "chain "+strings.Join(registries, ",")+" on "+cluster, func() error {
			var s corev1.Secret
			if err := p.agents[cluster].spoke.Get(p.ctx, client.ObjectKey{Namespace: ocichain.Namespace, Name: ocichain.SecretName(pullWS)}, &s); err != nil {
				return err
			}
			c, err := ocichain.Parse(s.Data[ocichain.Key])
			if err != nil {
				return err
			}
			var names []string
			for _, r := range c.Registries {
				names = append(names, r.Name)
			}
			if !slices.Equal(names, registries) {
				return fmt.Errorf("chain %v", names)
			}
			return nil
		}, p.fleet.Cluster(cluster).AgentLog)
	}
}

// request asks eu-01 for pullRepo:tag in the pull work "pull-<name>".
func (p *pullFleet) request(t *testing.T, name, tag string) {
	t.Helper()
	p.requestOn(t, pullCluster, name, tag)
}

// requestOn asks cluster for pullRepo:tag in the pull work "pull-<name>".
func (p *pullFleet) requestOn(t testing.TB, cluster, name, tag string) {
	t.Helper()
	w, err := pullwork.New(cluster, "pull-"+name, pullWS, pullwork.Request{Name: name, Spec: v1alpha1.OCIPullSpec{Repository: pullRepo, Tag: tag}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.hub.Create(p.ctx, w); err != nil {
		t.Fatal(err)
	}
}

// await waits until the pull's status on the hub, as the work's feedback carries it, passes check.
func (p *pullFleet) await(t *testing.T, name, what string, check func(pullwork.Pull) error) pullwork.Pull {
	t.Helper()
	var last pullwork.Pull
	testkit.Eventually(t, converge, name+": "+what, func() error {
		var w workv1.ManifestWork
		if err := p.hub.Get(p.ctx, client.ObjectKey{Namespace: pullCluster, Name: "pull-" + name}, &w); err != nil {
			return err
		}
		pulls, err := pullwork.Read(&w)
		if err != nil || len(pulls) != 1 {
			return fmt.Errorf("%d pulls, %v", len(pulls), err)
		}
		last = pulls[0]
		if !last.Fresh {
			return fmt.Errorf("no status for the spec yet")
		}
		return check(last)
	}, func() string { return p.explain(name, last) })
	return last
}

// explain shows the pull's work on the hub and its OCIPull on the cluster.
func (p *pullFleet) explain(name string, last pullwork.Pull) string {
	var w workv1.ManifestWork
	werr := p.hub.Get(p.ctx, client.ObjectKey{Namespace: pullCluster, Name: "pull-" + name}, &w)
	var o v1alpha1.OCIPull
	oerr := p.agents[pullCluster].spoke.Get(p.ctx, client.ObjectKey{Namespace: ocichain.Namespace, Name: name}, &o)
	return fmt.Sprintf("last status on the hub (fresh %v): %+v\nwork (generation %d, %v): conditions %+v manifests %+v\nOCIPull on the cluster (generation %d, %v): %+v%s",
		last.Fresh, last.Status, w.Generation, werr, w.Status.Conditions, w.Status.ResourceStatus.Manifests, o.Generation, oerr, o.Status,
		p.fleet.Cluster(pullCluster).AgentLog())
}

func pulledFrom(registry, digest string, failovers ...v1alpha1.Failover) func(pullwork.Pull) error {
	return func(p pullwork.Pull) error {
		st := p.Status
		if p.State() != "Pulled" || st.Registry != registry || st.Digest != digest || st.LastSuccess == nil || !slices.Equal(st.Failovers, failovers) || int(st.FailoverCount) != len(failovers) {
			return fmt.Errorf("state %s registry %q digest %q failovers %v (%s %s)", p.State(), st.Registry, st.Digest, st.Failovers, st.Reason, st.Message)
		}
		return nil
	}
}

// storage waits for eu-01's ClusterOCIStorage to show the counts and active registry given.
func (p *pullFleet) storage(t *testing.T, pulled, waiting, failed int32, active string) {
	t.Helper()
	testkit.Eventually(t, converge, "eu-01's ClusterOCIStorage", func() error {
		var s v1alpha1.ClusterOCIStorage
		if err := p.hub.Get(p.ctx, client.ObjectKey{Namespace: pullWS, Name: pullCluster}, &s); err != nil {
			return err
		}
		st := s.Status
		if st.Pulled != pulled || st.Waiting != waiting || st.Failed != failed || st.Unknown != 0 || st.Active != active || (pulled > 0 && st.LastPull == nil) {
			return fmt.Errorf("pulled %d waiting %d failed %d unknown %d active %q", st.Pulled, st.Waiting, st.Failed, st.Unknown, st.Active)
		}
		return nil
	})
}

// TestPullThroughTheFleet runs the pull path end to end on real parts: the hub controller routes
// eu-01, OCM's work agent carries the chain and the OCIPulls to the cluster, the agent pulls
// through the chain, and the status comes back to the hub through the works' feedback.
func TestPullThroughTheFleet(t *testing.T) {
	begin := time.Now()
	p := startPullFleet(t, pullFleetOptions{})
	t.Logf("fleet, registries and managers up in %v", time.Since(begin).Round(time.Millisecond))
	layer := func(s string) []byte { return []byte(strings.Repeat(s, 16<<10)) }
	pushBoth := func(tag string) string {
		d := p.source.PushT(t, pullRepo, tag, layer(tag))
		p.mirror.PushT(t, pullRepo, tag, layer(tag))
		return d.Digest.String()
	}

	t.Run("pulled from the first registry; the status reaches the hub", func(t *testing.T) {
		d := pushBoth("v1")
		start := time.Now()
		p.request(t, "first", "v1")
		got := p.await(t, "first", "Pulled from mirror", pulledFrom("mirror", d))
		if b := testkit.Counter("fleet_agent_pulled_bytes_total", nil); b < 16<<10 {
			t.Errorf("the agent counted %v bytes downloaded; the layer alone is 16 KiB", b)
		}
		if got.Status.Route != "eu" || got.Status.Reason != "" {
			t.Errorf("route %q reason %q", got.Status.Route, got.Status.Reason)
		}
		t.Logf("request to Pulled on the hub: %v", time.Since(start).Round(time.Millisecond))
		p.storage(t, 1, 0, 0, "mirror")
	})

	t.Run("each failure class of the first registry fails over to the second", func(t *testing.T) {
		ca, err := testbed.NewCA()
		if err != nil {
			t.Fatal(err)
		}
		untrusted := testbed.StartRegistryT(t, testbed.RegistryOptions{CA: ca, Username: "pusher", Password: mirrorPush, Users: map[string]string{"puller": agentPass}})
		tls := untrusted.Entry("tls")
		tls.CACerts = "" // the cluster does not trust its CA
		p.addRegistry(t, "tls", tls, agentPass)
		p.addRegistry(t, "bad-password", p.mirror.Entry("bad-password"), "not-the-password")
		p.addRegistry(t, "closed", testbed.AddrEntry("closed", testbed.ClosedAddrT(t)), agentPass)
		p.addRegistry(t, "tampered", testbed.StartProxyT(t, p.mirror, testbed.ProxyOptions{Tamper: testbed.BlobPaths}).Entry("tampered"), agentPass)
		for _, tc := range []struct{ registry, class string }{
			{"bad-password", "Unauthorized"}, {"tls", "TLS"}, {"closed", "Unreachable"}, {"tampered", "IntegrityMismatch"},
		} {
			// Each case asks for an artifact of its own, so that none is in the cache already.
			d := pushBoth(tc.registry)
			untrusted.PushT(t, pullRepo, tc.registry, layer(tc.registry))
			p.setChain(t, time.Minute, tc.registry, "source")
			p.request(t, tc.registry, tc.registry)
			p.await(t, tc.registry, "Pulled from source after "+tc.class, pulledFrom("source", d, v1alpha1.Failover{Registry: tc.registry, Reason: tc.class}))
		}
	})

	t.Run("NotFound within the wait is WaitingForArtifact, then Pulled once replicated", func(t *testing.T) {
		d := p.source.PushT(t, pullRepo, "late", layer("late")).Digest.String()
		p.setChain(t, 10*time.Minute, "mirror", "source")
		p.request(t, "late", "late")
		got := p.await(t, "late", "WaitingForArtifact on mirror", func(pl pullwork.Pull) error {
			if pl.State() != "WaitingForArtifact" || pl.Status.Registry != "mirror" || pl.Status.Reason != "NotFound" || pl.Status.NextRetry == nil {
				return fmt.Errorf("state %s registry %q reason %q nextRetry %v", pl.State(), pl.Status.Registry, pl.Status.Reason, pl.Status.NextRetry)
			}
			return nil
		})
		if d := time.Until(got.Status.NextRetry.Time); d > 2*time.Second {
			t.Errorf("nextRetry is %v away; the agent's back-off is at most 1s", d)
		}
		// The new chain starts every pull over: the five pulled so far are on the mirror.
		p.storage(t, 5, 1, 0, "mirror")
		if _, err := p.mirror.Copy(p.ctx, p.source, pullRepo, "late"); err != nil {
			t.Fatal(err)
		}
		p.await(t, "late", "Pulled from mirror once replicated", pulledFrom("mirror", d))
		p.storage(t, 6, 0, 0, "mirror")
	})

	t.Run("after the replication wait the next registry serves", func(t *testing.T) {
		d := p.source.PushT(t, pullRepo, "never", layer("never")).Digest.String()
		p.setChain(t, 3*time.Second, "mirror", "source")
		p.request(t, "never", "never")
		p.await(t, "never", "Pulled from source after the wait", pulledFrom("source", d, v1alpha1.Failover{Registry: "mirror", Reason: "NotFound"}))
	})

	t.Run("a route change takes effect on the next pull without downloading cached content again", func(t *testing.T) {
		before := testkit.Counter("fleet_agent_pulled_bytes_total", nil)
		p.setChain(t, time.Minute, "source")
		d := pushBoth("v1")
		p.await(t, "first", "pulled again through the new chain, from source", pulledFrom("source", d))
		// Every pull starts over on the new chain: each resolves its tag at the new registry and
		// finds the manifest and layers in the cache by digest.
		if got := testkit.Counter("fleet_agent_pulled_bytes_total", nil) - before; got != 0 {
			t.Errorf("the route change downloaded %v bytes again; want none: the content is cached", got)
		}
	})

	t.Run("agent restarted mid-pull: no partial artifact, the pull completes", func(t *testing.T) {
		stall := testbed.StartProxyT(t, p.source, testbed.ProxyOptions{StallBlobs: true})
		p.addRegistry(t, "stalled", stall.Entry("stalled"), agentPass)
		d := p.source.PushT(t, pullRepo, "big", layer("big"))
		p.setChain(t, time.Minute, "stalled", "source")
		p.request(t, "big", "big")
		testkit.Eventually(t, converge, "the agent downloading from the stalled registry", func() error {
			if stall.BlobGets.Load() == 0 {
				return fmt.Errorf("no blob request yet")
			}
			return nil
		})
		p.agents[pullCluster].stop()
		blobs := cachedBlobs(t, p.agents[pullCluster].cacheDir)
		for what, dg := range map[string]digest.Digest{"manifest": d.Digest, "layer": digest.FromBytes(layer("big"))} {
			if slices.Contains(blobs, dg.Encoded()) {
				t.Errorf("the %s of the interrupted pull is in the cache", what)
			}
		}
		pulled := func() float64 {
			return testkit.Counter("fleet_agent_pulls_total", map[string]string{"state": "Pulled"})
		}
		before := pulled()
		p.startAgent(pullCluster)
		p.await(t, "big", "Pulled after the restart", pulledFrom("source", d.Digest.String(), v1alpha1.Failover{Registry: "stalled", Reason: "Unreachable"}))
		// The restarted agent starts every pull over (cached content is only resolved again, at
		// the stalled registry): wait until all eight are Pulled again, then for the next second,
		// so that the next pull is the latest even at lastSuccess's one-second resolution (the
		// cluster's active registry is the one that served the latest pull).
		testkit.Eventually(t, converge, "every pull Pulled again by the restarted agent", func() error {
			if n := pulled() - before; n < 8 {
				return fmt.Errorf("%v pulls Pulled since the restart", n)
			}
			return nil
		})
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	})

	t.Run("work agent restarted: status still converges", func(t *testing.T) {
		if err := p.fleet.Cluster(pullCluster).RestartAgent(p.ctx); err != nil {
			t.Fatal(err)
		}
		d := p.source.PushT(t, pullRepo, "after-restart", layer("after-restart")).Digest.String()
		p.request(t, "after-restart", "after-restart")
		p.await(t, "after-restart", "Pulled", pulledFrom("source", d, v1alpha1.Failover{Registry: "stalled", Reason: "Unreachable"}))
	})

	t.Run("steady state: the hub writes nothing", func(t *testing.T) {
		// Nine pulls, all answered: first, the four failure classes, late, never, big, after-restart.
		p.storage(t, 9, 0, 0, "source")
		before := testkit.Counter("fleet_hub_writes_total", nil)
		time.Sleep(3 * time.Second)
		if n := testkit.Counter("fleet_hub_writes_total", nil) - before; n != 0 {
			t.Errorf("%v writes in 3 s of a settled fleet (routing and pull-status); want none", n)
		}
	})

	t.Run("nothing on the cluster that the works do not carry", func(t *testing.T) {
		assertOnlyCarried(t, p)
	})
}

// cachedBlobs lists the blobs of the agent's OCI layout.
func cachedBlobs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// assertOnlyCarried walks every namespaced kind the cluster serves, in every namespace the test
// bed did not make, and every namespace: each object must be one a work carries, or one
// Kubernetes makes by itself in a namespace (its root CA ConfigMap, its default ServiceAccount)
// or an Event, or the test bed's grant of the agent's roles (testbed.GrantFleetAgent, the chart's
// part).
func assertOnlyCarried(t *testing.T, p *pullFleet) {
	t.Helper()
	var works workv1.ManifestWorkList
	if err := p.hub.List(p.ctx, &works, client.InNamespace(pullCluster)); err != nil {
		t.Fatal(err)
	}
	carried := map[string]bool{}
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			var u unstructured.Unstructured
			if err := u.UnmarshalJSON(m.Raw); err != nil {
				t.Fatal(err)
			}
			carried[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = true
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(p.fleet.Cluster(pullCluster).Config)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	var namespaces corev1.NamespaceList
	spoke := p.agents[pullCluster].spoke
	if err := spoke.List(p.ctx, &namespaces); err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, ns := range namespaces.Items {
		if strings.HasPrefix(ns.Name, "kube-") || ns.Name == "default" || ns.Name == testbed.AgentNamespace {
			continue
		}
		if !carried["Namespace /"+ns.Name] {
			t.Errorf("namespace %s is on the cluster; no work carries it", ns.Name)
		}
		for _, l := range lists {
			for _, r := range l.APIResources {
				if !r.Namespaced || !slices.Contains(r.Verbs, "list") || r.Kind == "Event" {
					continue
				}
				var objs unstructured.UnstructuredList
				objs.SetAPIVersion(l.GroupVersion)
				objs.SetKind(r.Kind + "List")
				if err := spoke.List(p.ctx, &objs, client.InNamespace(ns.Name)); err != nil {
					t.Fatalf("listing %s: %v", r.Name, err)
				}
				for _, o := range objs.Items {
					key := r.Kind + " " + ns.Name + "/" + o.GetName()
					found = append(found, key)
					if !carried[key] && key != "ConfigMap "+ns.Name+"/kube-root-ca.crt" && key != "ServiceAccount "+ns.Name+"/default" &&
						o.GetLabels()[testbed.GrantedLabel] == "" {
						t.Errorf("%s is on the cluster; no work carries it", key)
					}
				}
			}
		}
	}
	t.Logf("objects in the namespaces the works made: %s", strings.Join(found, ", "))
}
