package provider

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAccDataSourceOCIPullStatus_fleet runs the whole pull path and reads it back with
// fleet_oci_pull_status: one workload cluster registered with the suite's hub (its own
// kube-apiserver and etcd, OCM's real work agent), the hub controller's routing and pull-status
// reconcilers and `fleet-controller agent` on the cluster (both in-process), a real registry
// with an artifact pushed, its registry Secret and a route for the cluster. The chain reaches
// the cluster in the controller's ManifestWork; pull works ask for the artifact and for a tag the
// registry lacks; the agent pulls and the works' status feedback brings the statuses to the hub,
// where the data source must show the first Pulled from that registry with the digest pushed
// and the second Failed (NotFound), both read from the cluster's ClusterOCIStorage in the
// workspace. A pull work in the namespace of a cluster outside the workspace is not shown.
func TestAccDataSourceOCIPullStatus_fleet(t *testing.T) {
	begin := time.Now()
	fl := startAccFleet(t, []string{"routing", "pull-status"})
	ws, cluster, f, hc, spoke, logs := fl.ws, fl.cluster, fl.fixtures, fl.hub, fl.spoke, fl.logs
	pushed := fl.registry.PushT(t, "fleet/apps/web", "v1", []byte("the web app, v1"))

	// The cluster is asked for v1, which the registry has, and v2, which it lacks. A pull work
	// in the namespace of a cluster without an agent (and not in the workspace) gets no answer.
	ghost := f.Name("ghost")
	if err := hc.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ghost}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeClusterNamespace(t, hc, ghost) })
	for _, pw := range []struct{ cluster, work, pull, tag string }{
		{cluster, "pull-web", "web", "v1"}, {cluster, "pull-web-v2", "web-v2", "v2"}, {ghost, "pull-web", "web", "v1"},
	} {
		w, err := pullwork.New(pw.cluster, pw.work, ws, pullwork.Request{Name: pw.pull, Spec: v1alpha1.OCIPullSpec{Repository: "apps/web", Tag: pw.tag}})
		if err != nil {
			t.Fatal(err)
		}
		if err := hc.Create(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
	pulledAt := time.Now()
	var storage v1alpha1.ClusterOCIStorage
	testkit.Eventually(t, 2*time.Minute, "one pull Pulled and one Failed on the cluster's ClusterOCIStorage", func() error {
		if err := hc.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: cluster}, &storage); err != nil {
			return err
		}
		if st := storage.Status; meta.FindStatusCondition(st.Conditions, v1alpha1.ReadyCondition) == nil || st.Pulled != 1 || st.Failed != 1 || len(st.Pulls) != 2 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}, spoke.AgentLog, logs.String)
	t.Logf("pulls reported to the hub %v after the pull works were created (%v since the test began)",
		time.Since(pulledAt).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))

	const all, one, none = "data.fleet_oci_pull_status.all", "data.fleet_oci_pull_status.one", "data.fleet_oci_pull_status.none"
	cfg := fmt.Sprintf(`
data "fleet_oci_pull_status" "all" {
  workspace = %[1]q
}

data "fleet_oci_pull_status" "one" {
  workspace = %[1]q
  cluster   = %[2]q
  artifact  = "apps/web:v1"
}

data "fleet_oci_pull_status" "none" {
  workspace = %[1]q
  artifact  = "apps/db"
}
`, ws, cluster)
	timeDuringTest := func(v string) error {
		ts, err := time.Parse(time.RFC3339, v)
		if err != nil || ts.Before(begin.Add(-time.Minute)) || ts.After(time.Now().Add(time.Minute)) {
			return fmt.Errorf("%q: want an RFC 3339 time during the test (%v)", v, err)
		}
		return nil
	}
	pulled := func(addr, i string) resource.TestCheckFunc {
		row := "pulls." + i + "."
		return resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(addr, row+"cluster", cluster),
			resource.TestCheckResourceAttr(addr, row+"artifact", "apps/web:v1"),
			resource.TestCheckResourceAttr(addr, row+"name", "web"),
			resource.TestCheckResourceAttr(addr, row+"work", cluster+"/pull-web"),
			resource.TestCheckResourceAttr(addr, row+"route", "edge"),
			resource.TestCheckResourceAttr(addr, row+"chain.#", "1"),
			resource.TestCheckResourceAttr(addr, row+"chain.0", "source"),
			resource.TestCheckResourceAttr(addr, row+"state", "Pulled"),
			resource.TestCheckResourceAttr(addr, row+"registry", "source"),
			resource.TestCheckResourceAttr(addr, row+"digest", pushed.Digest.String()),
			resource.TestCheckResourceAttrSet(addr, row+"attempts"),
			resource.TestCheckResourceAttrWith(addr, row+"last_success", timeDuringTest),
			resource.TestCheckNoResourceAttr(addr, row+"next_retry"),
		)
	}
	counts := func(addr string, pulled, waiting, failed, unknown, clusters int) resource.TestCheckFunc {
		return resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(addr, "counts.pulled", fmt.Sprint(pulled)),
			resource.TestCheckResourceAttr(addr, "counts.waiting_for_artifact", fmt.Sprint(waiting)),
			resource.TestCheckResourceAttr(addr, "counts.failed", fmt.Sprint(failed)),
			resource.TestCheckResourceAttr(addr, "counts.unknown", fmt.Sprint(unknown)),
			resource.TestCheckResourceAttr(addr, "clusters", fmt.Sprint(clusters)),
		)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					// Every pull of the workspace, sorted by cluster, then artifact.
					pulled(all, "0"),
					resource.TestCheckResourceAttr(all, "pulls.1.cluster", cluster),
					resource.TestCheckResourceAttr(all, "pulls.1.artifact", "apps/web:v2"),
					resource.TestCheckResourceAttr(all, "pulls.1.state", "Failed"),
					resource.TestCheckResourceAttr(all, "pulls.1.reason", "NotFound"),
					resource.TestCheckResourceAttr(all, "pulls.1.registry", "source"),
					resource.TestCheckResourceAttr(all, "pulls.1.route", "edge"),
					resource.TestCheckNoResourceAttr(all, "pulls.1.digest"),
					resource.TestCheckResourceAttrSet(all, "pulls.1.message"),
					resource.TestCheckResourceAttrSet(all, "pulls.1.next_retry"), // a Failed pull says when it starts over
					resource.TestCheckResourceAttrWith(all, "pulls.1.attempts", func(v string) error {
						if v == "" || v == "0" {
							return fmt.Errorf("attempts %q, want at least 1", v)
						}
						return nil
					}),
					resource.TestCheckNoResourceAttr(all, "pulls.1.last_success"),
					// The pull work in the namespace of a cluster outside the workspace is not the
					// workspace's: only its ClusterOCIStorages are read, so it is not shown.
					resource.TestCheckResourceAttr(all, "pulls.#", "2"),
					counts(all, 1, 0, 1, 0, 1),
					resource.TestCheckResourceAttr(all, "clusters_without_pulls.#", "0"),
					// One cluster, one version.
					resource.TestCheckResourceAttr(one, "pulls.#", "1"),
					pulled(one, "0"),
					counts(one, 1, 0, 0, 0, 1),
					// An artifact no pull asks for: no pulls, and the cluster among those not asked.
					resource.TestCheckResourceAttr(none, "pulls.#", "0"),
					counts(none, 0, 0, 0, 0, 0),
					resource.TestCheckResourceAttr(none, "clusters_without_pulls.#", "1"),
					resource.TestCheckResourceAttr(none, "clusters_without_pulls.0", cluster),
				),
			},
			{
				Config:      fmt.Sprintf("data \"fleet_oci_pull_status\" \"x\" {\n  workspace = %q\n}\n", ws+"-missing"),
				ExpectError: expectError("Workspace not found", fmt.Sprintf("Namespace %q does not exist on the hub", ws+"-missing")),
			},
		},
	})
	t.Logf("TestAccDataSourceOCIPullStatus_fleet: %v in all", time.Since(begin).Round(time.Millisecond))
}
