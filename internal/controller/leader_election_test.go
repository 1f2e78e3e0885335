package controller_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// replica is one `fleet-controller hub` process.
type replica struct {
	name    string
	cmd     *exec.Cmd
	metrics string // base URL of its /metrics
}

// scrape returns the sum of a metric's samples whose line contains filter.
func (r *replica) scrape(metric, filter string) (float64, error) {
	resp, err := http.Get(r.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) || !strings.Contains(line, filter) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, sc.Err()
}

func (r *replica) leading() bool {
	v, err := r.scrape("leader_election_master_status", controller.DefaultLeaderElectionID)
	return err == nil && v == 1
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestLeaderElection runs two replicas of the real binary: one leads and converges the
// workspace while the other writes nothing; killed with SIGKILL (no release of the Lease), the
// leader is replaced by the standby, which converges a change without duplicating any work.
func TestLeaderElection(t *testing.T) {
	const ws = "leader-ws"
	h, c, v := seededWorkspace(t, ws)
	ctx := t.Context()

	bin := filepath.Join(t.TempDir(), "fleet-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	start := func(name string) *replica {
		metrics := freeAddr(t)
		cmd := exec.Command(bin, "hub", "--kubeconfig", h.Kubeconfig, "--leader-elect", "--leader-election-namespace", "kube-system",
			"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms",
			"--metrics-bind-address", metrics, "--health-probe-bind-address", freeAddr(t))
		logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := &replica{name: name, cmd: cmd, metrics: "http://" + metrics}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				if log, err := os.ReadFile(logf.Name()); err == nil {
					t.Logf("%s log:\n%s", name, log)
				}
			}
		})
		return r
	}

	a := start("a")
	testkit.Eventually(t, converge, "replica a leads", func() error {
		if !a.leading() {
			return fmt.Errorf("not leading")
		}
		return nil
	})
	b := start("b")
	v.converged()
	testkit.Eventually(t, converge, "replica b serves metrics", func() error { _, err := b.scrape("leader_election_master_status", ""); return err })
	time.Sleep(2 * time.Second)
	if b.leading() {
		t.Fatal("both replicas lead")
	}
	if w, err := b.scrape("fleet_hub_writes_total", ""); err != nil || w != 0 {
		t.Fatalf("the standby wrote %v times (%v)", w, err)
	}
	if w, err := a.scrape("fleet_hub_writes_total", ""); err != nil || w == 0 {
		t.Fatalf("the leader wrote %v times (%v), want some", w, err)
	}

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	killed := time.Now()
	testkit.Eventually(t, converge, "replica b takes over", func() error {
		if !b.leading() {
			return fmt.Errorf("not leading")
		}
		return nil
	})
	t.Logf("standby took over %s after the leader was killed (lease 4s)", time.Since(killed).Round(100*time.Millisecond))

	sh := v.route("shadowed")
	sh.Spec.Priority = 7
	if err := c.Update(ctx, sh); err != nil {
		t.Fatal(err)
	}
	v.converged()
	testkit.Eventually(t, converge, "eu-01 moved by the new leader", func() error {
		if st, err := v.storage("eu-01"); err != nil || st.Status.Route != "shadowed" {
			return fmt.Errorf("eu-01 on %q (%v)", st.Status.Route, err)
		}
		return nil
	})
	var works workv1.ManifestWorkList
	if err := c.List(ctx, &works, client.MatchingLabels{hub.WorkspaceLabel: ws}); err != nil {
		t.Fatal(err)
	}
	perCluster := map[string]int{}
	for _, w := range works.Items {
		perCluster[w.Namespace]++
	}
	var storages v1alpha1.ClusterOCIStorageList
	if err := c.List(ctx, &storages, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	if len(works.Items) != 7 || len(perCluster) != 7 || len(storages.Items) != 7 {
		t.Errorf("after the takeover: %d works over %d clusters and %d ClusterOCIStorages, want 7 each", len(works.Items), len(perCluster), len(storages.Items))
	}
}
