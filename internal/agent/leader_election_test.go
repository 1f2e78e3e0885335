package agent_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestLeaderElection runs two agents of the real binary on one cluster, as the hub's test does
// (internal/controller): one leads and pulls while the other pulls nothing and writes no status;
// killed with SIGKILL (no release of the Lease), the leader is replaced by the standby, which
// pulls a new OCIPull.
func TestLeaderElection(t *testing.T) {
	const ns, ws, timeout = "app-leader", "leader", time.Minute
	c := startSpoke(t, ns)
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	v1 := reg.PushT(t, "apps/leader", "v1", []byte("pulled by the first leader"))
	v2 := reg.PushT(t, "apps/leader", "v2", []byte("pulled by the second"))
	putChain(t, c, ocichain.Chain{Workspace: ws, Route: "r", Registries: []puller.Registry{reg.Entry("reg")}})

	bin := testkit.Binary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	caches := map[string]string{}
	a, b, held := testkit.LeaderAndStandby(t, c, ocichain.Namespace, agent.DefaultLeaderElectionID, timeout, func(name string) *testkit.Process {
		caches[name] = filepath.Join(t.TempDir(), "cache")
		return testkit.StartProcess(t, bin, name, append([]string{"agent", "--kubeconfig", spoke.Kubeconfig, "--cache-dir", caches[name]},
			testkit.LeaderElectionFlags(ocichain.Namespace)...)...)
	})

	one := newPull(t, c, ocichain.Namespace, "one", v1alpha1.OCIPullSpec{Workspace: ws, Repository: "apps/leader", Tag: "v1"})
	if s := waitFor(t, c, one, timeout, "pulled by the leader", pulled); s.Digest != v1.Digest.String() {
		t.Fatalf("status %+v, want digest %s", s, v1.Digest)
	}
	time.Sleep(time.Second) // room for a standby that would pull too
	for _, m := range []string{"fleet_agent_pulls_total", "fleet_agent_pull_attempts_total"} {
		if n, err := b.Scrape(m, ""); err != nil || n != 0 {
			t.Errorf("the standby's %s = %v (%v), want 0", m, n, err)
		}
	}
	if n, err := a.Scrape("fleet_agent_pulls_total", `state="Pulled"`); err != nil || n != 1 {
		t.Errorf("the leader's pulls that entered Pulled: %v (%v), want 1", n, err)
	}
	if !inCache(caches["a"], v1) || inCache(caches["b"], v1) {
		t.Errorf("v1 in the leader's cache: %v, in the standby's: %v; want only in the leader's", inCache(caches["a"], v1), inCache(caches["b"], v1))
	}

	testkit.TakeOver(t, c, ocichain.Namespace, agent.DefaultLeaderElectionID, timeout, a, b, held)

	two := newPull(t, c, ocichain.Namespace, "two", v1alpha1.OCIPullSpec{Workspace: ws, Repository: "apps/leader", Tag: "v2"})
	s := waitFor(t, c, two, timeout, "pulled by the new leader", pulled)
	if s.Digest != v2.Digest.String() || s.Registry != "reg" {
		t.Errorf("status %+v, want digest %s from reg", s, v2.Digest)
	}
	if !inCache(caches["b"], v2) {
		t.Errorf("v2 is not in the new leader's cache %s", caches["b"])
	}
	testkit.Eventually(t, timeout, "the new leader counts its pulls", func() error {
		if n, err := b.Scrape("fleet_agent_pulls_total", `state="Pulled"`); err != nil || n < 1 {
			return fmt.Errorf("pulls that entered Pulled: %v (%v)", n, err)
		}
		return nil
	})
	if inCache(caches["a"], v2) {
		t.Error("v2 is in the killed leader's cache")
	}
}
