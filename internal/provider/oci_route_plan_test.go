package provider

// Plan-time warnings of fleet_oci_route, asserted from Go: terraform-plugin-testing cannot see
// warnings. The provider is configured as Terraform would (Configure with a config value built
// from its schema), and the route resource's ModifyPlan is driven with plan, state and config
// values built from the resource schema. These tests run against the local hub, so they are
// TestAcc… tests (TF_ACC=1).

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

// planDriver is one resource of one configured provider, with model M, as Terraform would use
// it for one plan: every ModifyPlan call shares the provider's hub client.
type planDriver[M any] struct {
	t      testing.TB
	res    resource.ResourceWithModifyPlan
	schema tfsdk.Plan // holds only the schema, for building values
}

// newPlanDriver configures a new provider with the given provider-block attributes (the rest
// null, so that KUBE_CONFIG_PATH names the hub) and returns its fleet_oci_route resource.
func newPlanDriver(t testing.TB, providerConfig map[string]tftypes.Value) *planDriver[ociRouteModel] {
	t.Helper()
	return newPlanDriverFor[ociRouteModel](t, "fleet_oci_route", providerConfig)
}

// newPlanDriverFor is newPlanDriver for the resource typeName, whose model is M.
func newPlanDriverFor[M any](t testing.TB, typeName string, providerConfig map[string]tftypes.Value) *planDriver[M] {
	t.Helper()
	ctx := context.Background()
	p := New("test")()
	var sresp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &sresp)
	typ := sresp.Schema.Type().TerraformType(ctx).(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
		if v, ok := providerConfig[name]; ok {
			vals[name] = v
		}
	}
	var cresp provider.ConfigureResponse
	p.Configure(ctx, provider.ConfigureRequest{Config: tfsdk.Config{Schema: sresp.Schema, Raw: tftypes.NewValue(typ, vals)}}, &cresp)
	if cresp.Diagnostics.HasError() {
		t.Fatalf("configure provider:\n%s", describeDiags(cresp.Diagnostics))
	}

	var res resource.Resource
	for _, newRes := range p.Resources(ctx) {
		r := newRes()
		var mresp resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "fleet"}, &mresp)
		if mresp.TypeName == typeName {
			res = r
		}
	}
	if res == nil {
		t.Fatalf("the provider has no %s resource", typeName)
	}
	var confResp resource.ConfigureResponse
	res.(resource.ResourceWithConfigure).Configure(ctx, resource.ConfigureRequest{ProviderData: cresp.ResourceData}, &confResp)
	if confResp.Diagnostics.HasError() {
		t.Fatalf("configure resource:\n%s", describeDiags(confResp.Diagnostics))
	}
	var sr resource.SchemaResponse
	res.Schema(ctx, resource.SchemaRequest{}, &sr)
	return &planDriver[M]{t: t, res: res.(resource.ResourceWithModifyPlan), schema: tfsdk.Plan{Schema: sr.Schema}}
}

// model returns a copy of m that can be set into a plan: timeouts null.
func (d *planDriver[M]) model(m M) *M {
	ctx := context.Background()
	tt, diags := d.schema.Schema.TypeAtPath(ctx, path.Root("timeouts"))
	if diags.HasError() {
		d.t.Fatalf("timeouts type: %v", diags)
	}
	null := timeouts.Value{Object: types.ObjectNull(tt.(attr.TypeWithAttributeTypes).AttributeTypes())}
	reflect.ValueOf(&m).Elem().FieldByName("Timeouts").Set(reflect.ValueOf(null)) // of the embedded hubresource.Meta
	return &m
}

// plan runs ModifyPlan for a create (prior nil), an update or replace, or a destroy (planned nil)
// and returns its diagnostics.
func (d *planDriver[M]) plan(planned *M, prior *M) diag.Diagnostics {
	d.t.Helper()
	ctx := context.Background()
	typ := d.schema.Schema.Type().TerraformType(ctx)
	plan := tfsdk.Plan{Schema: d.schema.Schema, Raw: tftypes.NewValue(typ, nil)}
	if planned != nil {
		if diags := plan.Set(ctx, d.model(*planned)); diags.HasError() {
			d.t.Fatalf("build plan:\n%s", describeDiags(diags))
		}
	}
	state := tfsdk.State{Schema: d.schema.Schema, Raw: tftypes.NewValue(typ, nil)}
	if prior != nil {
		if diags := state.Set(ctx, d.model(*prior)); diags.HasError() {
			d.t.Fatalf("build state:\n%s", describeDiags(diags))
		}
	}
	req := resource.ModifyPlanRequest{
		Config: tfsdk.Config{Schema: d.schema.Schema, Raw: plan.Raw.Copy()},
		Plan:   plan,
		State:  state,
	}
	resp := resource.ModifyPlanResponse{Plan: tfsdk.Plan{Schema: plan.Schema, Raw: plan.Raw.Copy()}}
	d.res.ModifyPlan(ctx, req, &resp)
	return resp.Diagnostics
}

type wantPlanDiag struct {
	severity diag.Severity
	summary  string
	detail   string // exact, or a prefix when prefix is set
	prefix   bool
}

func assertPlanDiags(t *testing.T, got diag.Diagnostics, want []wantPlanDiag) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics, want %d:\n%s", len(got), len(want), describeDiags(got))
	}
	for i, w := range want {
		d := got[i]
		if d.Severity() != w.severity || d.Summary() != w.summary {
			t.Errorf("diagnostic %d = %s %q, want %s %q", i, d.Severity(), d.Summary(), w.severity, w.summary)
		}
		if ok := d.Detail() == w.detail || w.prefix && strings.HasPrefix(d.Detail(), w.detail); !ok {
			t.Errorf("diagnostic %d detail =\n  %q\nwant\n  %q (prefix: %v)", i, d.Detail(), w.detail, w.prefix)
		}
	}
}

// euHub sets up a workspace with EU clusters, a US cluster, two registries and the EU label
// route at priority 10, all on the hub.
func euHub(t *testing.T) (*hubFixtures, string) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("general")
	f.Cluster("eu-01", "general", map[string]string{"region": "eu"})
	f.Cluster("eu-staging-01", "general", map[string]string{"region": "eu", "stage": "staging"})
	f.Cluster("us-01", "general", map[string]string{"region": "us"})
	f.Registry("harbor-eu", "source", "harbor-eu.example.com/fleet")
	f.Registry("harbor-central", "mirror", "harbor-central.example.com/fleet")
	f.Route("eu-clusters", map[string]any{
		"priority":         10,
		"clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"region": "eu"}}},
		"registries":       []any{"harbor-eu", "harbor-central"},
		"replicationWait":  "10m",
	})
	return f, ws
}

func TestAccOCIRoutePlan_warnings(t *testing.T) {
	f, ws := euHub(t)
	staging := f.Name("eu-staging-01")
	newRoute := func(name string, priority int64, edit func(*ociRouteModel)) ociRouteModel {
		m := route(name, priority, "harbor-central")
		m.Workspace, m.ID = types.StringValue(ws), types.StringValue(ws+"/"+name)
		edit(&m)
		return m
	}
	byName := func(names ...string) func(*ociRouteModel) {
		return func(m *ociRouteModel) { m.ClusterNames = strSet(names...) }
	}
	euRoute := newRoute("eu-clusters", 10, func(m *ociRouteModel) {
		m.ClusterSelectors = sels(sel(map[string]string{"region": "eu"}, nil))
		m.Registries = strList("harbor-eu", "harbor-central")
		m.ReplicationWait = types.StringValue("10m")
	})

	cases := []struct {
		name  string
		plan  ociRouteModel
		prior *ociRouteModel
		want  []wantPlanDiag
	}{
		{
			name: "shadowed by the EU route",
			plan: newRoute("staging", 50, byName(staging)),
			want: []wantPlanDiag{{diag.SeverityWarning, "Route shadowed", fmt.Sprintf(
				`Route "staging" (priority 50) wins none of the clusters it selects: %s is matched first by route "eu-clusters" (priority 10). `+
					`Give it a priority lower than 10 to take them, or remove it.`, staging), false}},
		},
		{
			name: "captures a cluster from the EU route",
			plan: newRoute("staging", 5, byName(staging)),
			want: []wantPlanDiag{{diag.SeverityWarning, "Clusters change route", fmt.Sprintf(
				`Applying route "staging" moves 1 cluster(s) in workspace %s: %s from "eu-clusters" to "staging". `+
					`They pull through the new chain on their next pull; nothing is redeployed.`, ws, staging), false}},
		},
		{
			// A cluster gaining its first route loses nothing: nothing to act on, no warning.
			name: "routes a cluster no route matched",
			plan: newRoute("us", 30, func(m *ociRouteModel) { m.ClusterSelectors = sels(sel(map[string]string{"region": "us"}, nil)) }),
		},
		{
			name: "an update that drops clusters from the EU route",
			plan: newRoute("eu-clusters", 10, func(m *ociRouteModel) {
				m.ClusterSelectors = sels(sel(map[string]string{"region": "eu", "stage": "staging"}, nil))
				m.Registries = strList("harbor-eu", "harbor-central")
				m.ReplicationWait = types.StringValue("10m")
			}),
			prior: &euRoute,
			want: []wantPlanDiag{{diag.SeverityWarning, "Clusters change route", fmt.Sprintf(
				`Applying route "eu-clusters" moves 1 cluster(s) in workspace %s: %s from "eu-clusters" to no route. `+
					`They pull through the new chain on their next pull; nothing is redeployed. 1 of them is left with no route, and so with no registry chain.`, ws, f.Name("eu-01")), false}},
		},
		{
			name: "statically shadowed: its selector implies the EU route's",
			plan: newRoute("eu-staging", 50, func(m *ociRouteModel) {
				m.ClusterSelectors = sels(sel(map[string]string{"region": "eu", "stage": "staging"}, nil))
			}),
			want: []wantPlanDiag{{diag.SeverityWarning, "Route shadowed",
				`Route "eu-staging" can never win a cluster: every criterion is covered by an earlier route — ` +
					`cluster_selectors[0] by route "eu-clusters" (priority 10) cluster_selectors[0]. Give it a lower priority than those routes, or remove it.`, false}},
		},
		{
			name: "an unchanged route warns of nothing",
			plan: euRoute, prior: &euRoute,
		},
		{
			name: "cluster names and groups the workspace does not have are named",
			plan: newRoute("lab", 5, func(m *ociRouteModel) { m.ClusterNames = strSet("us-02"); m.ClusterGroups = strSet("airgap-store") }),
			want: []wantPlanDiag{
				{diag.SeverityWarning, "Clusters not in workspace", fmt.Sprintf(`Route "lab" names "us-02", which is no ManagedCluster in the cluster sets bound to workspace %s. `+
					`The route matches them once they join; check the spelling.`, ws), false},
				{diag.SeverityWarning, "Cluster groups not bound to workspace", fmt.Sprintf(`Route "lab" names cluster group "airgap-store", which is not a ManagedClusterSet bound to workspace %s (bound: %s). `+
					`Bind it with a ManagedClusterSetBinding, or check the spelling.`, ws, f.Name("general")), false},
			},
		},
		{
			name: "a selector no cluster matches is named, a matching one is not",
			plan: newRoute("eu-typo", 40, func(m *ociRouteModel) {
				m.ClusterSelectors = sels(sel(map[string]string{"regoin": "eu"}, nil), sel(map[string]string{"region": "eu"}, nil))
			}),
			want: []wantPlanDiag{
				{diag.SeverityWarning, "Selector matches no cluster", `Route "eu-typo": cluster_selectors[0] (regoin=eu) matches none of the `, true},
				{diag.SeverityWarning, "Route shadowed", `Route "eu-typo" `, true},
			},
		},
		{
			name: "a registry not on the hub is a warning: this plan may create it",
			plan: newRoute("lab", 5, func(m *ociRouteModel) { m.ClusterNames = strSet(staging); m.Registries = strList("harbor-lab") }),
			want: []wantPlanDiag{
				{diag.SeverityWarning, "Registry not on the hub", `Route "lab" names registry "harbor-lab", which workspace ` + ws + ` does not have, and no fleet_oci_registry of this configuration planned before the route creates it.`, true},
				{diag.SeverityWarning, "Clusters change route", fmt.Sprintf(`Applying route "lab" moves 1 cluster(s) in workspace %s: %s from "eu-clusters" to "lab". `, ws, staging), true},
			},
		},
		{
			name: "values known only at apply time: what is known is checked",
			plan: newRoute("late", 50, func(m *ociRouteModel) { m.ClusterNames = strSet(staging); m.Priority = types.Int64Unknown() }),
			want: []wantPlanDiag{{diag.SeverityWarning, "Route effect not checked",
				`Route "late" has values known only at apply, so its effect on clusters was not computed.`, false}},
		},
		{
			name: "priority of a route no Terraform configuration manages",
			plan: newRoute("staging", 10, byName(staging)),
			want: []wantPlanDiag{{diag.SeverityError, "Priority already taken",
				fmt.Sprintf(`On the hub, route "eu-clusters" of workspace %s has priority 10; priorities must be unique. No Terraform configuration manages route "eu-clusters", `+
					`so this plan cannot change it: choose another priority for "staging", or change "eu-clusters" on the hub (or import it).`, ws), false}},
		},
		{
			name: "renaming a route keeps its priority: its prior is not a conflict",
			plan: newRoute("eu", 10, func(m *ociRouteModel) {
				m.ClusterSelectors = sels(sel(map[string]string{"region": "eu"}, nil))
				m.Registries = strList("harbor-eu", "harbor-central")
				m.ReplicationWait = types.StringValue("10m")
			}),
			prior: &euRoute,
			want:  []wantPlanDiag{{diag.SeverityWarning, "Clusters change route", fmt.Sprintf(`Applying route "eu" moves 2 cluster(s) in workspace %s: `, ws), true}},
		},
		{
			name:  "destroying a route warns of the clusters it leaves without one",
			prior: &euRoute,
			want: []wantPlanDiag{{diag.SeverityWarning, "Clusters change route", fmt.Sprintf(`Destroying route "eu-clusters" moves 2 cluster(s) in workspace %s: %s from "eu-clusters" to no route, %s from "eu-clusters" to no route. `+
				`They pull through the new chain on their next pull; nothing is redeployed. 2 of them are left with no route, and so with no registry chain.`, ws, f.Name("eu-01"), staging), false}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newPlanDriver(t, nil) // a new provider: a plan of its own
			var plan *ociRouteModel
			if tc.plan.Name.ValueString() != "" {
				plan = &tc.plan
			}
			assertPlanDiags(t, d.plan(plan, tc.prior), tc.want)
		})
	}
}

// TestAccOCIRoutePlan_collisionBlamesTheChange plans, in one plan, a new route that takes the EU
// route's priority and then the unchanged EU route: only the new route gets the error.
func TestAccOCIRoutePlan_collisionBlamesTheChange(t *testing.T) {
	f, ws := euHub(t)
	staging := route("staging", 10, "harbor-central")
	staging.Workspace, staging.ID = types.StringValue(ws), types.StringValue(ws+"/staging")
	staging.ClusterNames = strSet(f.Name("eu-staging-01"))
	eu := route("eu-clusters", 10, "harbor-eu", "harbor-central")
	eu.Workspace, eu.ID = types.StringValue(ws), types.StringValue(ws+"/eu-clusters")
	eu.ClusterSelectors = sels(sel(map[string]string{"region": "eu"}, nil))
	eu.ReplicationWait = types.StringValue("10m")

	d := newPlanDriver(t, nil)
	assertPlanDiags(t, d.plan(&staging, nil), []wantPlanDiag{{diag.SeverityError, "Priority already taken",
		fmt.Sprintf(`On the hub, route "eu-clusters" of workspace %s has priority 10; priorities must be unique.`, ws), true}})
	assertPlanDiags(t, d.plan(&eu, &eu), nil)
}

// TestAccOCIRoutePlan_duplicateObject: two resources of one configuration that would be the same
// hub object are caught at plan, whichever is planned second.
func TestAccOCIRoutePlan_duplicateObject(t *testing.T) {
	f, ws := euHub(t)
	one := route("twin", 50, "harbor-central")
	one.Workspace, one.ID = types.StringValue(ws), types.StringValue(ws+"/twin")
	one.ClusterNames = strSet(f.Name("us-01"))
	other := one
	other.Priority = types.Int64Value(60)

	d := newPlanDriver(t, nil) // one plan
	if diags := d.plan(&one, nil); diags.HasError() {
		t.Fatalf("first resource:\n%s", describeDiags(diags))
	}
	assertPlanDiags(t, d.plan(&other, nil), []wantPlanDiag{{diag.SeverityError, "Duplicate OCIStorageRoute",
		fmt.Sprintf("Two resources of this configuration create OCIStorageRoute %s/twin: they would overwrite each other on the hub. Give each its own name (or workspace).", ws), false}})
}

// TestAccOCIRegistryPlan: a second source is an error only when no Terraform configuration
// manages the first; replacing the source keeps no conflict with its own prior; destroying a
// registry that routes name warns, naming them; an object already on the hub is caught at plan,
// as an error when no configuration manages it and as a warning when one does.
func TestAccOCIRegistryPlan(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.Registry("kubectl-source", "source", "harbor.example.com/kubectl")
	f.create(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": OCIRegistrySecretType,
		"metadata": map[string]any{"name": "tf-mirror", "namespace": ws, "labels": map[string]any{OCIRegistryRoleLabel: "mirror", hub.ManagedByLabel: DefaultFieldManager}},
		"data":     map[string]any{"reference": "bWlycm9yLmV4YW1wbGUuY29t"},
	})
	f.Route("uses-mirror", map[string]any{"priority": 1, "clusterNames": []any{"x"}, "registries": []any{"tf-mirror"}})
	reg := func(name, role string) *ociRegistryModel {
		return &ociRegistryModel{Meta: hubresource.Meta{Name: types.StringValue(name), Workspace: types.StringValue(ws), ID: types.StringValue(ws + "/" + name)},
			Role: types.StringValue(role), Reference: types.StringValue(name + ".example.com"),
			Username: types.StringNull(), PasswordWO: types.StringNull(), PasswordWOVersion: types.Int64Null(),
			AgentUsername: types.StringNull(), AgentPasswordWO: types.StringNull(), AgentPasswordWOVersion: types.Int64Null(),
			InsecureSkipTLS: types.BoolValue(false), BasicHTTP: types.BoolValue(false), CACerts: types.StringNull()}
	}
	cases := []struct {
		name        string
		plan, prior *ociRegistryModel
		want        []wantPlanDiag
	}{
		{"second source next to one made with kubectl", reg("new-source", "source"), nil, []wantPlanDiag{{diag.SeverityError, "Second source registry",
			fmt.Sprintf(`Workspace %s already has the source registry "kubectl-source", which no Terraform configuration manages;`, ws), true}}},
		{"a mirror is fine", reg("new-mirror", "mirror"), nil, nil},
		{"destroying a registry that a route names", nil, reg("tf-mirror", "mirror"), []wantPlanDiag{{diag.SeverityWarning, "Registry in use",
			fmt.Sprintf(`Destroying registry "tf-mirror" of workspace %s: route "uses-mirror" names it. Unless this plan changes that route too, its clusters lose it from their chain.`, ws), false}}},
		{"creating one that Terraform manages on the hub", reg("tf-mirror", "mirror"), nil, []wantPlanDiag{{diag.SeverityWarning, "Secret already on the hub",
			fmt.Sprintf("Secret %s/tf-mirror is on the hub and managed by Terraform:", ws), true}}},
		{"creating one made with kubectl", reg("kubectl-source", "mirror"), nil, []wantPlanDiag{{diag.SeverityError, "Secret already exists",
			fmt.Sprintf("Secret %s/kubectl-source is already on the hub, and no Terraform configuration manages it. To manage it with Terraform, import it:\n  terraform import fleet_oci_registry.<label> %s/kubectl-source", ws, ws), true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newPlanDriverFor[ociRegistryModel](t, "fleet_oci_registry", nil)
			assertPlanDiags(t, d.plan(tc.plan, tc.prior), tc.want)
		})
	}
}

// TestAccOCIRoutePlan_orderDoesNotMatter plans one configuration's changes in every order, each
// in a fresh provider as Terraform's apply-time re-plan does, against routes and registries that
// Terraform manages: swapped priorities, a swapped default, a renamed route that keeps its
// priority, and a route naming by literal a registry created next to it. Every resource gets the
// same diagnostics whatever the order, and none is an error: a sibling resolves each conflict.
func TestAccOCIRoutePlan_orderDoesNotMatter(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	f := newHubFixtures(t, ws)
	f.ClusterSet("general")
	f.Cluster("eu-01", "general", map[string]string{"region": "eu"})
	f.Registry("central", "source", "harbor.example.com/fleet")
	f.ManagedRoute("a", map[string]any{"priority": 10, "clusterNames": []any{f.Name("eu-01")}, "registries": []any{"central"}})
	f.ManagedRoute("b", map[string]any{"priority": 20, "clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"region": "eu"}}}, "registries": []any{"central"}})
	f.ManagedRoute("old", map[string]any{"priority": 30, "clusterNames": []any{"x"}, "registries": []any{"central"}})
	f.ManagedRoute("d1", map[string]any{"priority": 1000, "default": true, "registries": []any{"central"}})

	mk := func(name string, priority int64, edit func(*ociRouteModel)) *ociRouteModel {
		m := route(name, priority, "central")
		m.Workspace, m.ID = types.StringValue(ws), types.StringValue(ws+"/"+name)
		edit(&m)
		return &m
	}
	names := func(n ...string) func(*ociRouteModel) {
		return func(m *ociRouteModel) { m.ClusterNames = strSet(n...) }
	}
	euSel := func(m *ociRouteModel) { m.ClusterSelectors = sels(sel(map[string]string{"region": "eu"}, nil)) }
	def := func(m *ociRouteModel) { m.Default = types.BoolValue(true) }
	type change struct{ plan, prior *ociRouteModel }
	changes := []change{
		{mk("a", 20, names(f.Name("eu-01"))), mk("a", 10, names(f.Name("eu-01")))}, // swap a and b
		{mk("b", 10, euSel), mk("b", 20, euSel)},
		{mk("renamed", 30, names("x")), mk("old", 30, names("x"))}, // replace, same priority
		{mk("d2", 1000, def), nil},                                 // a new default ...
		{nil, mk("d1", 1000, def)},                                 // ... replacing the old one
		{mk("literal", 40, func(m *ociRouteModel) { names("x")(m); m.Registries = strList("new-registry") }), nil},
	}
	render := func(diags diag.Diagnostics) string {
		var out []string
		for _, d := range diags {
			if d.Severity() == diag.SeverityError {
				t.Errorf("an error where a sibling resolves the conflict: %s: %s", d.Summary(), d.Detail())
			}
			out = append(out, d.Summary()+": "+d.Detail())
		}
		return strings.Join(out, "\n")
	}
	var first []string
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {1, 3, 5, 0, 2, 4}} {
		got := make([]string, len(changes))
		for _, i := range order {
			d := newPlanDriver(t, nil) // a fresh process, as in the apply-time re-plan
			got[i] = render(d.plan(changes[i].plan, changes[i].prior))
		}
		if first == nil {
			first = got
			continue
		}
		for i := range got {
			if got[i] != first[i] {
				t.Errorf("change %d: order %v gave\n%s\nwant, as in the first order,\n%s", i, order, got[i], first[i])
			}
		}
	}
	for i, want := range []string{"Priority already taken", "Priority already taken", "", "Second default route", "", "Registry not on the hub"} {
		if !strings.HasPrefix(first[i], want) {
			t.Errorf("change %d: diagnostics\n%s\nwant them to start with %q", i, first[i], want)
		}
	}
	if !strings.Contains(first[0], `Route "b" is managed by Terraform: if this plan changes it or destroys it, the conflict goes away; otherwise both routes have priority 20 after apply and "a", first by name, is evaluated first`) {
		t.Errorf("the swap warning does not say what apply does:\n%s", first[0])
	}
}

func TestAccOCIRoutePlan_hubChecksSkipped(t *testing.T) {
	_, ws := euHub(t)
	planned := route("staging", 50, "harbor-central")
	planned.Workspace = types.StringValue(ws)
	planned.ClusterNames = strSet("eu-staging-01")

	t.Run("hub unreachable", func(t *testing.T) {
		d := newPlanDriver(t, map[string]tftypes.Value{
			"host":            tftypes.NewValue(tftypes.String, "https://127.0.0.1:1"),
			"insecure":        tftypes.NewValue(tftypes.Bool, true),
			"request_timeout": tftypes.NewValue(tftypes.String, "2s"), // how long a refused connection is retried
		})
		assertPlanDiags(t, d.plan(&planned, nil), []wantPlanDiag{{diag.SeverityWarning, "Hub checks skipped",
			fmt.Sprintf(`Could not list the OCIStorageRoutes of workspace %s, so an existing OCIStorageRoute %s/staging would not be noticed: hub unreachable at https://127.0.0.1:1: `, ws, ws), true}})
	})
	t.Run("hub that accepts connections and never answers", func(t *testing.T) {
		hung, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hung.Close() })
		var conns []net.Conn
		go func() {
			for {
				c, err := hung.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c) // held open, never read or answered
			}
		}()
		d := newPlanDriver(t, map[string]tftypes.Value{
			"host":            tftypes.NewValue(tftypes.String, "https://"+hung.Addr().String()),
			"insecure":        tftypes.NewValue(tftypes.Bool, true),
			"request_timeout": tftypes.NewValue(tftypes.String, "2s"),
		})
		diags := d.plan(&planned, nil)
		if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning || diags[0].Summary() != "Hub checks skipped" {
			t.Fatalf("want one Hub checks skipped warning, got:\n%s", describeDiags(diags))
		}
	})
	t.Run("connection settings known only at apply time", func(t *testing.T) {
		d := newPlanDriver(t, map[string]tftypes.Value{"host": tftypes.NewValue(tftypes.String, tftypes.UnknownValue)})
		assertPlanDiags(t, d.plan(&planned, nil), []wantPlanDiag{{diag.SeverityWarning, "Hub checks skipped",
			`The fleet_oci_route plan was not checked against the hub: the provider's connection settings are not known until apply.`, false}})
	})
	t.Run("workspace known only at apply", func(t *testing.T) {
		d := newPlanDriver(t, map[string]tftypes.Value{"workspace": tftypes.NewValue(tftypes.String, tftypes.UnknownValue)})
		late := planned
		late.Workspace, late.ID = types.StringUnknown(), types.StringUnknown()
		assertPlanDiags(t, d.plan(&late, nil), []wantPlanDiag{{diag.SeverityWarning, "Hub checks skipped",
			`The fleet_oci_route's workspace or name is known only at apply, so it was not checked against the hub.`, false}})
	})
}

// listCounter is a reverse proxy in front of the hub that counts LIST requests by resource.
//
// It counts the requests the hub answered: an attempt that failed (a 5xx, a 429, the proxy's own
// 502 when its connection to the hub broke) is one the hub client retries by design
// (retryTransient, and client-go's Retry-After), so it is recorded in failed and not counted.
// Counting it made TestAccAppPlan_listsEachKindOnce see a kind listed 3 times, one run in three on
// a loaded machine, while the cache had listed it twice.
type listCounter struct {
	mu     sync.Mutex
	failed []string
	lists  map[string]int
	// workspaceGets are the GETs of a namespace: the engine's check that a new object's
	// workspace exists; TestAccOCIRoutePlan_listsEachKindOnce checks their count.
	workspaceGets []string
	other         []string
}

func (c *listCounter) record(r *http.Request, status int) {
	if status < 200 || status > 299 {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.failed = append(c.failed, fmt.Sprintf("%s %s: %d", r.Method, r.URL.Path, status))
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		rest = segs[3:]
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method == http.MethodGet && len(rest) == 1 {
		c.lists[rest[0]]++
		return
	}
	if r.Method == http.MethodGet && len(segs) == 4 && segs[0] == "api" && segs[2] == "namespaces" {
		c.workspaceGets = append(c.workspaceGets, segs[3])
		return
	}
	c.other = append(c.other, r.Method+" "+r.URL.Path)
}

// countingKubeconfig starts the proxy and writes a kubeconfig whose server is the proxy; the
// proxy authenticates to the hub with the test's admin credentials.
func countingKubeconfig(t *testing.T) (string, *listCounter) {
	t.Helper()
	cfg := testRESTConfig(t)
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	counter := &listCounter{lists: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		proxy.ServeHTTP(sw, r)
		counter.record(r, sw.status)
	}))
	t.Cleanup(func() {
		counter.mu.Lock()
		defer counter.mu.Unlock()
		if len(counter.failed) > 0 {
			t.Logf("requests the hub did not answer, retried and not counted: %v", counter.failed)
		}
	})
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	err = os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
users:
- name: proxy
  user: {}
contexts:
- name: proxy
  context: {cluster: proxy, user: proxy}
current-context: proxy
`, srv.URL)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, counter
}

// statusWriter remembers the status of a proxied response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func TestAccOCIRoutePlan_listsEachKindOnce(t *testing.T) {
	_, ws := euHub(t)
	kubeconfig, counter := countingKubeconfig(t)
	d := newPlanDriver(t, map[string]tftypes.Value{"config_path": tftypes.NewValue(tftypes.String, kubeconfig)})

	const n = 100
	for i := range n {
		m := route(fmt.Sprintf("route-%03d", i), int64(100+i), "harbor-eu", "harbor-central")
		m.Workspace = types.StringValue(ws)
		m.ClusterNames = strSet(fmt.Sprintf("cluster-%03d", i))
		if diags := d.plan(&m, nil); diags.HasError() || len(diags) != 1 || diags[0].Summary() != "Clusters not in workspace" {
			t.Fatalf("plan of route %d: want only the warning that its cluster is not in the workspace, got\n%s", i, describeDiags(diags))
		}
	}
	// clusterocistorages: the clusters' reported reachability, for the first-registry warning;
	// ocireplications: the registries' replication lag, for the predicted-failover warning.
	want := map[string]int{"clusterocistorages": 1, "ocireplications": 1, "ocistorageroutes": 1, "secrets": 1, "managedclustersetbindings": 1, "managedclustersets": 1, "managedclusters": 1}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if fmt.Sprint(counter.lists) != fmt.Sprint(want) {
		t.Errorf("LIST requests by resource over %d route plans = %v, want %v", n, counter.lists, want)
	}
	if len(counter.other) > 0 {
		t.Errorf("requests other than LISTs during planning: %v", counter.other)
	}
	// Besides the lists, one GET of the workspace's namespace over all the plans: that it exists.
	if want := []string{ws}; fmt.Sprint(counter.workspaceGets) != fmt.Sprint(want) {
		t.Errorf("GETs of namespaces over %d route plans: %v, want %v", n, counter.workspaceGets, want)
	}
}
