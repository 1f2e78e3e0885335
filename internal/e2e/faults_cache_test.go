package e2e_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// agentKilledMidPull is the cache part of TestFaultAppOnTheFleet, on its fleet: eu-01's chain is
// pointed at a proxy of the mirror that passes 40 MiB/s per blob, the cluster's in-process agent
// is stopped and the agent binary runs in its place, as the agent's ServiceAccount. A 200 MiB
// artifact is asked for through a pull work on the hub; the agent is SIGKILLed once 50 MiB of it
// are in its cache's ingest/, and started again on the same cache: the pull completes from a
// clean start (the partial download is removed, never used) and the hub shows it Pulled, the
// time printed; ingest/ is empty, every blob matches its digest and is reached from the index
// (nothing orphaned), and every layer not committed at the kill was downloaded again. The chain
// and the in-process agent are restored afterwards. bin is the fleet-controller binary.
func (p *pullFleet) agentKilledMidPull(t *testing.T, bin string) {
	const (
		name, tag         = "big", "big-v1"
		layers, layerSize = 2, 100 << 20
		timeout           = 2 * time.Minute
	)
	ctx, spoke := p.ctx, p.agents[pullCluster].spoke
	cluster := p.fleet.Cluster(pullCluster)
	pushed := time.Now()
	m, err := p.mirror.PushRandom(ctx, pullRepo, tag, layers, layerSize, 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed a %d MiB artifact in %s", layers*layerSize>>20, time.Since(pushed).Round(100*time.Millisecond))
	// 40 MiB/s per blob: the download takes a few seconds, time enough to kill the agent in it.
	slow := testbed.StartProxyT(t, p.mirror, testbed.ProxyOptions{BytesPerSecond: 40 << 20})
	p.addRegistry(t, "slow", slow.Entry("slow"), agentPass)
	p.setChain(t, time.Minute, "slow")
	defer p.setChain(t, 10*time.Minute, "mirror", "source")

	p.agents[pullCluster].stop()
	var proc *testkit.Process
	defer func() {
		if proc != nil {
			proc.Kill()
		}
		p.startAgent(pullCluster)
	}()
	dir := filepath.Join(t.TempDir(), "cache")
	run := func(name string) *testkit.Process {
		return testkit.StartProcess(t, bin, name, "agent", "--kubeconfig", cluster.AgentKubeconfig, "--cache-dir", dir, "--drift-interval=0")
	}
	proc = run("agent-pull-1")
	p.requestOn(t, pullCluster, name, tag)
	requested := time.Now()
	var atKill testkit.CacheFiles
	testkit.Eventually(t, timeout, "the first agent 50 MiB into the download", func() error {
		atKill = testkit.ListCache(t, dir)
		if n := atKill.Bytes(atKill.Ingest); n < 50<<20 {
			return fmt.Errorf("%d bytes in ingest/", n)
		}
		return nil
	}, proc.Log)
	proc.Kill()
	atKill = testkit.ListCache(t, dir)
	partial := atKill.Bytes(atKill.Ingest)
	t.Logf("killed the agent %s after the request: %d MiB partial in %d ingest files, %d blobs committed (%d bytes)",
		time.Since(requested).Round(10*time.Millisecond), partial>>20, len(atKill.Ingest), len(atKill.Blobs), atKill.Bytes(atKill.Blobs))
	if partial == 0 {
		t.Fatal("nothing partial in ingest/ at the kill: the test did not kill mid-download")
	}
	var got v1alpha1.OCIPull
	if err := spoke.Get(ctx, client.ObjectKey{Namespace: ocichain.Namespace, Name: name}, &got); err != nil || got.Status.State == v1alpha1.OCIPullPulled {
		t.Fatalf("status at the kill: %+v (%v); the pull had not finished", got.Status, err)
	}

	restarted := time.Now()
	proc = run("agent-pull-2")
	p.await(t, name, "Pulled by the restarted agent, on the hub", func(pl pullwork.Pull) error {
		if pl.State() != "Pulled" || pl.Status.Digest != m.Digest.String() {
			return fmt.Errorf("state %s digest %q (%s)", pl.State(), pl.Status.Digest, pl.Status.Message)
		}
		return nil
	})
	t.Logf("pulled %s: Pulled on the hub %s after the restart", m.Digest, time.Since(restarted).Round(10*time.Millisecond))

	after := testkit.ListCache(t, dir)
	if len(after.Ingest) != 0 {
		t.Errorf("ingest/ after the restarted pull: %v; want empty", after.Ingest)
	}
	reached := testkit.VerifyCache(t, dir)
	if !reached[m.Digest] {
		t.Errorf("the index does not reach the artifact %s", m.Digest)
	}
	var committed int64
	for _, size := range atKill.Blobs {
		if size == layerSize {
			committed += size
		}
	}
	downloaded, err := proc.Scrape("fleet_agent_pulled_bytes_total", "")
	if err != nil {
		t.Fatal(err)
	}
	// Whatever was partial is downloaded again in full: nothing resumes from a partial blob.
	if want := float64(layers*layerSize - committed); downloaded < want {
		t.Errorf("the restarted agent downloaded %v bytes; want at least %v, every layer not committed at the kill", downloaded, want)
	}
	if size, err := proc.Scrape("fleet_agent_cache_bytes", ""); err != nil || int64(size) != after.Bytes(after.Blobs) {
		t.Errorf("fleet_agent_cache_bytes = %v (%v), want the %d bytes of blobs/", size, err, after.Bytes(after.Blobs))
	}
	if !strings.Contains(proc.Log(), "cache repaired on opening") {
		t.Errorf("the restarted agent did not log the repair of its cache:\n%s", proc.Log())
	}
	t.Logf("cache after the restart: %d blobs, %d MiB; the restarted agent downloaded %d MiB", len(after.Blobs), after.Bytes(after.Blobs)>>20, int64(downloaded)>>20)
}
