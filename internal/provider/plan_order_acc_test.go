package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// storageReachability writes the ClusterOCIStorage of cluster in the fixtures' workspace with
// chain and each registry's reported state, Ready, as the routing and probe-status reconcilers
// of fleet-controller hub would.
func storageReachability(t *testing.T, f *hubFixtures, cluster string, chain []string, states map[string]string) {
	t.Helper()
	gvr := clusterStorageKind.GroupVersionResource
	f.create(gvr, map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": clusterStorageKind.Kind,
		"metadata": map[string]any{"name": cluster, "namespace": f.ws},
	})
	ri := f.dyn.Resource(gvr).Namespace(f.ws)
	u, err := ri.Get(context.Background(), cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	var reach, chainAny []any
	for _, reg := range chain {
		chainAny = append(chainAny, reg)
		if s, ok := states[reg]; ok {
			reach = append(reach, map[string]any{"registry": reg, "state": s, "probedAt": now})
		}
	}
	u.Object["status"] = map[string]any{"chain": chainAny, "reachability": reach, "conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": now}}}
	if _, err := ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAccOCIRoutePlanChecks_order plans two new routes that compete for a cluster (staging,
// priority 5, wins eu-staging-01 from eu, priority 10, once both exist), each of which draws
// the three newer plan checks: the hub's replication figures for harbor-eu predict failover
// (p95 15m, both wait 1m), the clusters' probes report harbor-eu Unreachable, and both verify
// cosign signatures. Through the CLI at -parallelism=1, with eu planned first (staging
// depends_on it) and then staging first (eu depends_on it), the warnings are the same, word for
// word but for "probed Ns ago": each check judges against the hub as the plan began (no route
// there yet), so eu names both eu clusters whichever route Terraform planned first.
func TestAccOCIRoutePlanChecks_order(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	f.ClusterSet("general")
	eu := f.Cluster("eu-01", "general", map[string]string{"region": "eu"})
	staging := f.Cluster("eu-staging-01", "general", map[string]string{"region": "eu", "stage": "staging"})
	f.Cluster("us-01", "general", map[string]string{"region": "us"})
	f.Registry("harbor-eu", "source", "harbor-eu.example.com/fleet")
	f.Registry("harbor-central", "mirror", "harbor-central.example.com/fleet")
	replicationFigures(t, f, "harbor-eu", "5m0s", "15m0s", 3, 1)
	for _, cl := range []string{eu, staging} {
		storageReachability(t, f, cl, []string{"harbor-eu", "harbor-central"}, map[string]string{"harbor-eu": "Unreachable", "harbor-central": "Reachable"})
	}
	key := testbed.NewCosignKey(t)
	verify := fmt.Sprintf("  verify = {\n    provider = \"cosign\"\n    public_keys = [%q]\n  }\n", key.PublicPEM)
	route := func(name, after, body string) string {
		if after != "" {
			body += fmt.Sprintf("  depends_on = [fleet_oci_route.%s]\n", after)
		}
		return routeConfig(ws, name, body+verify+"  replication_wait = \"1m\"\n")
	}
	euRoute := func(after string) string {
		return route("eu", after, "  priority = 10\n  cluster_selectors = [{ match_labels = { region = \"eu\" } }]\n  registries = [\"harbor-eu\", \"harbor-central\"]\n")
	}
	stagingRoute := func(after string) string {
		return route("staging", after, "  priority = 5\n  cluster_selectors = [{ match_labels = { stage = \"staging\" } }]\n  registries = [\"harbor-eu\"]\n")
	}
	const verifies = "Route verifies signatures"
	summaries := []string{predictedFailoverSummary, unreachableSummary, verifies}
	want := map[string][]string{ // by address and summary
		"fleet_oci_route.eu " + predictedFailoverSummary: {`Route "eu" waits 1m0s (replication_wait) for registry "harbor-eu", whose observed replication lag is p95 15m0s`,
			fmt.Sprintf(`2 cluster(s) it wins (%s, %s) will give up on "harbor-eu"`, eu, staging), `pull from registry "harbor-central"`},
		"fleet_oci_route.staging " + predictedFailoverSummary: {`Route "staging" waits 1m0s`, fmt.Sprintf(`1 cluster(s) it wins (%s)`, staging), "pull from no other registry"},
		"fleet_oci_route.eu " + unreachableSummary:            {"harbor-eu is Unreachable from 2 of 2 clusters of route eu", "they pull from harbor-central", eu + ", " + staging},
		"fleet_oci_route.staging " + unreachableSummary:       {"harbor-eu is Unreachable from 1 of 1 clusters of route staging", "the route has no other registry", staging},
		"fleet_oci_route.eu " + verifies:                      {fmt.Sprintf(`Route "eu" requires cosign signatures by 1 public key(s): its 2 cluster(s) (%s, %s)`, eu, staging)},
		"fleet_oci_route.staging " + verifies:                 {fmt.Sprintf(`Route "staging" requires cosign signatures by 1 public key(s): its 1 cluster(s) (%s)`, staging)},
	}
	ago := regexp.MustCompile(`probed [^)]* ago`)
	var first []string
	for _, order := range []struct {
		name   string
		config string
	}{
		{"eu first", euRoute("") + stagingRoute("eu")},
		{"staging first", stagingRoute("") + euRoute("staging")},
	} {
		w.write(order.config)
		start := time.Now()
		got, failed := w.diags("plan", "-parallelism=1")
		if failed {
			t.Fatalf("%s: the plan failed: %v", order.name, got)
		}
		var seen []string
		for _, d := range only(got, summaries...) {
			k := d.Address + " " + d.Summary
			parts, ok := want[k]
			if !ok || d.Severity != "warning" {
				t.Errorf("%s: unexpected %s %v", order.name, k, d)
				continue
			}
			for _, p := range parts {
				if !strings.Contains(d.Detail, p) {
					t.Errorf("%s: %s does not say %q:\n%s", order.name, k, p, d.Detail)
				}
			}
			seen = append(seen, k+": "+ago.ReplaceAllString(d.Detail, "probed … ago"))
		}
		slices.Sort(seen)
		if len(seen) != len(want) {
			t.Errorf("%s: %d of the checks' warnings, want %d:\n%s", order.name, len(seen), len(want), strings.Join(seen, "\n"))
		}
		t.Logf("%s: %d warnings in %s", order.name, len(seen), time.Since(start).Round(100*time.Millisecond))
		if first == nil {
			first = seen
		} else if !slices.Equal(first, seen) {
			t.Errorf("the warnings depend on the plan order:\n%s\nthen\n%s", strings.Join(first, "\n"), strings.Join(seen, "\n"))
		}
	}
	if names, err := f.RouteNames(); err != nil || len(names) != 0 {
		t.Errorf("routes on the hub after plans: %v (%v), want none", names, err)
	}
}
