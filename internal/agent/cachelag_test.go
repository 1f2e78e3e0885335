package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// A restarted agent finds a release Installing, as the agent it replaced left it, and installs
// it: the status it computes before Helm runs is what the release says, so it writes nothing
// then. An event that arrives meanwhile (the release's OCIPull changing) is reconciled the moment
// the install's reconcile ends, whose last step is the Deployed write; that reconcile may read
// the release from a cache without the write (here always: WithLaggingCache), Installing again,
// and nothing in it stops Helm: no status write to conflict. It must not run Helm again: the
// reconciler expects its own write (kube.Expectations) and waits for the cache. Helm's history
// stays at the one revision the install made.
func TestNoHelmAgainBehindTheCache(t *testing.T) {
	const target, name = "app-lag", "lag"
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/lag", testbed.HookedChart(name, "0.1.0"))
	putChain(t, c, ocichain.Chain{Workspace: name, Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	dir := filepath.Join(t.TempDir(), "cache")
	startAgent := func(opts ...func(*agent.Options)) (stop func()) {
		mgr, err := agent.NewManager(agentConfig(t), withOptions(agent.Options{
			Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, CacheDir: dir, RetryFailed: time.Minute,
		}, opts))
		if err != nil {
			t.Fatal(err)
		}
		return testkit.Run(t, mgr)
	}
	hook := testkit.CompleteHooks(t, c, target, name+"-hook")
	pull := newPull(t, c, ocichain.Namespace, name, v1alpha1.OCIPullSpec{Workspace: name, Repository: "charts/lag", Tag: "0.1.0"})
	stop := startAgent()
	waitFor(t, c, pull, 30*time.Second, "pulled", pulled)
	stop()
	helm, err := agent.HelmConfig(spoke.Config, target)
	if err != nil {
		t.Fatal(err)
	}

	// The release as an agent stopped during its install leaves it.
	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: name},
		Spec:       v1alpha1.FleetReleaseSpec{Workspace: name, App: name, Pull: name, ReleaseName: name, Namespace: target},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forceDelete(t, c, rel) })
	rel.Status = v1alpha1.FleetReleaseStatus{ObservedGeneration: 1, Phase: v1alpha1.ReleaseInstalling, Message: "installing lag-0.1.0"}
	if err := c.Status().Update(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	defer startAgent(agent.WithLaggingCache)()
	// Helm waits on the pre-install hook; the pull's change now is queued behind the install.
	testkit.Eventually(t, time.Minute, "Helm waiting on the install's hook", func() error {
		last, err := helm.Releases.Last(name)
		if err != nil {
			return err
		}
		if last.Version != 1 || last.Info.Status != release.StatusPendingInstall {
			return fmt.Errorf("revision %d %s", last.Version, last.Info.Status)
		}
		return nil
	}, func() string { return describe(t, c, rel) })
	testkit.Update(t, c, pull, func(p *v1alpha1.OCIPull) { metav1.SetMetaDataLabel(&p.ObjectMeta, "touched", "yes") })
	time.Sleep(300 * time.Millisecond)
	hook.Store(true)
	testkit.Eventually(t, time.Minute, "Deployed", func() error {
		var got v1alpha1.FleetRelease
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), &got); err != nil {
			return err
		}
		return deployed(1, 1)(got.Status)
	}, func() string { return describe(t, c, rel) })
	time.Sleep(3 * time.Second)
	history, err := helm.Releases.History(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 1 {
		t.Errorf("%d revisions of the release after its install, want 1: Helm ran again on a cache without the Deployed write", len(history))
	}
	hook.Store(false)
	deleteRelease(t, c, rel)
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
