package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// recoveryGoal is how soon after the agent is back a release an interrupted operation left
// pending must be Deployed again.
const recoveryGoal = 2 * time.Minute

// TestReleaseSurvivesAgentKill runs the real agent binary, as the agent's ServiceAccount, and
// kills it with SIGKILL while Helm waits on a chart's pre-install hook, then on its pre-upgrade
// hook (no kubelet runs the hook Pod: Helm waits until the test marks it Succeeded). Each time
// the release is left pending-install or pending-upgrade; the restarted agent takes over the
// dead agent's operation Lease once it lapses, uninstalls the interrupted install or rolls the
// interrupted upgrade back to the deployed revision, and deploys again: Deployed within
// recoveryGoal, no revision pending. Then SIGTERM during an upgrade: the agent exits within the
// chart's grace period and Helm has recorded the upgrade failed, not pending.
func TestReleaseSurvivesAgentKill(t *testing.T) {
	const target, relName = "app-recover", "hooked"
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/hooked", testbed.HookedChart("hooked", "0.1.0"))
	putChain(t, c, ocichain.Chain{Workspace: "recover", Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	bin := testkit.Binary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	kubeconfig := agentKubeconfig(t)
	cache := filepath.Join(t.TempDir(), "cache")
	runs := 0
	start := func() *testkit.Process {
		runs++
		return testkit.StartProcess(t, bin, fmt.Sprintf("agent-%d", runs), "agent", "--kubeconfig", kubeconfig, "--cache-dir", cache, "--drift-interval=0", "--zap-log-level=debug")
	}
	helm, err := agent.HelmConfig(spoke.Config, target)
	if err != nil {
		t.Fatal(err)
	}
	hook := completeHooks(t, c, target, relName+"-hook")

	proc := start()
	newPull(t, c, ocichain.Namespace, "hooked", v1alpha1.OCIPullSpec{Workspace: "recover", Repository: "charts/hooked", Tag: "0.1.0"})
	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "hooked"},
		Spec: v1alpha1.FleetReleaseSpec{Workspace: "recover", App: "hooked", Pull: "hooked", ReleaseName: relName, Namespace: target,
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"one"}`)}},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forceDelete(t, c, rel) })

	// interrupt waits until Helm waits on the hook of revision, with status, then kills the agent
	// with sig and checks what Helm recorded.
	interrupt := func(sig syscall.Signal, revision int, want release.Status) {
		t.Helper()
		testkit.Eventually(t, time.Minute, fmt.Sprintf("Helm waiting on the hook of revision %d", revision), func() error {
			last, err := helm.Releases.Last(relName)
			if err != nil {
				return err
			}
			if last.Version != revision || last.Info.Status.IsPending() == false {
				return fmt.Errorf("revision %d %s", last.Version, last.Info.Status)
			}
			var pod corev1.Pod
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: target, Name: relName + "-hook"}, &pod); err != nil {
				return err
			}
			if pod.Status.Phase == corev1.PodSucceeded || pod.CreationTimestamp.Time.Before(last.Info.LastDeployed.Time.Add(-time.Second)) {
				return fmt.Errorf("hook Pod %s of an earlier revision", pod.Status.Phase)
			}
			return nil
		}, func() string { return describe(t, c, rel) })
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
		last, err := helm.Releases.Last(relName)
		if err != nil || last.Version != revision || last.Info.Status != want {
			t.Fatalf("after %s: revision %v status %v (%v); want revision %d %s", sig, last.Version, last.Info.Status, err, revision, want)
		}
	}
	// recovered restarts the agent and waits until the release is Deployed for generation at
	// revision, within recoveryGoal; it returns the new process.
	recovered := func(what string, generation int64, revision int32) {
		t.Helper()
		hook.Store(true)
		back := time.Now()
		proc = start()
		var got v1alpha1.FleetRelease
		testkit.Eventually(t, recoveryGoal, what, func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), &got); err != nil {
				return err
			}
			return deployed(revision, generation)(got.Status)
		}, func() string { return describe(t, c, rel) })
		took := time.Since(back)
		t.Logf("%s: Deployed at revision %d %s after the agent restarted (goal %s)", what, revision, took.Round(100*time.Millisecond), recoveryGoal)
		hook.Store(false)
	}

	// 1. SIGKILL during the install: pending-install, uninstalled and installed again.
	interrupt(syscall.SIGKILL, 1, release.StatusPendingInstall)
	recovered("install interrupted by SIGKILL", 1, 1)
	wantHistory(t, helm.Releases, relName, release.StatusDeployed)
	wantConfigMap(t, c, target, relName+"-hello", "one")
	wantScrape(t, proc, "fleet_agent_release_recoveries_total", `action="uninstalled",status="pending-install"`, 1)

	// 2. SIGKILL during an upgrade: pending-upgrade, marked failed, rolled back to revision 1
	// (revision 3), upgraded again (revision 4).
	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) { r.Spec.Values.Raw = []byte(`{"greeting":"two"}`) })
	interrupt(syscall.SIGKILL, 2, release.StatusPendingUpgrade)
	recovered("upgrade interrupted by SIGKILL", 2, 4)
	wantHistory(t, helm.Releases, relName, release.StatusSuperseded, release.StatusFailed, release.StatusSuperseded, release.StatusDeployed)
	wantConfigMap(t, c, target, relName+"-hello", "two")
	wantScrape(t, proc, "fleet_agent_release_recoveries_total", `action="rolled-back",status="pending-upgrade"`, 1)

	// 3. SIGTERM during an upgrade: Helm records it failed, the Lease is deleted, and the
	// restarted agent upgrades at once (nothing to recover).
	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) { r.Spec.Values.Raw = []byte(`{"greeting":"three"}`) })
	interrupt(syscall.SIGTERM, 5, release.StatusFailed)
	lease := client.ObjectKey{Namespace: ocichain.Namespace, Name: agent.OperationLeaseName(target, relName)}
	if err := c.Get(t.Context(), lease, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("operation Lease %s after SIGTERM: %v, want it deleted", lease, err)
	}
	recovered("upgrade stopped by SIGTERM", 3, 6)
	wantConfigMap(t, c, target, relName+"-hello", "three")
	wantScrape(t, proc, "fleet_agent_release_recoveries_total", "", 0)

	// Nothing runs Helm again behind the deploy (a reconcile on a cache without its status write):
	// the release's one worker is free to uninstall.
	time.Sleep(2 * time.Second)
	if last, err := helm.Releases.Last(relName); err != nil || last.Version != 6 {
		t.Errorf("Helm's last revision 2 s after the recovery: %v (%v), want 6", last, err)
	}
	deleting := time.Now()
	deleteRelease(t, c, rel)
	t.Logf("the FleetRelease went %s after its deletion", time.Since(deleting).Round(10*time.Millisecond))
	if err := c.Get(t.Context(), lease, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("operation Lease %s after the uninstall: %v, want it deleted", lease, err)
	}
}

// agentKubeconfig writes a kubeconfig of the spoke acting as the agent's ServiceAccount, with
// only the chart's roles, for the agent binary.
func agentKubeconfig(t *testing.T) string {
	t.Helper()
	agentConfig(t) // the grants
	kc, err := clientcmd.LoadFromFile(spoke.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + ocichain.Namespace + ":" + testbed.FleetAgentAccount
	}
	path := filepath.Join(t.TempDir(), "agent-kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// completeHooks marks the hook Pod ns/name Succeeded whenever it exists and the returned switch
// is on, as a kubelet would once the hook ran, until the test ends.
func completeHooks(t *testing.T, c client.Client, ns, name string) *atomic.Bool {
	on := new(atomic.Bool)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			var pod corev1.Pod
			if !on.Load() || c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod) != nil || pod.Status.Phase == corev1.PodSucceeded {
				continue
			}
			pod.Status.Phase = corev1.PodSucceeded
			if err := c.Status().Update(ctx, &pod); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				t.Errorf("marking the hook Pod %s/%s Succeeded: %v", ns, name, err)
			}
		}
	}()
	return on
}

// wantHistory checks the statuses of the release's revisions, oldest first.
func wantHistory(t *testing.T, helm interface {
	History(string) ([]*release.Release, error)
}, name string, want ...release.Status,
) {
	t.Helper()
	history, err := helm.History(name)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(history, func(a, b *release.Release) int { return a.Version - b.Version })
	var got []release.Status
	for _, r := range history {
		got = append(got, r.Info.Status)
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

// forceDelete deletes the FleetRelease without waiting for an agent: its finalizer is removed.
func forceDelete(t *testing.T, c client.Client, rel *v1alpha1.FleetRelease) {
	var got v1alpha1.FleetRelease
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(rel), &got); err != nil {
		return
	}
	got.Finalizers = nil
	_ = c.Update(context.Background(), &got)
	_ = c.Delete(context.Background(), &got)
}

// describe is the release's and its pull's status, for a failure's message.
func describe(t *testing.T, c client.Client, rel *v1alpha1.FleetRelease) string {
	var got v1alpha1.FleetRelease
	var pull v1alpha1.OCIPull
	errRel := c.Get(context.Background(), client.ObjectKeyFromObject(rel), &got)
	errPull := c.Get(context.Background(), client.ObjectKey{Namespace: rel.Namespace, Name: rel.Spec.Pull}, &pull)
	return fmt.Sprintf("FleetRelease status %+v (%v); OCIPull status %+v (%v)", got.Status, errRel, pull.Status, errPull)
}
