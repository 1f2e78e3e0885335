package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replicationFigures writes registry's OCIReplication in the fixtures' workspace with the given
// figures, as fleet-controller hub's replication reconciler would.
func replicationFigures(t *testing.T, f *hubFixtures, registry, p50, p95 string, measured, waiting int) {
	t.Helper()
	gvr := ociReplicationKind.GroupVersionResource
	f.create(gvr, map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": ociReplicationKind.Kind,
		"metadata": map[string]any{"name": registry, "namespace": f.ws},
	})
	ri := f.dyn.Resource(gvr).Namespace(f.ws)
	u, err := ri.Get(context.Background(), registry, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"registry": registry, "window": "24h0m0s", "measured": int64(measured), "p50": p50, "p95": p95,
		"waiting": int64(waiting), "oldestWaiting": "2026-12-01T10:00:00Z"}
	if _, err := ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAccOCIRoutePlan_predictedFailover: with the hub's figures for harbor-eu (p95 15m), a
// route that waits less for it warns that its clusters fail over to harbor-central, naming the
// route, registry, lag, wait and clusters; a longer wait, or a first registry without figures,
// warns of nothing. Two routes planned in either order get the same warnings (the soundness
// rule: the check reads only the hub as the plan began and the route's own values).
func TestAccOCIRoutePlan_predictedFailover(t *testing.T) {
	f, ws := euHub(t)
	replicationFigures(t, f, "harbor-eu", "5m0s", "15m0s", 3, 1)
	only := func(ds diag.Diagnostics) diag.Diagnostics {
		var out diag.Diagnostics
		for _, d := range ds {
			if d.Summary() == predictedFailoverSummary {
				out = append(out, d)
			}
		}
		return out
	}
	eu := func(wait string, registries ...string) *ociRouteModel {
		m := route("eu-clusters", 10, registries...)
		m.Workspace, m.ID = types.StringValue(ws), types.StringValue(ws+"/eu-clusters")
		m.ClusterSelectors = sels(sel(map[string]string{"region": "eu"}, nil))
		m.ReplicationWait = types.StringValue(wait)
		return &m
	}
	us := func(wait string) *ociRouteModel {
		m := route("us", 30, "harbor-eu")
		m.Workspace, m.ID = types.StringValue(ws), types.StringValue(ws+"/us")
		m.ClusterSelectors = sels(sel(map[string]string{"region": "us"}, nil))
		m.ReplicationWait = types.StringValue(wait)
		return &m
	}
	var cfg map[string]tftypes.Value // the hub of KUBE_CONFIG_PATH; the workspace is the route's
	d := newPlanDriver(t, cfg)
	prior := eu("10m", "harbor-eu", "harbor-central")

	assertPlanDiags(t, only(d.plan(eu("10m", "harbor-eu", "harbor-central"), prior)), []wantPlanDiag{{diag.SeverityWarning, predictedFailoverSummary, fmt.Sprintf(
		`Route "eu-clusters" waits 10m0s (replication_wait) for registry "harbor-eu", whose observed replication lag is p95 15m0s (p50 5m0s, over 3 artifact(s) pushed in the last 24h0m0s; `+
			`1 artifact(s) still waiting there, the oldest pushed 2026-12-01T10:00:00Z). For new artifacts, 2 cluster(s) it wins (%s, %s) will give up on "harbor-eu" before they arrive `+
			`and pull from registry "harbor-central". Raise replication_wait above 15m0s, or put a registry that replicates sooner first (fleet_oci_replication shows the figures).`,
		f.Name("eu-01"), f.Name("eu-staging-01")), false}})
	assertPlanDiags(t, only(d.plan(eu("20m", "harbor-eu", "harbor-central"), prior)), nil)
	assertPlanDiags(t, only(d.plan(eu("15m", "harbor-eu", "harbor-central"), prior)), nil) // not shorter than the p95
	assertPlanDiags(t, only(d.plan(eu("0s", "harbor-central", "harbor-eu"), prior)), nil)  // no figures for harbor-central

	// A lone registry: the clusters' pulls of new artifacts fail rather than fail over.
	lone := only(newPlanDriver(t, cfg).plan(us("1m"), nil))
	assertPlanDiags(t, lone, []wantPlanDiag{{diag.SeverityWarning, predictedFailoverSummary, fmt.Sprintf(
		`Route "us" waits 1m0s (replication_wait) for registry "harbor-eu", whose observed replication lag is p95 15m0s (p50 5m0s, over 3 artifact(s) pushed in the last 24h0m0s; `+
			`1 artifact(s) still waiting there, the oldest pushed 2026-12-01T10:00:00Z). For new artifacts, 1 cluster(s) it wins (%s) will give up on "harbor-eu" before they arrive `+
			`and pull from no other registry: their pulls of them fail.`, f.Name("us-01")), true}})

	// Either order, the same warnings.
	one, two := newPlanDriver(t, cfg), newPlanDriver(t, cfg)
	a1, b1 := only(one.plan(eu("1m", "harbor-eu", "harbor-central"), prior)), only(one.plan(us("1m"), nil))
	b2, a2 := only(two.plan(us("1m"), nil)), only(two.plan(eu("1m", "harbor-eu", "harbor-central"), prior))
	if len(a1) != 1 || len(b1) != 1 || !a1.Equal(a2) || !b1.Equal(b2) {
		t.Fatalf("warnings depend on the order:\n%s\n%s\nthen\n%s\n%s", describeDiags(a1), describeDiags(b1), describeDiags(b2), describeDiags(a2))
	}
}
