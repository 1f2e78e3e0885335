package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// flipFleet is a hub of many small workspaces: workspace <prefix>-NN binds set <prefix>-NN,
// which holds its clusters <prefix>-NN-cK, labelled zone=a or zone=b; its route "a" sends
// zone=a to registry source, and route "b" zone=b.
type flipFleet struct {
	prefix               string
	workspaces, clusters int // clusters per workspace
}

func (f flipFleet) ws(i int) string         { return fmt.Sprintf("%s-%02d", f.prefix, i) }
func (f flipFleet) cluster(i, k int) string { return fmt.Sprintf("%s-%02d-c%d", f.prefix, i, k) }

func (f flipFleet) seed(t testing.TB, c client.Client) {
	t.Helper()
	var objs []client.Object
	for i := range f.workspaces {
		ws := f.ws(i)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
			&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: ws}}, bindingOf(ws, ws),
			testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example/fleet", AgentUsername: "a", AgentPassword: "p"}),
			route(ws, "a", v1alpha1.OCIStorageRouteSpec{Priority: 10, ClusterSelectors: selector("zone", "a"), Registries: []string{"source"}}),
			route(ws, "b", v1alpha1.OCIStorageRouteSpec{Priority: 20, ClusterSelectors: selector("zone", "b"), Registries: []string{"source"}}))
		for k := range f.clusters {
			name := f.cluster(i, k)
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
				&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: ws, "zone": "a"}},
					Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
		}
	}
	// Namespaces and sets first: the objects in them are refused until they exist.
	var first, then []client.Object
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Namespace, *clusterv1beta2.ManagedClusterSet:
			first = append(first, o)
		default:
			then = append(then, o)
		}
	}
	createAll(t, c, first)
	createAll(t, c, then)
}

// createAll creates objs with 16 writers in parallel.
func createAll(t testing.TB, c client.Client, objs []client.Object) {
	t.Helper()
	n, obj := each(objs)
	createEach(t, c, 16, n, obj)
}

// matched is how many clusters route r of workspace i matches, -1 until its status is current.
func (f flipFleet) matched(c client.Client, i int, r string) int {
	var rt v1alpha1.OCIStorageRoute
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: f.ws(i), Name: r}, &rt); err != nil || rt.Status.ObservedGeneration != rt.Generation {
		return -1
	}
	return int(rt.Status.MatchedClusters)
}

// converged: every workspace's routes are current and every cluster has its chain work.
func (f flipFleet) converged(c client.Client) bool {
	for i := range f.workspaces {
		if f.matched(c, i, "a")+f.matched(c, i, "b") != f.clusters {
			return false
		}
	}
	var works metav1.PartialObjectMetadataList
	works.SetGroupVersionKind(workv1.SchemeGroupVersion.WithKind("ManifestWorkList"))
	n := 0
	for i := range f.workspaces {
		for k := range f.clusters {
			if c.List(context.Background(), &works, client.InNamespace(f.cluster(i, k))) != nil {
				return false
			}
			n += len(works.Items)
		}
	}
	return n >= f.workspaces*f.clusters
}

func routingReconciles() float64 {
	return testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "routing"})
}

// routingComputes is how many routing reconciles computed a workspace's routes: those that
// succeeded. A reconcile whose cache does not hold its last writes yet (kube.ReasonCacheBehind)
// only looks and requeues (result requeue_after); how many of those a flip takes depends on how
// quickly the watch delivers, not on which workspaces the flip reaches.
func routingComputes() float64 {
	return testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "routing", "result": "success"})
}

// quiet waits until the routing reconciler has reconciled nothing for two seconds (at most 60).
func quiet(t testing.TB) {
	t.Helper()
	last, still := routingReconciles(), 0
	for start := time.Now(); still < 10; {
		if time.Since(start) > time.Minute {
			t.Fatal("the routing reconciler never went quiet")
		}
		time.Sleep(200 * time.Millisecond)
		if n := routingReconciles(); n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
}

// flip moves cluster k of workspace 0 to zone to, waits until its routes say so, and returns
// the routing reconciles that computed it took (routingComputes) and how long.
func (f flipFleet) flip(t testing.TB, c client.Client, k int, to string) (float64, time.Duration) {
	t.Helper()
	quiet(t)
	wantB := 0
	if to == "b" {
		wantB = 1
	}
	before, start := routingComputes(), time.Now()
	testkit.Update(t, c, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: f.cluster(0, k)}}, func(m *clusterv1.ManagedCluster) {
		m.Labels["zone"] = to
	})
	for f.matched(c, 0, "b") != wantB || f.matched(c, 0, "a") != f.clusters-wantB {
		if time.Since(start) > time.Minute {
			t.Fatalf("workspace %s's routes never followed the label flip", f.ws(0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	quiet(t)
	return routingComputes() - before, took
}

func runRouting(t testing.TB, cfg *rest.Config) (stop func()) {
	t.Helper()
	mgr, err := controller.NewHubManager(cfg, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "routing", QPS: 500, Burst: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Run(t, mgr)
}

// flipMeasure is the routing work of label flips: the reconciles of each flip with the routing
// reconciler's mapping, and of one flip under the mapping to every workspace (the behaviour
// before), with the mean time until the flipped workspace's routes say so.
type flipMeasure struct {
	ours                []float64
	naive               float64
	tookOurs, tookNaive time.Duration
}

// measureFlips converges the fleet under a routing reconciler, flips cluster 0 of workspace 0
// between zones n times, then once more under the baseline mapping.
func (f flipFleet) measureFlips(t testing.TB, cfg *rest.Config, c client.Client, n int) flipMeasure {
	t.Helper()
	var m flipMeasure
	stop := runRouting(t, cfg)
	testkit.Eventually(t, 20*time.Minute, "the fleet converged", func() error {
		if !f.converged(c) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	var first clusterv1.ManagedCluster
	if err := c.Get(context.Background(), client.ObjectKey{Name: f.cluster(0, 0)}, &first); err != nil {
		t.Fatal(err)
	}
	zone := first.Labels["zone"] // a run before this one (-count) may have left it in b
	for range n {
		zone = map[string]string{"a": "b", "b": "a"}[zone]
		r, took := f.flip(t, c, 0, zone)
		m.ours = append(m.ours, r)
		m.tookOurs += took / time.Duration(n)
	}
	stop()
	undo := controller.MapClusterEventsToAllWorkspaces()
	stop = runRouting(t, cfg)
	undo()
	quiet(t)
	zone = map[string]string{"a": "b", "b": "a"}[zone]
	m.naive, m.tookNaive = f.flip(t, c, 0, zone)
	stop()
	return m
}

// TestLabelFlipRecomputesOnlyItsWorkspaces: a label change on one cluster reconciles the routing
// of the workspaces bound to a set that held or holds it, not every workspace of the hub. The
// same flip under the mapping to every workspace (the behaviour before) is measured in the same
// run: it reconciles at least every workspace of the fleet.
func TestLabelFlipRecomputesOnlyItsWorkspaces(t *testing.T) {
	f := flipFleet{prefix: "flip", workspaces: 20, clusters: 2}
	_, c := startHub(t)
	f.seed(t, c)

	m := f.measureFlips(t, sharedHub.Config, c, 2)
	t.Logf("routing reconciles for one label flip on a hub of %d+ workspaces: %v (this mapping, %v per flip) vs %.0f (every workspace, %v)",
		f.workspaces, m.ours, m.tookOurs, m.naive, m.tookNaive)
	// The flip's workspace reconciles once for the cluster's event and once more for its chain
	// work's update; nothing else of the hub is recomputed.
	for _, n := range m.ours {
		if n < 1 || n > 3 {
			t.Errorf("one label flip reconciled the routing %.0f times, want 1 to 3: only the cluster's workspace", n)
		}
	}
	if m.naive < float64(f.workspaces) {
		t.Errorf("the baseline reconciled %.0f times, fewer than the fleet's %d workspaces: the comparison measures nothing", m.naive, f.workspaces)
	}
}

// refuseWorks makes the hub's apiserver refuse every ManifestWork of component written in
// namespace ns (a ValidatingAdmissionPolicy, as a hub's own policy would), waits until it does,
// and returns the policy's name.
func refuseWorks(t *testing.T, c client.Client, ns, component string) string {
	t.Helper()
	name := "refuse-" + component + "-works-" + ns
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{hub.ComponentLabel: component}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{workv1.GroupName}, APIVersions: []string{"v1"}, Resources: []string{"manifestworks"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "this hub refuses ManifestWorks in " + ns}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	testkit.Eventually(t, time.Minute, "the apiserver refusing "+component+" works in "+ns, func() error {
		probe := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-", Labels: map[string]string{hub.ComponentLabel: component}}}
		if err := c.Create(t.Context(), probe, client.DryRunAll); err == nil {
			return fmt.Errorf("a work was accepted")
		}
		return nil
	})
	return name
}

// denials is how many requests the hub's apiserver denied by policy, from its own metrics: the
// writes that reached it, whoever sent them.
func denials(t *testing.T, policy string) float64 {
	t.Helper()
	cs, err := kubernetes.NewForConfig(sharedHub.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	found := false
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_validating_admission_policy_check_total{") || !strings.Contains(line, `policy="`+policy+`"`) ||
			!strings.Contains(line, `enforcement_action="deny"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("the apiserver's metrics have no denial of policy %s", policy)
	}
	return sum
}

// TestRefusedWorksBackOff: an app and a route whose works the apiserver refuses retry with the
// one jittered exponential back-off (kube.RateLimiter), not controller-runtime's default from
// 5 ms (12 or more attempts in 20 s), and, their status said once, write it no more.
func TestRefusedWorksBackOff(t *testing.T) {
	const ws, cluster = "refused-ws", "refused-01"
	const window = 20 * time.Second
	_, c := startHub(t)
	v := appView{t, c, ws, cluster}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "")
	appPolicy, chainPolicy := refuseWorks(t, c, cluster, appwork.Component), refuseWorks(t, c, cluster, "oci-chain")
	v.create(&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"},
		Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}},
		v.app("web", "hello"),
		testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example/fleet", AgentUsername: "a", AgentPassword: "p"}),
		route(ws, "all", v1alpha1.OCIStorageRouteSpec{Priority: 10, ClusterSelectors: selector(clusterv1beta2.ClusterSetLabel, cluster), Registries: []string{"source"}}))

	appBase, chainBase := denials(t, appPolicy), denials(t, chainPolicy)
	start := time.Now()
	defer runControllers(t, sharedHub.Config, "apps,routing")()
	// The app says so once (other workspaces' objects of the shared hub are reconciled at the
	// start too: their writes are done before the window).
	testkit.Eventually(t, time.Minute, "the app DeliveryFailed", func() error {
		var app v1alpha1.FleetApp
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: "web"}, &app); err != nil {
			return err
		}
		if d := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.DeliveredCondition); d == nil || d.Reason != v1alpha1.ReasonDeliveryFailed || !strings.Contains(d.Message, "refuses ManifestWorks") {
			return fmt.Errorf("Delivered %+v, want DeliveryFailed naming the refusal", d)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	appStatus, routeStatus, storageStatus := writes("fleetapp", "status"), writes("ocistorageroute", "status"), writes("clusterocistorage", "status")
	time.Sleep(window - time.Since(start))
	got := map[string]float64{
		"app work attempts":               denials(t, appPolicy) - appBase,
		"chain work attempts":             denials(t, chainPolicy) - chainBase,
		"FleetApp status writes":          writes("fleetapp", "status") - appStatus,
		"OCIStorageRoute status writes":   writes("ocistorageroute", "status") - routeStatus,
		"ClusterOCIStorage status writes": writes("clusterocistorage", "status") - storageStatus,
	}
	t.Logf("in %v of refused works: %v", time.Since(start).Round(time.Second), got)
	// Attempts come after 0.25-0.5 s, 0.5-1 s, ... doubling: at most 7 fit in 20 s.
	for _, k := range []string{"app work attempts", "chain work attempts"} {
		if got[k] < 2 || got[k] > 8 {
			t.Errorf("%s: %.0f in %v, want 2 to 8 (back-off from 500 ms with jitter)", k, got[k], window)
		}
	}
	// Status said DeliveryFailed once; the same refusal again writes nothing.
	for _, k := range []string{"FleetApp status writes", "OCIStorageRoute status writes", "ClusterOCIStorage status writes"} {
		if got[k] > 0 {
			t.Errorf("%s: %.0f after the first, want none: status is written when it changes", k, got[k])
		}
	}
}

// TestClusterLabelsMoveWhatDependsOnIt: a ManagedCluster leaving the set bound to its workspace
// (a label change) takes its join's labels away and leaves its app and storage request NotBound
// and its chain undelivered; coming back, and re-registering (deleted and created again with the
// same name), brings each back, within seconds and without a controller restart.
func TestClusterLabelsMoveWhatDependsOnIt(t *testing.T) {
	const ws, cluster = "move-ws", "move-01"
	const prompt = 15 * time.Second
	_, c := startHub(t)
	av := appView{t, c, ws, cluster}
	sv := siteView{t, c, ws}
	av.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}}, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "move-elsewhere"}})
	managedCluster(t, c, ws, cluster, "")
	defer runControllers(t, sharedHub.Config, "cluster-joins,apps,storage-site,routing")()
	defer cleanJoins(t, c, ws)
	sd := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "sd"}, Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: cluster}}
	av.create(sv.site("berlin", siteSpec()), sv.join("j", cluster, "berlin", "", "gpu"),
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		av.app("web", "hello"), sd,
		testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example/fleet", AgentUsername: "a", AgentPassword: "p"}),
		route(ws, "all", v1alpha1.OCIStorageRouteSpec{Priority: 10, ClusterSelectors: selector(clusterv1beta2.ClusterSetLabel, cluster), Registries: []string{"source"}}))

	chain := types.NamespacedName{Namespace: cluster, Name: controller.WorkName(ws)}
	storageWork := types.NamespacedName{Namespace: cluster, Name: storagework.WorkName(ws, "sd")}
	exists := func(key types.NamespacedName, want bool) {
		t.Helper()
		testkit.Eventually(t, prompt, fmt.Sprintf("ManifestWork %s present=%v", key, want), func() error {
			err := c.Get(t.Context(), key, &workv1.ManifestWork{})
			if got := err == nil; got != want {
				return fmt.Errorf("present=%v (%v)", got, err)
			}
			return client.IgnoreNotFound(err)
		})
	}
	storageReady := func(notReason string, want bool) {
		t.Helper()
		testkit.Eventually(t, prompt, fmt.Sprintf("StorageSiteDeployment sd Ready reason %s=%v", notReason, want), func() error {
			var d storagev1alpha2.StorageSiteDeployment
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(sd), &d); err != nil {
				return err
			}
			r := meta.FindStatusCondition(d.Status.Conditions, storagev1alpha2.ReadyCondition)
			if r == nil || r.ObservedGeneration != d.Generation || (r.Reason == notReason) != want {
				return fmt.Errorf("Ready %+v", r)
			}
			return nil
		})
	}
	delivered := func(what string, start time.Time) {
		t.Helper()
		sv.joinCondition("j", v1alpha1.JoinedCondition, "True/Labelled")
		sv.labelsAre(cluster, map[string]string{v1alpha1.SiteLabel: "berlin", v1alpha1.CapabilityLabelPrefix + "gpu": "true"}, nil)
		av.work("web", nil)
		exists(chain, true)
		exists(storageWork, true)
		storageReady(v1alpha1.ReasonNotBound, false)
		wakesWithin(t, what, start, prompt)
	}
	delivered("first delivery", time.Now())
	time.Sleep(time.Second)

	// The cluster leaves the bound set: everything of the workspace on it stops, by its rule.
	start := time.Now()
	testkit.Update(t, c, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, func(m *clusterv1.ManagedCluster) {
		m.Labels[clusterv1beta2.ClusterSetLabel] = "move-elsewhere"
	})
	sv.joinCondition("j", v1alpha1.JoinedCondition, "False/NotBound", "move-elsewhere")
	sv.labelsAre(cluster, map[string]string{}, nil)
	av.appIs("web", v1alpha1.AppPending, v1alpha1.ReasonNotBound, nil)
	storageReady(v1alpha1.ReasonNotBound, true)
	exists(chain, false)
	wakesWithin(t, "everything NotBound after the label change", start, prompt)

	// Back in the bound set.
	start = time.Now()
	testkit.Update(t, c, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, func(m *clusterv1.ManagedCluster) {
		m.Labels[clusterv1beta2.ClusterSetLabel] = cluster
	})
	delivered("everything back after the label change", start)

	// Re-registration: the cluster goes, with what the hub wrote in its namespace, and comes back.
	if err := c.Delete(t.Context(), &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}); err != nil {
		t.Fatal(err)
	}
	sv.joinCondition("j", v1alpha1.JoinedCondition, "False/"+v1alpha1.ReasonClusterNotFound)
	exists(chain, false)
	for _, key := range []types.NamespacedName{storageWork, {Namespace: cluster, Name: "app." + ws + ".web"}} {
		if err := c.Delete(t.Context(), &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		exists(key, false)
	}
	time.Sleep(time.Second)
	start = time.Now()
	registerCluster(t, c, cluster, "")
	delivered("everything back after re-registration", start)
}

// TestResyncRepairsWhatNoWatchShows: the chart of an app of a workspace bound to no cluster set
// (so no binding, set or work event ever names it) whose status is changed by hand is repaired
// at the informers' resync, which the generation filter of the charts' watch would drop.
func TestResyncRepairsWhatNoWatchShows(t *testing.T) {
	const ws, cluster = "resync-ws", "resync-01"
	const period = 2 * time.Second
	_, c := startHub(t)
	v := appView{t, c, ws, cluster}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		v.app("web", "hello"))
	mgr, err := controller.NewHubManager(sharedHub.Config, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "apps", QPS: 500, Burst: 1000, SyncPeriod: period,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer testkit.Run(t, mgr)()
	v.appIs("web", v1alpha1.AppPending, v1alpha1.ReasonNotBound, nil)

	// The chart's status counts its apps; no watch shows an edit of it (the app's own status has
	// a watch of its own now: TestHandEditedStatusRepaired).
	chartApps := func() (v1alpha1.FleetChart, error) {
		var chart v1alpha1.FleetChart
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: "hello"}, &chart)
		if err == nil && chart.Status.Apps != 1 {
			err = fmt.Errorf("chart status counts %d apps, want 1", chart.Status.Apps)
		}
		return chart, err
	}
	var chart v1alpha1.FleetChart
	testkit.Eventually(t, converge, "the chart counting its app", func() (err error) { chart, err = chartApps(); return err })
	chart.Status.Apps = 7
	if err := c.Status().Update(t.Context(), &chart); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testkit.Eventually(t, 4*period, "the chart's hand-edited status repaired", func() error { _, err := chartApps(); return err })
	wakesWithin(t, "the hand-edited status repaired", start, 4*period)
}
