package provider

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestAccAppPlanWarnings checks the warnings the CLI shows for an app whose cluster or chart is
// not ready, each of which a resource of the plan may resolve: a cluster that is no
// ManagedCluster, a cluster no join of the workspace names (the app waits), a join that exists
// but is not Ready (named, with its reason; the app is delivered), a chart not on the hub (also when a fleet_chart of
// the same plan creates it). An update that touches neither cluster nor chart checks nothing.
func TestAccAppPlanWarnings(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	unjoined, waiting, ready := f.Usable("unjoined"), f.Usable("waiting"), f.Usable("ready")
	h := newSiteHub(t, ws)
	h.create("FleetChart", "hello", false, map[string]any{"repository": "charts/hello", "version": "0.1.0"})
	h.create("FleetClusterJoin", "j-waiting", false, map[string]any{"cluster": waiting, "site": "nowhere"})
	h.setStatus("FleetClusterJoin", "j-waiting", map[string]any{"conditions": []any{readyStatus("False", "SiteNotFound", `FleetSite "nowhere" not found`)}})
	h.create("FleetClusterJoin", "j-ready", false, map[string]any{"cluster": ready, "site": "berlin"})
	h.setStatus("FleetClusterJoin", "j-ready", map[string]any{"conditions": []any{readyStatus("True", "Ready", "")}})
	const (
		clusterMissing = "Cluster not on the hub"
		notJoined      = "Cluster not joined"
		joinNotReady   = "Cluster join not Ready"
		chartMissing   = "Chart not on the hub"
	)
	all := []string{clusterMissing, notJoined, joinNotReady, chartMissing}
	expect := func(step string, config string, want map[string][]string) {
		t.Helper()
		d, failed := w.plan(config)
		expectWarnings(t, step, d, failed, all, want)
	}
	app := func(cluster, chart, values string) string {
		if !strings.HasPrefix(chart, "fleet_chart.") {
			chart = strconv.Quote(chart) // else a reference
		}
		return fmt.Sprintf("resource \"fleet_app\" \"a\" {\n  name = \"hello\"\n  workspace = %q\n  chart = %s\n  cluster = %q\n  namespace = \"web\"\n  values = jsonencode(%s)\n}\n", ws, chart, cluster, values)
	}

	expect("cluster missing", app("not-registered", "hello", "{}"), map[string][]string{clusterMissing: {"FleetApp " + ws + "/hello", `"not-registered", which is not a ManagedCluster`}})
	expect("cluster not joined", app(unjoined, "hello", "{}"), map[string][]string{notJoined: {
		fmt.Sprintf("Cluster %q of FleetApp %s/hello is not joined", unjoined, ws), "no FleetClusterJoin of workspace " + ws + " names it",
		"no fleet_cluster_join of this configuration planned before the app joins it", "set the app's cluster to fleet_cluster_join.<label>.cluster",
		"Until it is joined the app waits (phase Pending, reason NotJoined, nothing delivered to the cluster)"}})
	expect("join not Ready", app(waiting, "hello", "{}"), map[string][]string{joinNotReady: {
		"FleetClusterJoin " + ws + "/j-waiting, which exists but is not Ready yet", `SiteNotFound: FleetSite "nowhere" not found`,
		"The app is delivered all the same"}})
	expect("chart missing", app(ready, "nochart", "{}"), map[string][]string{chartMissing: {`installs chart "nochart"`, "no fleet_chart of this configuration planned before the app creates it", "refer to it as fleet_chart.<label>.name"}})
	// The chart of the same plan, referred to as the docs recommend: Terraform plans it first, so
	// the app's check knows this plan creates it (hubresource.Env.Planned): no warning, in either
	// order of declaration and at -parallelism=1. (A literal name gives Terraform no order; the
	// warning then depends on it, and says to refer to the chart.)
	chart := "resource \"fleet_chart\" \"c\" {\n  name = \"newchart\"\n  workspace = \"" + ws + "\"\n  repository = \"charts/new\"\n  version = \"1.0.0\"\n}\n"
	expect("chart in the same plan", chart+app(ready, "fleet_chart.c.name", "{}"), nil)
	expect("chart in the same plan, reversed", app(ready, "fleet_chart.c.name", "{}")+chart, nil)
	w.write(app(ready, "fleet_chart.c.name", "{}") + chart)
	got, failed := w.diags("plan", "-parallelism=1")
	expectWarnings(t, "chart in the same plan, -parallelism=1", got, failed, all, nil)
	expect("ready", app(ready, "hello", "{}"), nil)

	// The same answers whatever order Terraform plans in: with a sibling app, declared either way,
	// at -parallelism=1, and with the sibling renamed (replaced).
	sibling := func(name string) string {
		return fmt.Sprintf("resource \"fleet_app\" %q {\n  name = %q\n  workspace = %q\n  chart = \"hello\"\n  cluster = %q\n  namespace = \"web\"\n}\n", name, name, ws, unjoined)
	}
	subject := chart + app(waiting, "fleet_chart.c.name", "{}")
	want := map[string][]string{joinNotReady: {"FleetClusterJoin " + ws + "/j-waiting, which exists but is not Ready yet"},
		notJoined: {fmt.Sprintf("Cluster %q of FleetApp %s/", unjoined, ws)}}
	w.apply(sibling("b"))
	for _, v := range []struct {
		name   string
		blocks []string
		args   []string
	}{
		{"with a sibling", []string{subject, sibling("b")}, nil},
		{"declared in reverse", []string{sibling("b"), subject}, nil},
		{"-parallelism=1", []string{subject, sibling("b")}, []string{"-parallelism=1"}},
		{"reversed, -parallelism=1", []string{sibling("b"), subject}, []string{"-parallelism=1"}},
		{"sibling renamed", []string{subject, sibling("b2")}, nil},
	} {
		w.write(strings.Join(v.blocks, ""))
		got, failed := w.diags(append([]string{"plan"}, v.args...)...)
		step := "join not Ready, " + v.name
		if v.name == "sibling renamed" {
			expectWarnings(t, step, got, failed, all, want) // the new name is checked: its cluster is not joined
			continue
		}
		expectWarnings(t, step, got, failed, all, map[string][]string{joinNotReady: want[joinNotReady]})
	}
	w.destroy()

	// Applied on a cluster whose join is not Ready: a warning; a later change of values only checks nothing.
	w.apply(app(waiting, "hello", "{ replicaCount = 1 }"))
	expect("values changed", app(waiting, "hello", "{ replicaCount = 2 }"), nil)
	expect("chart changed", app(waiting, "nochart", "{ replicaCount = 2 }"), map[string][]string{chartMissing: {`installs chart "nochart"`}})

	w.destroy()
	if _, err := h.get("FleetApp", "hello"); !apierrors.IsNotFound(err) {
		t.Errorf("app after destroy: %v, want NotFound", err)
	}
}

// TestAccAppRoutePlanWarnings checks the warnings the CLI shows for a route where a resource of
// the plan may change the cause: hub mode on a site without a hub gateway and site mode for a
// cluster bound to no entry, when the site or join is managed by Terraform; a site with no WAN
// path; a hub-mode host outside the gateway domain of a site Terraform manages; a host and path
// claimed by a route Terraform manages; an app, its join or the site not on
// the hub, where the check could not be made. Mode none checks nothing.
func TestAccAppRoutePlanWarnings(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	a, b, c, d, e := f.Usable("a"), f.Usable("b"), f.Usable("c"), f.Usable("d"), f.Usable("e")
	h := newSiteHub(t, ws)
	h.create("FleetSite", "managed-site", true, map[string]any{"edge": map[string]any{"ingress": []any{
		map[string]any{"id": "proxy", "method": "reverse_proxy", "address": "edge.example.com"}}}})
	h.create("FleetSite", "bare", false, map[string]any{})
	h.create("FleetClusterJoin", "ja", false, map[string]any{"cluster": a, "site": "managed-site"})
	h.create("FleetClusterJoin", "jb", true, map[string]any{"cluster": b, "site": "bare"})
	h.create("FleetClusterJoin", "jd", false, map[string]any{"cluster": d, "site": "nosite"})
	h.create("FleetSite", "gw-site", true, map[string]any{"hubGateway": map[string]any{"enabled": true, "domain": "apps.example.com"}})
	h.create("FleetClusterJoin", "je", false, map[string]any{"cluster": e, "site": "gw-site"})
	for app, cluster := range map[string]string{"app-a": a, "app-b": b, "app-c": c, "app-d": d, "app-e": e} {
		h.create("FleetApp", app, false, map[string]any{"chart": "hello", "cluster": cluster, "namespace": "web"})
	}
	h.create("FleetAppRoute", "other", true, map[string]any{"app": "app-a", "mode": "site", "host": "shared.example.com", "path": "/", "service": map[string]any{"name": "x", "port": 80}})
	const (
		noGateway  = "Site has no hub gateway"
		noEntry    = "Cluster not bound to an ingress entry"
		noWAN      = "Site has no WAN path"
		hostTaken  = "Host and path already routed"
		appMissing = "App not on the hub"
		notJoined  = "App's cluster not joined"
		noSite     = "Site not on the hub"
		outside    = "Host outside the hub gateway's domain"
	)
	all := []string{noGateway, noEntry, noWAN, hostTaken, appMissing, notJoined, noSite, outside}
	expect := func(step string, config string, want map[string][]string) {
		t.Helper()
		d, failed := w.plan(config)
		expectWarnings(t, step, d, failed, all, want)
	}
	route := func(app, mode, host string) string {
		return appRouteConfig(ws, fmt.Sprintf("  app = %q\n  mode = %q\n  host = %q", app, mode, host))
	}
	chainA := "app app-a runs on cluster " + a + ", which FleetClusterJoin " + ws + "/ja joins to FleetSite " + ws + "/managed-site"
	mayFix := "The app, its join or the site is managed by Terraform, so this plan may fix it"

	expect("hub mode without gateway", route("app-a", "hub", "a.example.com"), map[string][]string{noGateway: {chainA, "needs the site's hub_gateway enabled", mayFix, "(NoHubGateway)"}})
	expect("site mode without entry", route("app-a", "site", "a.example.com"), map[string][]string{noEntry: {chainA, "the join binds it to none", mayFix, "(NoIngress)"}})
	expect("hub host outside a managed site's domain", route("app-e", "hub", "e.example.com"), map[string][]string{outside: {
		"FleetSite " + ws + "/gw-site", `domain "apps.example.com"`, `host "e.example.com" is neither`, mayFix, "(HostOutsideDomain)"}})
	expect("hub host under the domain", route("app-e", "hub", "e.apps.example.com"), map[string][]string{})
	expect("no WAN path", route("app-b", "site", "b.example.com"), map[string][]string{
		noWAN:   {"FleetSite " + ws + "/bare, which has no ingress entry and no enabled hub gateway"},
		noEntry: {"FleetClusterJoin " + ws + "/jb joins", mayFix}})
	expect("host taken by a managed route", route("app-a", "hub", "shared.example.com"), map[string][]string{
		hostTaken: {"publishes shared.example.com/", "is held by FleetAppRoute " + ws + "/other", "this plan may change or destroy it", "(HostTaken)"},
		noGateway: {chainA}})
	expect("app missing", route("nope", "site", "n.example.com"), map[string][]string{appMissing: {`app "nope" is not a FleetApp of workspace ` + ws, "could not be checked"}})
	expect("cluster not joined", route("app-c", "site", "c.example.com"), map[string][]string{notJoined: {"cluster \"" + c + "\" of FleetApp " + ws + "/app-c is joined by no FleetClusterJoin"}})
	expect("site missing", route("app-d", "hub", "d.example.com"), map[string][]string{noSite: {`site "nosite" of FleetClusterJoin ` + ws + "/jd"}})
	expect("mode none", appRouteConfig(ws, "  app = \"nope\"\n  mode = \"none\""), nil)

	// The same answers whatever order Terraform plans in: with a sibling route, declared either
	// way, at -parallelism=1, and with the sibling renamed (replaced).
	sibling := func(name string) string {
		return fmt.Sprintf("resource \"fleet_app_route\" %q {\n  name = %q\n  workspace = %q\n  app = \"app-b\"\n  mode = \"site\"\n  host = %q\n  service = { name = \"hello\", port = 80 }\n}\n",
			name, name, ws, name+".example.com")
	}
	subject := route("app-a", "hub", "shared.example.com")
	taken := map[string][]string{hostTaken: {"is held by FleetAppRoute " + ws + "/other"}, noGateway: {chainA}}
	withSibling := map[string][]string{hostTaken: taken[hostTaken], noGateway: taken[noGateway],
		noWAN: {"FleetSite " + ws + "/bare"}, noEntry: {"FleetClusterJoin " + ws + "/jb joins"}}
	w.apply(sibling("s"))
	for _, v := range []struct {
		name   string
		blocks []string
		args   []string
		want   map[string][]string
	}{
		{"with a sibling", []string{subject, sibling("s")}, nil, taken},
		{"declared in reverse", []string{sibling("s"), subject}, nil, taken},
		{"-parallelism=1", []string{subject, sibling("s")}, []string{"-parallelism=1"}, taken},
		{"reversed, -parallelism=1", []string{sibling("s"), subject}, []string{"-parallelism=1"}, taken},
		// The new name is checked too: its site has no WAN path and its join no entry.
		{"sibling renamed", []string{subject, sibling("s2")}, nil, withSibling},
	} {
		w.write(strings.Join(v.blocks, ""))
		got, failed := w.diags(append([]string{"plan"}, v.args...)...)
		expectWarnings(t, "host taken, "+v.name, got, failed, all, v.want)
	}

	w.apply(route("app-a", "hub", "a.example.com"))
	if _, err := h.get("FleetAppRoute", "r"); err != nil {
		t.Errorf("route after apply: %v", err)
	}
	w.destroy()
	if _, err := h.get("FleetAppRoute", "r"); !apierrors.IsNotFound(err) {
		t.Errorf("route after destroy: %v, want NotFound", err)
	}
}
