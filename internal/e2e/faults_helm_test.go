package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// helmRecoveryGoal is how soon after the agent is back a release an interrupted operation left
// pending must be Deployed again.
const helmRecoveryGoal = 2 * time.Minute

// helmAgentKilled is the Helm part of TestFaultAppOnTheFleet, on its fleet (eu-01 joined to site
// lab, the apps reconciler running): the cluster's in-process agent is stopped and the agent
// binary runs in its place, as the agent's ServiceAccount. An app of testbed.HookedChart (its
// pre-install and pre-upgrade hook is a Pod no kubelet runs: Helm waits until the test marks it
// Succeeded) is created on the hub, and the agent is SIGKILLed while Helm waits on the hook of
// the install, then of an upgrade. Each time the release is left pending-install or
// pending-upgrade; the restarted agent takes over the dead agent's operation Lease once it
// lapses, uninstalls the interrupted install or rolls the interrupted upgrade back, and deploys
// again: the hub shows the app Deployed at the revision expected within helmRecoveryGoal, with
// the values on the cluster. Then SIGTERM during an upgrade: the agent exits within the chart's
// grace period, Helm has recorded the upgrade failed (not pending) and the Lease is gone. The
// app's deletion then uninstalls the release. The in-process agent runs again afterwards. bin is
// the fleet-controller binary.
func (p *pullFleet) helmAgentKilled(t *testing.T, bin string) {
	const app, target = "hooked", "app-recover"
	relName := app
	ctx, hubc, spoke := p.ctx, p.hub, p.agents[pullCluster].spoke
	cluster := p.fleet.Cluster(pullCluster)
	p.source.PushChartT(t, "charts/hooked", testbed.HookedChart("hooked", "0.1.0"))
	if _, err := p.mirror.Copy(ctx, p.source, "charts/hooked", "0.1.0"); err != nil {
		t.Fatal(err)
	}

	p.agents[pullCluster].stop()
	var proc *testkit.Process
	defer func() {
		if proc != nil {
			proc.Kill()
		}
		p.startAgent(pullCluster)
	}()
	cache := filepath.Join(t.TempDir(), "cache")
	runs := 0
	start := func() *testkit.Process {
		runs++
		return testkit.StartProcess(t, bin, fmt.Sprintf("agent-%d", runs), "agent", "--kubeconfig", cluster.AgentKubeconfig,
			"--cache-dir", cache, "--drift-interval=0", "--zap-log-level=debug")
	}
	hook := testkit.CompleteHooks(t, spoke, target, relName+"-hook")
	proc = start()

	a := &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: pullWS, Name: app}, Spec: v1alpha1.FleetAppSpec{
		Chart: "hooked", Cluster: pullCluster, Namespace: target, Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"one"}`)}}}
	for _, o := range []client.Object{
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: pullWS, Name: "hooked"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hooked", Version: "0.1.0"}},
		a,
	} {
		if err := hubc.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	explain := func() string {
		return fmt.Sprintf("app status %+v; Helm history %v\n%s", a.Status, helmHistory(t, spoke, target, relName), proc.Log())
	}

	// interrupt waits until Helm waits on the hook of revision, then stops the agent with sig and
	// checks the revision's status Helm recorded.
	interrupt := func(sig syscall.Signal, revision int, want string) {
		t.Helper()
		testkit.Eventually(t, converge, fmt.Sprintf("Helm waiting on the hook of revision %d", revision), func() error {
			history := helmHistory(t, spoke, target, relName)
			if len(history) == 0 {
				return fmt.Errorf("no revision")
			}
			last := history[len(history)-1]
			if last.version != revision || (last.status != "pending-install" && last.status != "pending-upgrade") {
				return fmt.Errorf("revision %d %s", last.version, last.status)
			}
			var pod corev1.Pod
			if err := spoke.Get(ctx, client.ObjectKey{Namespace: target, Name: relName + "-hook"}, &pod); err != nil {
				return err
			}
			if pod.Status.Phase == corev1.PodSucceeded || pod.CreationTimestamp.Time.Before(last.created.Add(-time.Second)) {
				return fmt.Errorf("hook Pod %s of an earlier revision", pod.Status.Phase)
			}
			return nil
		}, explain)
		time.Sleep(time.Second) // inside the wait, past a renewal
		stopped := time.Now()
		if sig == syscall.SIGKILL {
			proc.Kill()
		} else {
			_ = proc.Cmd.Process.Signal(sig)
			exited := make(chan struct{})
			go func() { _ = proc.Cmd.Wait(); close(exited) }()
			select {
			case <-exited:
				t.Logf("SIGTERM: the agent exited in %s", time.Since(stopped).Round(time.Millisecond))
			case <-time.After(10 * time.Second): // the chart's terminationGracePeriodSeconds
				t.Errorf("SIGTERM: the agent still runs after the chart's 10 s grace period")
				proc.Kill()
			}
		}
		history := helmHistory(t, spoke, target, relName)
		if len(history) == 0 || history[len(history)-1].version != revision || history[len(history)-1].status != want {
			t.Fatalf("after %s: Helm history %v; want revision %d %s last", sig, history, revision, want)
		}
	}
	// recovered restarts the agent and waits until the hub shows the app Deployed at revision
	// for its current generation, with greeting on the cluster, within helmRecoveryGoal.
	recovered := func(what string, revision int32, greeting string) {
		t.Helper()
		hook.Store(true)
		back := time.Now()
		proc = start()
		testkit.Eventually(t, helmRecoveryGoal, what, func() error {
			if err := hubc.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
				return err
			}
			if a.Status.ObservedGeneration != a.Generation || a.Status.Phase != v1alpha1.AppDeployed || a.Status.Revision != revision {
				return fmt.Errorf("generation %d observed %d, phase %s revision %d: %s", a.Generation, a.Status.ObservedGeneration, a.Status.Phase, a.Status.Revision, a.Status.Message)
			}
			var cm corev1.ConfigMap
			if err := spoke.Get(ctx, client.ObjectKey{Namespace: target, Name: relName + "-hello"}, &cm); err != nil {
				return err
			}
			if cm.Data["greeting"] != greeting {
				return fmt.Errorf("greeting on the cluster %q, want %q", cm.Data["greeting"], greeting)
			}
			return nil
		}, explain)
		t.Logf("%s: Deployed at revision %d on the hub %s after the agent restarted (goal %s)", what, revision, time.Since(back).Round(100*time.Millisecond), helmRecoveryGoal)
		hook.Store(false)
	}
	values := func(greeting string) {
		testkit.Update(t, hubc, a, func(a *v1alpha1.FleetApp) {
			a.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"` + greeting + `"}`)}
		})
	}
	lease := client.ObjectKey{Namespace: ocichain.Namespace, Name: agent.OperationLeaseName(target, relName)}

	// 1. SIGKILL during the install: pending-install, uninstalled and installed again.
	interrupt(syscall.SIGKILL, 1, "pending-install")
	recovered("install interrupted by SIGKILL", 1, "one")
	wantHelmHistory(t, spoke, target, relName, "deployed")
	wantScrape(t, proc, "fleet_agent_release_recoveries_total", `action="uninstalled",status="pending-install"`, 1)

	// 2. SIGKILL during an upgrade: pending-upgrade, marked failed, rolled back to revision 1
	// (revision 3), upgraded again (revision 4).
	values("two")
	interrupt(syscall.SIGKILL, 2, "pending-upgrade")
	recovered("upgrade interrupted by SIGKILL", 4, "two")
	wantHelmHistory(t, spoke, target, relName, "superseded", "failed", "superseded", "deployed")
	wantScrape(t, proc, "fleet_agent_release_recoveries_total", `action="rolled-back",status="pending-upgrade"`, 1)

	// 3. SIGTERM during an upgrade: Helm records it failed, the Lease is deleted, and the
	// restarted agent upgrades at once (nothing to recover).
	values("three")
	interrupt(syscall.SIGTERM, 5, "failed")
	if err := spoke.Get(ctx, lease, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("operation Lease %s after SIGTERM: %v, want it deleted", lease, err)
	}
	recovered("upgrade stopped by SIGTERM", 6, "three")
	wantScrape(t, proc, "fleet_agent_release_recoveries_total", "", 0)
	// Nothing runs Helm again behind the deploy (a reconcile on a cache without its status
	// write), so the release's one worker is free to uninstall.
	time.Sleep(2 * time.Second)
	if h := helmHistory(t, spoke, target, relName); len(h) != 6 {
		t.Errorf("Helm history 2 s after the recovery: %v, want 6 revisions", h)
	}
	deleting := time.Now()

	// The app's deletion uninstalls the release, and its Lease goes.
	if err := hubc.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, converge, "the hooked app gone and its release uninstalled", func() error {
		if err := hubc.Get(ctx, client.ObjectKeyFromObject(a), &v1alpha1.FleetApp{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("app still on the hub: %v", err)
		}
		if h := helmHistory(t, spoke, target, relName); len(h) != 0 {
			return fmt.Errorf("Helm history %v", h)
		}
		return nil
	}, explain)
	t.Logf("the app went %s after its deletion", time.Since(deleting).Round(10*time.Millisecond))
	if err := spoke.Get(ctx, lease, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("operation Lease %s after the uninstall: %v, want it deleted", lease, err)
	}
}

// helmRevision is one revision of a Helm release, as its storage Secret's labels say.
type helmRevision struct {
	version int
	status  string
	created time.Time
}

func (r helmRevision) String() string { return fmt.Sprintf("%d:%s", r.version, r.status) }

// helmHistory reads the revisions of release name in ns from Helm's storage Secrets, oldest
// first.
func helmHistory(t *testing.T, c client.Client, ns, name string) []helmRevision {
	t.Helper()
	var secrets corev1.SecretList
	if err := c.List(context.Background(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	var out []helmRevision
	for _, s := range secrets.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		if err != nil {
			t.Fatalf("Helm Secret %s: version %q", s.Name, s.Labels["version"])
		}
		out = append(out, helmRevision{version: v, status: s.Labels["status"], created: s.CreationTimestamp.Time})
	}
	slices.SortFunc(out, func(a, b helmRevision) int { return a.version - b.version })
	return out
}

// wantHelmHistory checks the statuses of the release's revisions, oldest first.
func wantHelmHistory(t *testing.T, c client.Client, ns, name string, want ...string) {
	t.Helper()
	var got []string
	for _, r := range helmHistory(t, c, ns, name) {
		got = append(got, r.status)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Helm history of %s: %v, want %v", name, got, want)
	}
}

// wantScrape checks a metric of the process.
func wantScrape(t *testing.T, p *testkit.Process, metric, filter string, want float64) {
	t.Helper()
	if got, err := p.Scrape(metric, filter); err != nil || got != want {
		t.Errorf("%s{%s} = %v (%v), want %v", metric, filter, got, err, want)
	}
}
