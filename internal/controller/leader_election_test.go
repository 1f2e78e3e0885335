package controller_test

import (
	"fmt"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestLeaderElection runs two replicas of the real binary: one leads and converges the
// workspace while the other writes nothing; killed with SIGKILL (no release of the Lease), the
// leader is replaced by the standby, which converges a change without duplicating any work.
func TestLeaderElection(t *testing.T) {
	const ws = "leader-ws"
	h, c, v := seededWorkspace(t, ws)
	ctx := t.Context()

	bin := testkit.Binary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	const leaseNS = "kube-system"
	a, b, held := testkit.LeaderAndStandby(t, c, leaseNS, controller.DefaultLeaderElectionID, converge, func(name string) *testkit.Process {
		return testkit.StartProcess(t, bin, name, append([]string{"hub", "--kubeconfig", h.Kubeconfig}, testkit.LeaderElectionFlags(leaseNS)...)...)
	})
	v.converged()
	if w, err := b.Scrape("fleet_hub_writes_total", ""); err != nil || w != 0 {
		t.Fatalf("the standby wrote %v times (%v)", w, err)
	}
	if w, err := a.Scrape("fleet_hub_writes_total", ""); err != nil || w == 0 {
		t.Fatalf("the leader wrote %v times (%v), want some", w, err)
	}

	testkit.TakeOver(t, c, leaseNS, controller.DefaultLeaderElectionID, converge, a, b, held)

	testkit.Update(t, c, v.route("shadowed"), func(r *v1alpha1.OCIStorageRoute) { r.Spec.Priority = 7 })
	v.converged()
	testkit.Eventually(t, converge, "eu-01 moved by the new leader", func() error {
		if st, err := v.storage("eu-01"); err != nil || st.Status.Route != "shadowed" {
			return fmt.Errorf("eu-01 on %q (%v)", st.Status.Route, err)
		}
		return nil
	})
	if w, err := b.Scrape("fleet_hub_writes_total", ""); err != nil || w == 0 {
		t.Errorf("the new leader wrote %v times (%v), want some", w, err)
	}
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
	if n := len(demoseed.Clusters); len(works.Items) != n || len(perCluster) != n || len(storages.Items) != n {
		t.Errorf("after the takeover: %d works over %d clusters and %d ClusterOCIStorages, want %d each (the seed's clusters)", len(works.Items), len(perCluster), len(storages.Items), n)
	}
}
