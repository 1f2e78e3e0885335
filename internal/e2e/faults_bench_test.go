package e2e_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// BenchmarkFaultsFailingReleases measures, on the hub, the writes that failing Helm releases
// cause: FLEET_BENCH_FAULT_RELEASES (default 100) FleetApps whose chart always fails on eu-01,
// run by the agent with its default back-off, and as many on eu-02, run by the agent as it was
// before back-off (agent.WithFixedRetry: Installing written at each attempt, a retry every 30 s),
// side by side in the same run. Everything is real: the hub's apps reconciler, OCM's work agent
// of each cluster (its status feedback is what carries a release's status to the hub), the
// agent (in-process) and Helm on each cluster, the registries. Once every app of both clusters
// shows Failed, and a minute more (the first back-off steps), a watch of the hub counts for a
// minute every change of a ManifestWork in each cluster's namespace and of each FleetApp: each
// is one write on the hub (a resourceVersion), whoever made it, and the failed Helm attempts of
// both agents together in the window (fleet_agent_release_attempts_total: both agents run in
// this process), which shows that the releases were being retried. It prints
// `faults: failing_release_hub_writes_per_min=<x>` per release, the baseline's and the ratio,
// and fails if an app is not failing with the chart's error (else nothing was measured) or if
// the baseline wrote nothing in the window.
func BenchmarkFaultsFailingReleases(b *testing.B) {
	const (
		ours, baseline = "eu-01", "eu-02"
		warmup         = time.Minute
		window         = time.Minute
	)
	releases := benchEnvInt("FLEET_BENCH_FAULT_RELEASES", 100)
	begin := time.Now()
	p := startPullFleet(b, pullFleetOptions{clusters: []string{ours, baseline},
		agentOptions: map[string][]func(*agent.Options){baseline: {agent.WithFixedRetry}}})
	runManager(b, p.fleet.Hub, "sites,cluster-joins,apps")
	ctx := p.ctx
	p.source.PushChartT(b, "charts/broken", testbed.FailingChart("broken"))
	if _, err := p.mirror.Copy(ctx, p.source, "charts/broken", "0.1.0"); err != nil {
		b.Fatal(err)
	}
	hub, err := client.NewWithWatch(p.fleet.Hub.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		b.Fatal(err)
	}

	// Every change on the hub, counted while counting is on: works by namespace (the cluster),
	// apps by the cluster they name.
	var mu sync.Mutex
	counting := false
	works, apps := map[string]int{}, map[string]int{}
	watchHub := func(list client.ObjectList, opts ...client.ListOption) {
		w, err := hub.Watch(ctx, list, opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
		go func() {
			for ev := range w.ResultChan() {
				if ev.Type != watch.Modified && ev.Type != watch.Added && ev.Type != watch.Deleted {
					continue
				}
				mu.Lock()
				if counting {
					switch o := ev.Object.(type) {
					case *workv1.ManifestWork:
						works[o.Namespace]++
					case *v1alpha1.FleetApp:
						apps[o.Spec.Cluster]++
					}
				}
				mu.Unlock()
			}
			mu.Lock()
			defer mu.Unlock()
			if counting {
				b.Errorf("a watch of the hub ended while counting: the figures would be short")
			}
		}()
	}
	watchHub(&v1alpha1.FleetAppList{}, client.InNamespace(pullWS))
	for _, cluster := range []string{ours, baseline} {
		watchHub(&workv1.ManifestWorkList{}, client.InNamespace(cluster))
	}

	wsMeta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: pullWS, Name: name} }
	objs := []client.Object{
		&v1alpha1.FleetSite{ObjectMeta: wsMeta("lab")},
		&v1alpha1.FleetChart{ObjectMeta: wsMeta("broken"), Spec: v1alpha1.FleetChartSpec{Repository: "charts/broken", Version: "0.1.0"}},
	}
	for _, cluster := range []string{ours, baseline} {
		objs = append(objs, &v1alpha1.FleetClusterJoin{ObjectMeta: wsMeta(cluster), Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "lab"}})
		for i := range releases {
			objs = append(objs, &v1alpha1.FleetApp{ObjectMeta: wsMeta(fmt.Sprintf("broken-%s-%03d", cluster, i)),
				Spec: v1alpha1.FleetAppSpec{Chart: "broken", Cluster: cluster, Namespace: "broken"}})
		}
	}
	for _, o := range objs {
		if err := p.hub.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	created := time.Now()
	b.Logf("fleet up and %d apps created in %v", 2*releases, created.Sub(begin).Round(time.Millisecond))

	// failing checks every app: Failed with the chart's error (the baseline's may be Installing,
	// in the middle of an attempt, once it failed before).
	failing := func(allowInstalling bool) error {
		var list v1alpha1.FleetAppList
		if err := p.hub.List(ctx, &list, client.InNamespace(pullWS)); err != nil {
			return err
		}
		n := 0
		for _, a := range list.Items {
			ok := a.Status.Phase == v1alpha1.AppFailed && strings.Contains(a.Status.Message, "this chart always fails")
			if !ok && allowInstalling && a.Spec.Cluster == baseline && a.Status.Phase == v1alpha1.AppInstalling {
				ok = true
			}
			if !ok {
				return fmt.Errorf("%d of %d apps failing; %s on %s is %s: %s", n, len(list.Items), a.Name, a.Spec.Cluster, a.Status.Phase, a.Status.Message)
			}
			n++
		}
		if n != 2*releases {
			return fmt.Errorf("%d apps, want %d", n, 2*releases)
		}
		return nil
	}
	testkit.Eventually(b, 10*time.Minute, "every app Failed with the chart's error", func() error { return failing(true) })
	b.Logf("every app failing %v after they were created", time.Since(created).Round(time.Millisecond))

	b.ResetTimer()
	time.Sleep(warmup)
	attempts := func() float64 {
		return testkit.Counter("fleet_agent_release_attempts_total", map[string]string{"result": "failed"})
	}
	mu.Lock()
	counting = true
	attemptsBefore := attempts()
	mu.Unlock()
	time.Sleep(window)
	mu.Lock()
	counting = false
	attemptsIn := attempts() - attemptsBefore
	got := map[string][2]int{ours: {works[ours], apps[ours]}, baseline: {works[baseline], apps[baseline]}}
	mu.Unlock()
	b.StopTimer()

	if err := failing(true); err != nil {
		b.Fatalf("after the window: %v", err)
	}
	if got[baseline][0]+got[baseline][1] == 0 {
		b.Fatal("the baseline wrote nothing on the hub in the window: nothing was measured")
	}
	perMin := func(cluster string) float64 {
		return float64(got[cluster][0]+got[cluster][1]) / float64(releases) / window.Minutes()
	}
	o, base := perMin(ours), perMin(baseline)
	b.ReportMetric(o, "hub_writes/release/min")
	b.ReportMetric(base, "baseline_hub_writes/release/min")
	ratio := "inf"
	if o > 0 {
		ratio = fmt.Sprintf("%.1f", base/o)
	}
	fmt.Printf("faults: failing_release_hub_writes_per_min=%.2f baseline_fixed_retry=%.2f ratio=%s releases=%d after=%s window=%s work_writes=%d app_writes=%d baseline_work_writes=%d baseline_app_writes=%d failed_attempts_both=%.0f\n",
		o, base, ratio, releases, warmup, window, got[ours][0], got[ours][1], got[baseline][0], got[baseline][1], attemptsIn)
	if o > 2 {
		b.Errorf("%.2f hub writes per failing release per minute, goal at most 2", o)
	}
}
