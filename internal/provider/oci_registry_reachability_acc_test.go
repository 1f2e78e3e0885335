package provider

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAccRegistryReachability_fleet runs the connectivity probe through the real parts and reads it
// back with the CLI under test: a workload cluster with OCM's work agent and `fleet-controller
// agent` probing every second, the hub's routing, pull-status and probe-status reconcilers, the
// workspace's registry "source" and a registry "apac" whose process is stopped. A route of the
// configuration puts apac first for the cluster.
//
//   - Applying it warns of nothing about apac: no cluster has reported on it yet (only reported
//     data counts).
//   - Once the agent's probe reached the hub, a plan warns that apac is Unreachable from 1 of 1
//     clusters of the route, with how long ago, and that they pull from source.
//   - fleet_oci_chain shows each registry's reachability and probed_at for the cluster, and
//     fleet_oci_registry_reachability counts apac reachable from 0 of 1 clusters and source from 1.
func TestAccRegistryReachability_fleet(t *testing.T) {
	w := newCLIWorkdir(t)
	fl := startAccFleet(t, []string{"routing", "pull-status", "probe-status"}, func(o *agent.Options) {
		o.ProbeInterval, o.ProbeTimeout = time.Second, 2*time.Second
	})
	ws, cluster := fl.ws, fl.cluster
	apac := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	if err := apac.Stop(); err != nil {
		t.Fatal(err)
	}
	e := apac.Entry("apac")
	if err := fl.hub.Create(t.Context(), testkit.RegistrySecret(ws, "apac", registrysecret.RoleMirror, registrysecret.Registry{
		Reference: e.Reference, BasicHTTP: true, AgentUsername: "puller", AgentPassword: "pull-s3cret",
	})); err != nil {
		t.Fatal(err)
	}
	route := fmt.Sprintf(`
resource "fleet_oci_route" "apac" {
  workspace     = %q
  name          = "apac-clusters"
  priority      = 5
  cluster_names = [%q]
  registries    = ["apac", "source"]
}
`, ws, cluster)
	mine := func(diags []cliDiag) []cliDiag { return only(diags, unreachableSummary) }
	if got := mine(w.apply(route)); len(got) != 0 {
		t.Errorf("apply before any cluster reported on apac: %v, want no %q warning", got, unreachableSummary)
	}

	begin := time.Now()
	testkit.Eventually(t, 2*time.Minute, "apac Unreachable on the cluster's ClusterOCIStorage", func() error {
		var s v1alpha1.ClusterOCIStorage
		if err := fl.hub.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: cluster}, &s); err != nil {
			return err
		}
		var got []string
		for _, r := range s.Status.Reachability {
			got = append(got, r.Registry+"="+r.State)
		}
		if strings.Join(got, ",") != "apac=Unreachable,source=Reachable" {
			return fmt.Errorf("reachability %v, chain %v", got, s.Status.Chain)
		}
		return nil
	}, fl.spoke.AgentLog, fl.logs.String)
	t.Logf("reachability on the hub %s after the apply", time.Since(begin).Round(100*time.Millisecond))

	diags, failed := w.plan(route)
	expectWarnings(t, "plan once reported", diags, failed, []string{unreachableSummary}, map[string][]string{unreachableSummary: {
		"apac is Unreachable from 1 of 1 clusters of route apac-clusters (probed ", " ago); they pull from source", "Clusters: " + cluster + "."}})
	for _, d := range mine(diags) {
		if d.Address != "fleet_oci_route.apac" {
			t.Errorf("the warning is on %q, want fleet_oci_route.apac", d.Address)
		}
	}

	w.apply(route + fmt.Sprintf(`
data "fleet_oci_chain" "edge" {
  workspace = %[1]q
  cluster   = %[2]q
}

data "fleet_oci_registry_reachability" "apac" {
  workspace = %[1]q
  registry  = "apac"
}

data "fleet_oci_registry_reachability" "source" {
  workspace = %[1]q
  registry  = "source"
}

output "chain"  { value = data.fleet_oci_chain.edge.registries }
output "apac"   { value = data.fleet_oci_registry_reachability.apac }
output "source" { value = data.fleet_oci_registry_reachability.source }
`, ws, cluster))
	out, err := w.run("output", "-json")
	if err != nil {
		t.Fatal(err)
	}
	var outputs struct {
		Chain struct {
			Value []struct {
				Name, Reachability string
				ProbedAt           string `json:"probed_at"`
			}
		}
		Apac, Source struct {
			Value struct {
				Clusters, Reachable int
				Failing             []struct{ Cluster, State string }
				NotReported         []string `json:"not_reported"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &outputs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ch := outputs.Chain.Value
	if len(ch) != 2 || ch[0].Name != "apac" || ch[0].Reachability != "Unreachable" || ch[1].Name != "source" || ch[1].Reachability != "Reachable" {
		t.Errorf("fleet_oci_chain registries %+v, want apac Unreachable then source Reachable", ch)
	}
	for _, r := range ch {
		if at, err := time.Parse(time.RFC3339, r.ProbedAt); err != nil || at.Before(begin.Add(-time.Minute)) || at.After(time.Now().Add(time.Second)) {
			t.Errorf("fleet_oci_chain %s probed_at %q: want a time during the test", r.Name, r.ProbedAt)
		}
	}
	a, s := outputs.Apac.Value, outputs.Source.Value
	if a.Clusters != 1 || a.Reachable != 0 || len(a.Failing) != 1 || a.Failing[0].Cluster != cluster || a.Failing[0].State != "Unreachable" || len(a.NotReported) != 0 {
		t.Errorf("fleet_oci_registry_reachability apac %+v, want unreachable from the 1 cluster", a)
	}
	if s.Clusters != 1 || s.Reachable != 1 || len(s.Failing) != 0 || len(s.NotReported) != 0 {
		t.Errorf("fleet_oci_registry_reachability source %+v, want reachable from 1 of 1", s)
	}
	w.destroy()
}
