package testbed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

const fleetConverge = 60 * time.Second

// probeWork is a ManifestWork for cluster that carries ConfigMap default/fleet-probe with
// greeting, and asks for two status feedback values: the greeting (a string) and the whole data
// (raw JSON, behind the agent's RawFeedbackJsonString feature gate).
func probeWork(cluster, greeting string) *workv1.ManifestWork {
	cm, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "fleet-probe", "namespace": "default"},
		"data":     map[string]any{"greeting": greeting},
	})
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: cluster},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: cm}}}},
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: "fleet-probe", Namespace: "default"},
				FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
					{Name: "greeting", Path: ".data.greeting"},
					{Name: "data", Path: ".data"},
				}}},
			}},
		},
	}
}

// feedback returns the status feedback values the agent reported for the work's only manifest.
func feedback(w *workv1.ManifestWork) (map[string]workv1.FieldValue, error) {
	if !meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
		return nil, fmt.Errorf("work %s/%s not applied: %+v", w.Namespace, w.Name, w.Status.Conditions)
	}
	if n := len(w.Status.ResourceStatus.Manifests); n != 1 {
		return nil, fmt.Errorf("work %s/%s: %d manifest statuses", w.Namespace, w.Name, n)
	}
	values := map[string]workv1.FieldValue{}
	for _, v := range w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values {
		values[v.Name] = v.Value
	}
	return values, nil
}

// expectFeedback waits until the hub's work reports greeting through both feedback rules.
func expectFeedback(t *testing.T, ctx context.Context, hub client.Client, cluster, greeting string, f *testbed.Fleet) {
	t.Helper()
	eventually(t, fleetConverge, "status feedback of "+cluster+"/probe", f, func() error {
		var w workv1.ManifestWork
		if err := hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "probe"}, &w); err != nil {
			return err
		}
		values, err := feedback(&w)
		if err != nil {
			return err
		}
		g, d := values["greeting"], values["data"]
		if g.Type != workv1.String || g.String == nil || *g.String != greeting {
			return fmt.Errorf("greeting feedback %+v, want string %q", g, greeting)
		}
		if d.Type != workv1.JsonRaw || d.JsonRaw == nil || *d.JsonRaw != `{"greeting":"`+greeting+`"}` {
			return fmt.Errorf("data feedback %+v, want raw JSON of greeting %q", d, greeting)
		}
		return nil
	})
}

func TestFleet(t *testing.T) {
	ctx := t.Context()
	begin := time.Now()
	f := testbed.StartFleetT(t, testbed.FleetOptions{Clusters: 2, StatusSyncInterval: 2 * time.Second})
	t.Logf("fleet of %d clusters started in %v", len(f.Clusters), time.Since(begin).Round(time.Millisecond))
	hub, err := f.Hub.Client()
	if err != nil {
		t.Fatal(err)
	}
	one, two := f.Clusters[0], f.Clusters[1]
	if one.Name != "spoke-1" || two.Name != "spoke-2" || f.Cluster("spoke-2") != two || f.Cluster("nope") != nil {
		t.Fatalf("clusters %s, %s", one.Name, two.Name)
	}

	t.Run("registered as OCM registration would", func(t *testing.T) {
		for _, c := range f.Clusters {
			var mc clusterv1.ManagedCluster
			if err := hub.Get(ctx, types.NamespacedName{Name: c.Name}, &mc); err != nil {
				t.Fatal(err)
			}
			for _, cond := range []string{clusterv1.ManagedClusterConditionHubAccepted, clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable} {
				if !meta.IsStatusConditionTrue(mc.Status.Conditions, cond) {
					t.Errorf("ManagedCluster %s: %s not True: %+v", c.Name, cond, mc.Status.Conditions)
				}
			}
			cs, err := kubernetes.NewForConfig(c.Config)
			if err != nil {
				t.Fatal(err)
			}
			v, err := cs.Discovery().ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			if !mc.Spec.HubAcceptsClient || mc.Status.Version.Kubernetes != v.String() {
				t.Errorf("ManagedCluster %s: hubAcceptsClient %v, version %q, want the cluster's %q", c.Name, mc.Spec.HubAcceptsClient, mc.Status.Version.Kubernetes, v)
			}
		}
	})

	t.Run("a work is applied on its cluster and its status feedback comes back", func(t *testing.T) {
		if err := hub.Create(ctx, probeWork(one.Name, "hello")); err != nil {
			t.Fatal(err)
		}
		spoke, err := one.Client()
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, fleetConverge, "ConfigMap on "+one.Name, f, func() error {
			var cm corev1.ConfigMap
			if err := spoke.Get(ctx, types.NamespacedName{Namespace: "default", Name: "fleet-probe"}, &cm); err != nil {
				return err
			}
			if cm.Data["greeting"] != "hello" {
				return fmt.Errorf("greeting %q", cm.Data["greeting"])
			}
			return nil
		})
		expectFeedback(t, ctx, hub, one.Name, "hello", f)

		// The other cluster gets nothing: works go only to the cluster whose namespace holds them.
		other, err := two.Client()
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := other.Get(ctx, types.NamespacedName{Namespace: "default", Name: "fleet-probe"}, &cm); !apierrors.IsNotFound(err) {
			t.Errorf("%s has default/fleet-probe too (err %v)", two.Name, err)
		}
	})

	t.Run("after a restart of the agent a change still converges", func(t *testing.T) {
		if err := one.RestartAgent(ctx); err != nil {
			t.Fatal(err)
		}
		if !one.AgentRunning() {
			t.Fatal("agent not running after its restart")
		}
		testkit.Update(t, hub, probeWork(one.Name, "again"), func(w *workv1.ManifestWork) { w.Spec = probeWork(one.Name, "again").Spec })
		expectFeedback(t, ctx, hub, one.Name, "again", f)
	})

	t.Run("a stopped agent applies nothing until it starts again", func(t *testing.T) {
		if err := two.StopAgent(); err != nil {
			t.Fatal(err)
		}
		if two.AgentRunning() {
			t.Fatal("agent still running")
		}
		if err := hub.Create(ctx, probeWork(two.Name, "later")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		var w workv1.ManifestWork
		if err := hub.Get(ctx, types.NamespacedName{Namespace: two.Name, Name: "probe"}, &w); err != nil {
			t.Fatal(err)
		}
		if len(w.Status.Conditions) != 0 {
			t.Errorf("work of a cluster whose agent is stopped has conditions %+v", w.Status.Conditions)
		}
		if err := two.StartAgent(ctx); err != nil {
			t.Fatal(err)
		}
		expectFeedback(t, ctx, hub, two.Name, "later", f)
	})

	t.Run("the agent's hub credentials reach its own cluster namespace only", func(t *testing.T) {
		agent, err := client.New(one.HubConfig, client.Options{Scheme: testbed.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		var works workv1.ManifestWorkList
		if err := agent.List(ctx, &works, client.InNamespace(one.Name)); err != nil || len(works.Items) != 1 {
			t.Errorf("listing its own works: %d, %v", len(works.Items), err)
		}
		forbidden := map[string]error{
			"list works of " + two.Name: agent.List(ctx, &works, client.InNamespace(two.Name)),
			"get a work of " + two.Name: agent.Get(ctx, types.NamespacedName{Namespace: two.Name, Name: "probe"}, &workv1.ManifestWork{}),
			"list works of all":         agent.List(ctx, &works),
			"create a work":             agent.Create(ctx, probeWork(one.Name, "mine")),
			"delete its work":           agent.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: one.Name, Name: "probe"}}),
			"list secrets of its ns":    agent.List(ctx, &corev1.SecretList{}, client.InNamespace(one.Name)),
			"get its ManagedCluster":    agent.Get(ctx, types.NamespacedName{Name: one.Name}, &clusterv1.ManagedCluster{}),
		}
		for what, err := range forbidden {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s: got %v, want Forbidden", what, err)
			}
		}
	})

	t.Run("fleet-controller agent's credentials hold only the chart's roles", func(t *testing.T) {
		fromFile, err := clientcmd.BuildConfigFromFlags("", one.AgentKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for name, cfg := range map[string]*rest.Config{"AgentConfig": one.AgentConfig, "AgentKubeconfig": fromFile} {
			agent, err := client.New(cfg, client.Options{Scheme: testbed.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			if err := agent.List(ctx, &corev1.SecretList{}, client.InNamespace("fleet-system")); err != nil {
				t.Errorf("%s: listing the Secrets of fleet-system: %v", name, err)
			}
			forbidden := map[string]error{
				"list secrets of kube-system": agent.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")),
				"list secrets of all":         agent.List(ctx, &corev1.SecretList{}),
				"create a ClusterRole":        agent.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-probe"}}),
				"delete a namespace":          agent.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testbed.AgentNamespace}}),
			}
			for what, err := range forbidden {
				if !apierrors.IsForbidden(err) {
					t.Errorf("%s: %s: got %v, want Forbidden", name, what, err)
				}
			}
		}
	})

	t.Run("stop", func(t *testing.T) {
		if err := f.Stop(); err != nil {
			t.Fatal(err)
		}
		if one.AgentRunning() || two.AgentRunning() {
			t.Error("an agent still runs after Stop")
		}
		if err := f.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
}

func TestFleetOptionsChecked(t *testing.T) {
	for _, opts := range []testbed.FleetOptions{
		{ClusterNames: []string{"eu-01", "eu-01"}},
		{ClusterNames: []string{"EU_01"}},
		{Clusters: -1},
	} {
		if _, err := testbed.StartFleet(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "local fleet") {
			t.Errorf("%+v: got %v", opts, err)
		}
	}
	if _, err := testbed.StartFleet(t.Context(), testbed.FleetOptions{BinDir: t.TempDir()}); !errors.Is(err, testbed.ErrBinariesMissing) ||
		!strings.Contains(err.Error(), "make tools") {
		t.Errorf("empty bin dir: got %v", err)
	}
	// Without the work agent: what to build is named.
	bin := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testbed.StartFleet(t.Context(), testbed.FleetOptions{BinDir: bin}); !errors.Is(err, testbed.ErrBinariesMissing) ||
		!strings.Contains(err.Error(), "no work-agent") {
		t.Errorf("bin dir without work-agent: got %v", err)
	}
}

// TestFleetAgentFailure: an agent that exits at once makes StartFleet fail with its output, and
// leaves nothing running and no folder behind.
func TestFleetAgentFailure(t *testing.T) {
	bin := fakeAgentBin(t, "#!/bin/sh\necho 'fake work-agent: cannot reach the hub' >&2\nexit 3\n")
	before := ourFleetDirs(t)
	_, err := testbed.StartFleet(t.Context(), testbed.FleetOptions{Clusters: 1, BinDir: bin})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the hub") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("StartFleet error = %v, want one quoting the agent's output and exit status", err)
	}
	if pids := processesNaming(bin); len(pids) > 0 {
		t.Errorf("processes %v still run after the failed start", pids)
	}
	if after := ourFleetDirs(t); len(after) != len(before) {
		t.Errorf("fleet folders %v left after the failed start (before: %v)", after, before)
	}
}

// TestReapStaleFleet plays a run killed before Stop: the next start's sweep ends the fleet's work
// agents, kube-apiservers and etcds and removes its folder.
func TestReapStaleFleet(t *testing.T) {
	f := testbed.StartFleetT(t, testbed.FleetOptions{Clusters: 1})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.Dir, "owner"), []byte(strconv.Itoa(dead.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	tempDirs, err := os.ReadFile(filepath.Join(f.Dir, "tempdirs"))
	if err != nil || len(strings.Fields(string(tempDirs))) != 2 {
		t.Fatalf("the fleet recorded no envtest folders of its hub and cluster: %q, %v", tempDirs, err)
	}
	if pids := processesNaming(f.Dir); len(pids) != 3 {
		t.Fatalf("processes of the fleet's cluster: %v, want its etcd, kube-apiserver and work agent", pids)
	}

	testbed.ReapStaleFleets()

	if pids := processesNaming(f.Dir); len(pids) > 0 {
		t.Errorf("processes %v of the stale fleet survived", pids)
	}
	for _, d := range append(strings.Fields(string(tempDirs)), f.Dir) {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("folder %s of the stale fleet left (stat: %v)", d, err)
		}
	}
	_ = f.Stop() // its processes are gone already; this stops the hub
}

// fakeAgentBin is a binaries folder with the real etcd and kube-apiserver and script for the work
// agent; it skips the test without the real ones.
func fakeAgentBin(t *testing.T, script string) string {
	t.Helper()
	real, err := testbed.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.CheckBinaries(real); err != nil {
		if os.Getenv(testbed.EnvRequire) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, testbed.AgentBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// ourFleetDirs lists the fleet folders this process owns.
func ourFleetDirs(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "fleet-hub-fleet-*"))
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, d := range dirs {
		if owner, err := os.ReadFile(filepath.Join(d, "owner")); err == nil && string(owner) == strconv.Itoa(os.Getpid()) {
			ours = append(ours, d)
		}
	}
	return ours
}

// processesNaming lists the processes with an argument (or executable) inside dir.
func processesNaming(dir string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(cmdline), dir+string(filepath.Separator)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(filepath.Dir(p), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie, ended but not yet reaped
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestSpokeCRDs(t *testing.T) {
	crds, err := testbed.SpokeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	if want := []string{"appliedmanifestworks.work.open-cluster-management.io", "ocipulls.fleet.umkim.io", "fleetreleases.fleet.umkim.io", "registryprobes.fleet.umkim.io"}; !slices.Equal(names, want) {
		t.Fatalf("spoke CRDs %v, want %v: the work agent's and the agent's", names, want)
	}
}

// eventually is testkit.Eventually, with the tails of the fleet's agent logs on failure.
func eventually(t *testing.T, timeout time.Duration, what string, f *testbed.Fleet, check func() error) {
	t.Helper()
	testkit.Eventually(t, timeout, what, check, func() string {
		var logs strings.Builder
		for _, c := range f.Clusters {
			logs.WriteString(c.AgentLog())
		}
		return logs.String()
	})
}
