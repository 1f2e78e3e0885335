package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// Values shaped as HCL would pass them: tuples of objects.
func obj(attrs map[string]attr.Value) attr.Value {
	attrTypes := map[string]attr.Type{}
	for k, v := range attrs {
		attrTypes[k] = v.Type(context.Background())
	}
	return types.ObjectValueMust(attrTypes, attrs)
}

func tuple(vs ...attr.Value) attr.Value {
	ts := make([]attr.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type(context.Background())
	}
	return types.TupleValueMust(ts, vs)
}

func strs(ss ...string) attr.Value { return tuple(strValues(ss)...) }

func num(n int64) attr.Value { return types.NumberValue(new(big.Float).SetInt64(n)) }

var tfjsonpathRoute = tfjsonpath.New("route")

func labelsOf(kv ...string) attr.Value {
	m := map[string]attr.Value{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = types.StringValue(kv[i+1])
	}
	return obj(m)
}

func TestResolveRouteFunction(t *testing.T) {
	routes := tuple(
		obj(map[string]attr.Value{"name": types.StringValue("eu-clusters"), "priority": num(10),
			"cluster_selectors": tuple(obj(map[string]attr.Value{"match_labels": labelsOf("region", "eu")})),
			"registries":        strs("harbor-eu", "harbor-central"), "replication_wait": types.StringValue("10m")}),
		obj(map[string]attr.Value{"name": types.StringValue("air-gapped"), "priority": num(20),
			"cluster_groups": strs("airgap-stores"), "registries": strs("zot-stores")}),
		obj(map[string]attr.Value{"name": types.StringValue("lab"), "priority": num(5),
			"cluster_names": strs("lab-sandbox"), "registries": strs("harbor-lab")}),
		obj(map[string]attr.Value{"name": types.StringValue("default"), "priority": num(1000), "default": types.BoolValue(true),
			"registries": strs("harbor-central")}),
	)
	cases := []struct {
		name      string
		routes    attr.Value
		cluster   attr.Value
		wantRoute string // "" for no route
		wantChain []string
		wantBy    string
		wantWait  string
		wantErr   string
	}{
		{name: "label route", routes: routes, cluster: obj(map[string]attr.Value{"name": types.StringValue("eu-01"), "labels": labelsOf("region", "eu")}),
			wantRoute: "eu-clusters", wantChain: []string{"harbor-eu", "harbor-central"}, wantBy: "cluster_selectors[0]", wantWait: "10m"},
		{name: "group route", routes: routes, cluster: obj(map[string]attr.Value{"name": types.StringValue("store-0203"), "groups": strs("airgap-stores")}),
			wantRoute: "air-gapped", wantChain: []string{"zot-stores"}, wantBy: "cluster_groups", wantWait: "0s"},
		{name: "override wins by priority", routes: routes,
			cluster:   obj(map[string]attr.Value{"name": types.StringValue("lab-sandbox"), "labels": labelsOf("region", "eu")}),
			wantRoute: "lab", wantChain: []string{"harbor-lab"}, wantBy: "cluster_names", wantWait: "0s"},
		{name: "default catches the rest", routes: routes, cluster: obj(map[string]attr.Value{"name": types.StringValue("us-01"), "labels": labelsOf("region", "us")}),
			wantRoute: "default", wantChain: []string{"harbor-central"}, wantBy: "default", wantWait: "0s"},
		{name: "no route", routes: tuple(), cluster: obj(map[string]attr.Value{"name": types.StringValue("us-01")})},
		{name: "priority tie goes to the first name, as on the hub", routes: tuple(
			obj(map[string]attr.Value{"name": types.StringValue("b"), "priority": num(1), "cluster_names": strs("x"), "registries": strs("rb")}),
			obj(map[string]attr.Value{"name": types.StringValue("a"), "priority": num(1), "cluster_names": strs("x"), "registries": strs("ra")}),
		), cluster: obj(map[string]attr.Value{"name": types.StringValue("x")}), wantRoute: "a", wantChain: []string{"ra"}, wantBy: "cluster_names", wantWait: "0s"},
		{name: "misspelt attribute", routes: tuple(obj(map[string]attr.Value{"name": types.StringValue("a"), "cluster_name": strs("x")})),
			cluster: obj(map[string]attr.Value{"name": types.StringValue("x")}), wantErr: `unknown field "cluster_name"`},
		{name: "bad duration", routes: tuple(obj(map[string]attr.Value{"name": types.StringValue("a"), "priority": num(1), "cluster_names": strs("x"),
			"registries": strs("r"), "replication_wait": types.StringValue("ten minutes")})),
			cluster: obj(map[string]attr.Value{"name": types.StringValue("x")}), wantErr: `replication_wait "ten minutes" is not a duration`},
		{name: "cluster without name", routes: routes, cluster: obj(map[string]attr.Value{"labels": labelsOf("region", "eu")}), wantErr: "cluster: name is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &function.RunResponse{Result: function.NewResultData(types.ObjectUnknown(resolveRouteResult))}
			req := function.RunRequest{Arguments: function.NewArgumentsData([]attr.Value{types.DynamicValue(tc.routes), types.DynamicValue(tc.cluster), noVariadic})}
			resolveRouteFunction{}.Run(context.Background(), req, resp)
			if tc.wantErr != "" {
				if resp.Error == nil || !strings.Contains(resp.Error.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", resp.Error, tc.wantErr)
				}
				return
			}
			if resp.Error != nil {
				t.Fatalf("unexpected error: %v", resp.Error)
			}
			got := resp.Result.Value().(types.Object).Attributes()
			route := got["route"].(types.String)
			if tc.wantRoute == "" {
				if !route.IsNull() || len(got["registries"].(types.List).Elements()) != 0 {
					t.Fatalf("want no route and an empty chain, got %v %v", route, got["registries"])
				}
				return
			}
			var chain []string
			got["registries"].(types.List).ElementsAs(context.Background(), &chain, false)
			if route.ValueString() != tc.wantRoute || strings.Join(chain, ",") != strings.Join(tc.wantChain, ",") ||
				got["matched_by"].(types.String).ValueString() != tc.wantBy || got["replication_wait"].(types.String).ValueString() != tc.wantWait {
				t.Fatalf("got route=%v chain=%v matched_by=%v wait=%v; want %s %v %s %s",
					route, chain, got["matched_by"], got["replication_wait"], tc.wantRoute, tc.wantChain, tc.wantBy, tc.wantWait)
			}
		})
	}
}

// noVariadic is the empty variadic argument (no registries).
var noVariadic = types.TupleValueMust([]attr.Type{}, []attr.Value{})

// TestResolveRouteFunctionReferences: with registries, the function resolves label-templated
// references for the cluster as the hub does, and refuses hostile label values.
func TestResolveRouteFunctionReferences(t *testing.T) {
	routes := tuple(obj(map[string]attr.Value{"name": types.StringValue("sites"), "priority": num(1), "default": types.BoolValue(true),
		"registries": strs("site", "central")}))
	registries := func(site string) attr.Value {
		return types.TupleValueMust([]attr.Type{types.DynamicType}, []attr.Value{types.DynamicValue(obj(map[string]attr.Value{
			"site": types.StringValue(site), "central": types.StringValue("harbor.example.com/fleet")}))})
	}
	const site = "zot.{{ .labels.site }}.stores.internal:5000/fleet"
	for _, tc := range []struct {
		name       string
		labels     attr.Value
		registries attr.Value
		chain      string // name=reference,…
		unresolved string // name/label/reason,…
		err        string
	}{
		{name: "resolved", labels: labelsOf("site", "berlin"), registries: registries(site),
			chain: "site=zot.berlin.stores.internal:5000/fleet,central=harbor.example.com/fleet"},
		{name: "label missing", labels: labelsOf("region", "eu"), registries: registries(site),
			chain: "central=harbor.example.com/fleet", unresolved: "site/site/LabelMissing"},
		{name: "another host", labels: labelsOf("site", "evil.com/x"), registries: registries(site),
			chain: "central=harbor.example.com/fleet", unresolved: "site/site/LabelRefused"},
		{name: "a port", labels: labelsOf("site", "x:1"), registries: registries(site),
			chain: "central=harbor.example.com/fleet", unresolved: "site/site/LabelRefused"},
		{name: "userinfo", labels: labelsOf("site", "me@evil"), registries: registries(site),
			chain: "central=harbor.example.com/fleet", unresolved: "site/site/LabelRefused"},
		{name: "bad template", labels: labelsOf("site", "x"), registries: registries("zot.{{ .labels.site | lower }}.stores.internal"), err: `registries["site"]`},
		{name: "top-level domain", labels: labelsOf("site", "x"), registries: registries("zot.{{ .labels.site }}.internal"), err: "fixed domain"},
		{name: "no registries", labels: labelsOf("site", "x"), registries: noVariadic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &function.RunResponse{Result: function.NewResultData(types.ObjectUnknown(resolveRouteResult))}
			req := function.RunRequest{Arguments: function.NewArgumentsData([]attr.Value{types.DynamicValue(routes),
				types.DynamicValue(obj(map[string]attr.Value{"name": types.StringValue("c1"), "labels": tc.labels})), tc.registries})}
			resolveRouteFunction{}.Run(context.Background(), req, resp)
			if tc.err != "" {
				if resp.Error == nil || !strings.Contains(resp.Error.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", resp.Error, tc.err)
				}
				return
			}
			if resp.Error != nil {
				t.Fatal(resp.Error)
			}
			got := resp.Result.Value().(types.Object).Attributes()
			var chain, unresolved []string
			for _, e := range got["chain"].(types.List).Elements() {
				a := e.(types.Object).Attributes()
				chain = append(chain, a["name"].(types.String).ValueString()+"="+a["reference"].(types.String).ValueString())
			}
			for _, e := range got["unresolved"].(types.List).Elements() {
				a := e.(types.Object).Attributes()
				unresolved = append(unresolved, a["name"].(types.String).ValueString()+"/"+a["label"].(types.String).ValueString()+"/"+a["reason"].(types.String).ValueString())
				if msg := a["message"].(types.String).ValueString(); !strings.Contains(msg, `cluster "c1"`) {
					t.Errorf("message %q does not name the cluster", msg)
				}
			}
			if strings.Join(chain, ",") != tc.chain || strings.Join(unresolved, ",") != tc.unresolved {
				t.Errorf("chain %v unresolved %v; want %s and %s", chain, unresolved, tc.chain, tc.unresolved)
			}
		})
	}
}

// TestAccResolveRouteFunction evaluates the function in the real CLI, on HCL values, no hub needed.
func TestAccResolveRouteFunction(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: `
locals {
  routes = [
    { name = "eu-clusters", priority = 10, cluster_selectors = [{ match_labels = { region = "eu" } }],
      registries = ["harbor-eu", "harbor-central"], replication_wait = "10m" },
    { name = "lab", priority = 5, cluster_names = ["lab-sandbox"], registries = ["harbor-lab"] },
    { name = "default", priority = 1000, default = true, registries = ["harbor-central"] },
  ]
}
output "eu" {
  value = provider::fleet::resolve_route(local.routes, { name = "eu-02", labels = { region = "eu", tier = "edge" } })
}
output "lab" {
  value = provider::fleet::resolve_route(local.routes, { name = "lab-sandbox", labels = { region = "eu" } })
}
output "other" {
  value = provider::fleet::resolve_route(local.routes, { name = "us-01" })
}`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("eu", knownvalue.ObjectExact(map[string]knownvalue.Check{
					"route":            knownvalue.StringExact("eu-clusters"),
					"registries":       knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("harbor-eu"), knownvalue.StringExact("harbor-central")}),
					"matched_by":       knownvalue.StringExact("cluster_selectors[0]"),
					"replication_wait": knownvalue.StringExact("10m"),
					"chain":            knownvalue.ListExact([]knownvalue.Check{}),
					"unresolved":       knownvalue.ListExact([]knownvalue.Check{}),
				})),
				statecheck.ExpectKnownOutputValueAtPath("lab", tfjsonpathRoute, knownvalue.StringExact("lab")),
				statecheck.ExpectKnownOutputValueAtPath("other", tfjsonpathRoute, knownvalue.StringExact("default")),
			},
		}},
	})
}
