package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// BenchmarkFleet measures the pull path across a local fleet (startPullFleet: the real OCM work
// agent on every workload cluster, `fleet-controller agent` in-process on each with a cache of its
// own, the hub's routing and pull-status reconcilers in-process, real registries) and prints
//
//	fleet: clusters=4 status_sync_interval=1s pulls_per_s=… status_latency_p50_ms=… p95=… spoke_p50_ms=… spoke_p95_ms=… hub_over_spoke_p50=…
//
// from two measurements:
//
//   - status latency: in each of FLEET_BENCH_FLEET_ROUNDS rounds (default 5) every cluster asks
//     for a tag the mirror does not have yet (route eu: mirror, then source, a 10 min replication
//     wait, so each agent waits on the mirror with its back-off of 300 ms to 1 s). Once the hub
//     shows every pull WaitingForArtifact, and after a random pause (so that the push does not
//     fall at a fixed point of the work agents' sync period), the artifact is pushed to the
//     mirror at T0. The latency of a pull is the time from T0 to the hub showing it Pulled, as the
//     work's status feedback carries it; its baseline, measured on the same pulls, is the time
//     from T0 to the OCIPull's own status on the workload cluster turning Pulled, i.e. without
//     the OCM feedback path. p50 and p95 are across clusters × rounds. Both sides are timed by
//     watches (the hub's ManifestWorks, each cluster's OCIPulls), not by polling.
//   - throughput: every cluster asks at once for FLEET_BENCH_FLEET_PULLS (default 10) distinct
//     small artifacts the mirror already has, each in a pull work of its own; pulls_per_s is
//     clusters × pulls over the time from the first request to the last pull Pulled on the hub.
//
// FLEET_BENCH_FLEET_CLUSTERS (default 4: the demo seed's eu clusters, then generated ones in
// region eu) and FLEET_BENCH_FLEET_SYNC (the work agents' --status-sync-interval, default 1s)
// scale it; FLEET_BENCH_FLEET_TIMELINE=<file> appends when each throughput pull reached its
// cluster, was Pulled there and on the hub. Every pull is checked to come from the mirror with
// the digest pushed; nothing is asserted about the timings. It skips without the test bed, or
// fails with FLEET_REQUIRE_TESTBED=1.
//
// Reading the figures: the work agent (OCM v1.2.0's AvailableStatusController) reads each work's
// resources again wait.Jitter(interval, 0.9) after its last sync, i.e. every 1 to 1.9 status sync
// intervals, so the feedback path adds up to 1.9 intervals to what the cluster shows (feedback_*
// in the line: hub minus cluster, per pull); the agent's back-off adds up to 1 s on the cluster.
// The throughput phase saturates a 2-core machine: every cluster's API server, etcd and work
// agent run on it.
func BenchmarkFleet(b *testing.B) {
	n := benchEnvInt("FLEET_BENCH_FLEET_CLUSTERS", 4)
	rounds := benchEnvInt("FLEET_BENCH_FLEET_ROUNDS", 5)
	perCluster := benchEnvInt("FLEET_BENCH_FLEET_PULLS", 10)
	syncEach := time.Second
	if d, err := time.ParseDuration(os.Getenv("FLEET_BENCH_FLEET_SYNC")); err == nil && d > 0 {
		syncEach = d
	}
	begin := time.Now()
	p := startPullFleet(b, pullFleetOptions{clusters: benchClusterNames(n), statusSyncInterval: syncEach})
	p.awaitChain(b, "mirror", "source")
	seen := watchPulls(b, p)
	b.Logf("fleet of %d clusters, registries and managers up in %v", n, time.Since(begin).Round(time.Millisecond))

	for i := 0; b.Loop(); i++ {
		var hubLat, spokeLat, feedback []time.Duration
		for r := range rounds {
			h, s := benchLatencyRound(b, p, seen, fmt.Sprintf("lat-%d-%d", i, r), max(syncEach*19/10, pullBackoff.Max))
			hubLat, spokeLat = append(hubLat, h...), append(spokeLat, s...)
			for j := range h {
				feedback = append(feedback, h[j]-s[j])
			}
		}
		hubTook, spokeTook := benchThroughput(b, p, seen, fmt.Sprintf("tp-%d", i), perCluster)

		pulls := float64(n * perCluster)
		perS, spokePerS := pulls/hubTook.Seconds(), pulls/spokeTook.Seconds()
		hub50, hub95 := ms(percentile(hubLat, 50)), ms(percentile(hubLat, 95))
		spoke50, spoke95 := ms(percentile(spokeLat, 50)), ms(percentile(spokeLat, 95))
		ratio := hub50 / spoke50
		fmt.Printf("fleet: clusters=%d status_sync_interval=%s pulls_per_s=%.1f status_latency_p50_ms=%.0f p95=%.0f spoke_p50_ms=%.0f spoke_p95_ms=%.0f hub_over_spoke_p50=%.2f"+
			" (rounds=%d samples=%d feedback_p50_ms=%.0f feedback_p95_ms=%.0f agent_backoff=%s..%s; throughput: %d pulls in %s on the hub, %s on the clusters, spoke_pulls_per_s=%.1f)\n",
			n, syncEach, perS, hub50, hub95, spoke50, spoke95, ratio,
			rounds, len(hubLat), ms(percentile(feedback, 50)), ms(percentile(feedback, 95)), pullBackoff.Initial, pullBackoff.Max,
			int(pulls), hubTook.Round(time.Millisecond), spokeTook.Round(time.Millisecond), spokePerS)
		b.ReportMetric(float64(n), "clusters")
		b.ReportMetric(syncEach.Seconds(), "status_sync_interval_s")
		b.ReportMetric(perS, "pulls/s")
		b.ReportMetric(hub50, "status_latency_p50_ms")
		b.ReportMetric(hub95, "status_latency_p95_ms")
		b.ReportMetric(spoke50, "spoke_p50_ms")
		b.ReportMetric(spoke95, "spoke_p95_ms")
		b.ReportMetric(ratio, "hub_over_spoke_p50")
		b.ReportMetric(spokePerS, "spoke_pulls/s")
	}
	if n := seen.rewatches(); n > 0 {
		b.Logf("warning: the watches were re-established %d times; a pull seen again after that is timed late", n)
	}
}

// benchLatencyRound runs one round of the status latency on every cluster of p: it returns, per
// cluster, the time from the push to the hub showing the pull Pulled and to the cluster's OCIPull
// showing it.
func benchLatencyRound(b *testing.B, p *pullFleet, seen *pullTimes, name string, jitter time.Duration) (hubLat, spokeLat []time.Duration) {
	b.Helper()
	a, err := testbed.NewArtifact([]byte(strings.Repeat(name, 4<<10)))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range p.clusters {
		p.requestOn(b, c, name, name)
	}
	testkit.Eventually(b, converge, name+": WaitingForArtifact on the mirror on the hub, every cluster", func() error {
		for _, c := range p.clusters {
			pl, ok := seen.onHub(c, name)
			if !ok || pl.State() != string(v1alpha1.OCIPullWaitingForArtifact) || pl.Status.Registry != "mirror" {
				return fmt.Errorf("%s: state %s registry %q (%s)", c, pl.State(), pl.Status.Registry, pl.Status.Message)
			}
		}
		return nil
	})
	// The hub shows the state right after a sync of the work agents: pushing at once would push
	// at the same point of their sync period every round. jitter spans that period.
	time.Sleep(rand.N(jitter))
	if err := p.mirror.PushArtifact(p.ctx, pullRepo, name, a); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	want := a.Manifest.Digest.String()
	for _, c := range p.clusters {
		hubAt, spokeAt := seen.awaitPulled(b, p, c, name, want)
		hubLat, spokeLat = append(hubLat, hubAt.Sub(t0)), append(spokeLat, spokeAt.Sub(t0))
	}
	return hubLat, spokeLat
}

// benchThroughput asks every cluster at once for perCluster artifacts the mirror has, one pull
// work each, and returns how long it took until the hub, and the clusters, showed all Pulled.
func benchThroughput(b *testing.B, p *pullFleet, seen *pullTimes, prefix string, perCluster int) (hubTook, spokeTook time.Duration) {
	b.Helper()
	digests := map[string]string{}
	var names []string
	for k := range perCluster {
		name := fmt.Sprintf("%s-%02d", prefix, k)
		d := p.mirror.PushT(b, pullRepo, name, []byte(strings.Repeat(name, 4<<10)))
		digests[name] = d.Digest.String()
		names = append(names, name)
	}
	errs := make([]error, len(p.clusters))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, c := range p.clusters {
		wg.Go(func() {
			for _, name := range names {
				w, err := pullwork.New(c, "pull-"+name, pullWS, pullwork.Request{Name: name, Spec: v1alpha1.OCIPullSpec{Repository: pullRepo, Tag: name}})
				if err == nil {
					err = p.hub.Create(p.ctx, w)
				}
				if err != nil {
					errs[i] = errors.Join(errs[i], err)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	var hubEnd, spokeEnd time.Time
	for _, c := range p.clusters {
		for _, name := range names {
			hubAt, spokeAt := seen.awaitPulled(b, p, c, name, digests[name])
			hubEnd, spokeEnd = maxTime(hubEnd, hubAt), maxTime(spokeEnd, spokeAt)
		}
	}
	if path := os.Getenv("FLEET_BENCH_FLEET_TIMELINE"); path != "" {
		seen.writeTimeline(b, path, p.clusters, names, t0)
	}
	return hubEnd.Sub(t0), spokeEnd.Sub(t0)
}

// writeTimeline appends to path, for each pull, when it appeared on its cluster, turned Pulled
// there and on the hub, after t0.
func (s *pullTimes) writeTimeline(b *testing.B, path string, clusters, names []string, t0 time.Time) {
	b.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range clusters {
		for _, name := range names {
			k := c + "/" + name
			fmt.Fprintf(f, "%s: on the cluster +%v, Pulled there +%v, on the hub +%v\n", k, s.onSpoke[k].Sub(t0).Round(time.Millisecond),
				s.spokeAt[k].Sub(t0).Round(time.Millisecond), s.hubAt[k].Sub(t0).Round(time.Millisecond))
		}
	}
}

// pullTimes is what watches on the hub's pull works and on every cluster's OCIPulls saw: the
// hub's latest view of each pull, and when each pull was first seen Pulled on the hub (fresh
// feedback) and on its cluster (status for the current generation). Keys are cluster/name.
type pullTimes struct {
	mu       sync.Mutex
	hub      map[string]pullwork.Pull
	hubAt    map[string]time.Time
	spokeAt  map[string]time.Time
	onSpoke  map[string]time.Time // when the OCIPull was first seen on its cluster
	rewatch  int
	watchErr error
}

// watchPulls starts the watches until the benchmark ends.
func watchPulls(b *testing.B, p *pullFleet) *pullTimes {
	b.Helper()
	s := &pullTimes{hub: map[string]pullwork.Pull{}, hubAt: map[string]time.Time{}, spokeAt: map[string]time.Time{}, onSpoke: map[string]time.Time{}}
	ctx := b.Context()
	hc, err := client.NewWithWatch(p.fleet.Hub.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	go s.watch(ctx, hc, &workv1.ManifestWorkList{}, []client.ListOption{client.MatchingLabels{hub.ComponentLabel: pullwork.Component}}, func(o client.Object, now time.Time) {
		w, ok := o.(*workv1.ManifestWork)
		if !ok {
			return
		}
		pulls, err := pullwork.Read(w)
		if err != nil {
			return
		}
		for _, pl := range pulls {
			key := w.Namespace + "/" + pl.Name
			s.hub[key] = pl
			if _, done := s.hubAt[key]; !done && pl.State() == string(v1alpha1.OCIPullPulled) {
				s.hubAt[key] = now
			}
		}
	})
	for _, c := range p.clusters {
		sc, err := client.NewWithWatch(p.fleet.Cluster(c).Config, client.Options{Scheme: agent.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		go s.watch(ctx, sc, &v1alpha1.OCIPullList{}, []client.ListOption{client.InNamespace(ocichain.Namespace)}, func(o client.Object, now time.Time) {
			pl, ok := o.(*v1alpha1.OCIPull)
			if !ok {
				return
			}
			key := c + "/" + pl.Name
			if _, done := s.onSpoke[key]; !done {
				s.onSpoke[key] = now
			}
			if _, done := s.spokeAt[key]; !done && pl.Status.State == v1alpha1.OCIPullPulled && pl.Status.ObservedGeneration == pl.Generation {
				s.spokeAt[key] = now
			}
		})
	}
	return s
}

// watch calls saw, under s.mu, with every object of list's kind that a watch reports and the time
// it arrived, until ctx ends; a watch that closes is started again.
func (s *pullTimes) watch(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption, saw func(client.Object, time.Time)) {
	for first := true; ctx.Err() == nil; first = false {
		w, err := c.Watch(ctx, list, opts...)
		if err != nil {
			s.mu.Lock()
			s.watchErr = err
			s.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !first {
			s.mu.Lock()
			s.rewatch++
			s.mu.Unlock()
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			if o, ok := ev.Object.(client.Object); ok {
				s.mu.Lock()
				saw(o, now)
				s.mu.Unlock()
			}
		}
		w.Stop()
	}
}

func (s *pullTimes) onHub(cluster, name string) (pullwork.Pull, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pl, ok := s.hub[cluster+"/"+name]
	return pl, ok
}

func (s *pullTimes) rewatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rewatch
}

// awaitPulled waits until both watches saw the pull Pulled, checks that the hub shows it pulled
// from the mirror with digest, and returns when each saw it.
func (s *pullTimes) awaitPulled(b *testing.B, p *pullFleet, cluster, name, digest string) (hubAt, spokeAt time.Time) {
	b.Helper()
	key := cluster + "/" + name
	testkit.Eventually(b, converge, key+": Pulled on the hub and on the cluster", func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		var ok1, ok2 bool
		hubAt, ok1 = s.hubAt[key]
		spokeAt, ok2 = s.spokeAt[key]
		if !ok1 || !ok2 {
			pl := s.hub[key]
			return fmt.Errorf("seen Pulled on the hub %v, on the cluster %v; the hub shows %s %q %s (watch error %v)",
				ok1, ok2, pl.State(), pl.Status.Registry, pl.Status.Message, s.watchErr)
		}
		return nil
	}, p.fleet.Cluster(cluster).AgentLog)
	pl, _ := s.onHub(cluster, name)
	if pl.Status.Registry != "mirror" || pl.Status.Digest != digest {
		b.Fatalf("%s: Pulled from %q with digest %s; want the mirror's %s", key, pl.Status.Registry, pl.Status.Digest, digest)
	}
	return hubAt, spokeAt
}

// benchClusterNames are n cluster names in region eu: the demo seed's, then eu-bench-NN.
func benchClusterNames(n int) []string {
	var names []string
	for _, c := range demoseed.Clusters {
		if c.Labels["region"] == "eu" && len(names) < n {
			names = append(names, c.Name)
		}
	}
	for i := len(names) + 1; len(names) < n; i++ {
		names = append(names, fmt.Sprintf("eu-bench-%02d", i))
	}
	return names
}

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// percentile is the nearest-rank q-th percentile of ds.
func percentile(ds []time.Duration, q int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (q*len(s) + 99) / 100 // ceil(q/100 × n)
	return s[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
