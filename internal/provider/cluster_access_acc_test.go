package provider

import (
	"fmt"
	"strings"
	"testing"
)

// TestAccPlanWarnsClusterNotBound: fleet_app, fleet_app_route, fleet_cluster_join and
// fleet_storage_site_deployment naming a cluster that no ManagedClusterSet bound to the
// workspace holds each warn, naming the workspace and the set that holds the cluster (a warning:
// a binding may be made by this plan or another configuration), whatever order Terraform plans
// in; once the set is bound, none warns.
func TestAccPlanWarnsClusterNotBound(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	// The set exists but is not bound to the workspace (ClusterSet would bind it).
	set := f.Name("edge")
	f.create(clusterSetsGVR, map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
		"metadata": map[string]any{"name": set}, "spec": map[string]any{"clusterSelector": map[string]any{"selectorType": "ExclusiveClusterSetLabel"}},
	})
	cluster := f.Cluster("store", "edge", nil)
	h := newSiteHub(t, ws)
	h.create("FleetChart", "hello", false, map[string]any{"repository": "charts/hello", "version": "0.1.0"})
	h.create("FleetApp", "onhub", false, map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web"})

	const notBound = "Cluster not bound to the workspace"
	why := fmt.Sprintf("cluster %s is in no ManagedClusterSet bound to workspace %s: bind one of its sets (%s) with a ManagedClusterSetBinding in %s", cluster, ws, set, ws)
	app := appConfig(ws, cluster, `  namespace = "web"`)
	route := appRouteConfig(ws, `  app  = "onhub"
  mode = "site"
  host = "notbound.example.com"`)
	join := fmt.Sprintf("resource \"fleet_cluster_join\" \"j\" {\n  name = \"j\"\n  workspace = %q\n  cluster = %q\n  site = \"berlin\"\n}\n", ws, cluster)
	ssd := ssdConfig(ws, cluster, "")
	all := app + route + join + ssd

	expectEach := func(step string, config string, args ...string) {
		t.Helper()
		w.write(config)
		d, failed := w.diags(append([]string{"plan"}, args...)...)
		if failed {
			t.Fatalf("%s: the plan failed: %v", step, d)
		}
		seen := map[string]bool{}
		for _, g := range only(d, notBound) {
			for _, obj := range []string{"FleetApp " + ws + "/hello installs", "FleetAppRoute " + ws + "/r publishes app onhub", "FleetClusterJoin " + ws + "/j joins",
				"StorageSiteDeployment " + ws + "/site-a deploys"} {
				if strings.HasPrefix(g.Detail, obj) {
					seen[obj] = true
				}
			}
			if g.Severity != "warning" || !strings.Contains(g.Detail, why) || !strings.Contains(g.Detail, "NotBound") {
				t.Errorf("%s: %s %q does not say %q:\n%s", step, g.Severity, g.Summary, why, g.Detail)
			}
		}
		if len(only(d, notBound)) != 4 || len(seen) != 4 {
			t.Errorf("%s: %d %q warnings for %v, want one for each of the four resources: %v", step, len(only(d, notBound)), notBound, seen, d)
		}
	}
	expectEach("all four", all)
	expectEach("reversed", ssd+join+route+app)
	expectEach("-parallelism=1", all, "-parallelism=1")

	f.Bind(set)
	w.write(all)
	d, failed := w.diags("plan")
	if failed || len(only(d, notBound)) != 0 {
		t.Errorf("bound: failed %v, warnings %v; want no %q", failed, only(d, notBound), notBound)
	}
}
