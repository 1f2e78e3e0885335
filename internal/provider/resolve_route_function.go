package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

var _ function.Function = resolveRouteFunction{}

func newResolveRouteFunction() function.Function { return resolveRouteFunction{} }

// resolveRouteFunction evaluates routing offline, on plain values, with the same library the
// controller and the plan-time checks use.
type resolveRouteFunction struct{}

var (
	chainEntryType = types.ObjectType{AttrTypes: map[string]attr.Type{"name": types.StringType, "reference": types.StringType}}
	unresolvedType = types.ObjectType{AttrTypes: map[string]attr.Type{"name": types.StringType, "label": types.StringType, "reason": types.StringType, "message": types.StringType}}

	resolveRouteResult = map[string]attr.Type{
		"route":            types.StringType,
		"registries":       types.ListType{ElemType: types.StringType},
		"matched_by":       types.StringType,
		"replication_wait": types.StringType,
		"chain":            types.ListType{ElemType: chainEntryType},
		"unresolved":       types.ListType{ElemType: unresolvedType},
	}
)

func (resolveRouteFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "resolve_route"
}

func (resolveRouteFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Resolve which route and registry chain a cluster uses, without a hub.",
		MarkdownDescription: "Evaluates OCI routing offline with the same rules as the hub: routes in ascending `priority`, first match wins, " +
			"the `default` route catches the rest. Use it to test a routing configuration in `terraform console`, in `check` " +
			"blocks or in `terraform test`, without a hub.\n\n" +
			"`routes` is a list of objects with the attributes of `fleet_oci_route` (`name`, `priority`, `default`, `cluster_names`, " +
			"`cluster_groups`, `cluster_selectors`, `registries`, `replication_wait`); omitted attributes are empty, and " +
			"`fleet_oci_route` resources can be passed as they are. `cluster` is an object with `name`, and optionally `labels` (a map) " +
			"and `groups` (the ManagedClusterSets it belongs to).\n\n" +
			"An optional third argument, `registries`, maps registry names to their `reference` (e.g. `{ for r in fleet_oci_registry.all : r.name => r.reference }`); " +
			"references may name cluster labels (`zot.{{ .labels.site }}.stores.internal:5000/fleet`), which are resolved with the cluster's `labels` as on the hub.\n\n" +
			"Returns an object with `route` (null when no route matches), `registries` (the route's chain), `matched_by`, `replication_wait`, and, when " +
			"`registries` is given, `chain` (the chain the cluster gets: objects with `name` and the `reference` resolved for it, without the registries whose " +
			"reference does not resolve) and `unresolved` (those registries, with `name`, `label`, `reason` — `LabelMissing` or `LabelRefused` — and `message`); " +
			"both are empty without it. " +
			"Invalid routes (a default route with criteria, a route without registries, a misspelt attribute, a bad `replication_wait`, …) " +
			"are an error naming the route and attribute. A priority tie is not an error: tied routes are evaluated in order of `name`, " +
			"as on the hub, which reports the tie as a conflict (`fleet_oci_routing`'s `conflicts`, the route's `PriorityConflict` condition).",
		Parameters: []function.Parameter{
			function.DynamicParameter{Name: "routes", MarkdownDescription: "List of route objects."},
			function.DynamicParameter{Name: "cluster", MarkdownDescription: "The cluster: `{ name = \"…\", labels = { … }, groups = [ … ] }`."},
		},
		VariadicParameter: function.DynamicParameter{Name: "registries",
			MarkdownDescription: "Optional: a map of registry name to `reference`, to resolve the chain's references for the cluster."},
		Return: function.ObjectReturn{AttributeTypes: resolveRouteResult},
	}
}

// routeInput is a route as written in HCL, with the attribute names of fleet_oci_route.
type routeInput struct {
	Name             string          `json:"name"`
	Priority         int64           `json:"priority"`
	Default          bool            `json:"default"`
	ClusterNames     []string        `json:"cluster_names"`
	ClusterGroups    []string        `json:"cluster_groups"`
	ClusterSelectors []selectorInput `json:"cluster_selectors"`
	Registries       []string        `json:"registries"`
	ReplicationWait  string          `json:"replication_wait"`

	// Computed attributes of fleet_oci_route, accepted so that resources can be passed as they are.
	ID        any `json:"id"`
	Workspace any `json:"workspace"`
	Timeouts  any `json:"timeouts"`
	// Verify changes what a cluster accepts, not where it pulls from.
	Verify any `json:"verify"`
}

type selectorInput struct {
	MatchLabels      map[string]string `json:"match_labels"`
	MatchExpressions []struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	} `json:"match_expressions"`
}

type clusterInput struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	Groups []string          `json:"groups"`
}

func (resolveRouteFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var routesArg, clusterArg types.Dynamic
	var registriesArg []types.Dynamic
	if resp.Error = req.Arguments.Get(ctx, &routesArg, &clusterArg, &registriesArg); resp.Error != nil {
		return
	}
	var inputs []routeInput
	if err := decodeDynamic(routesArg, &inputs); err != nil {
		resp.Error = function.NewArgumentFuncError(0, "routes: "+err.Error())
		return
	}
	var c clusterInput
	if err := decodeDynamic(clusterArg, &c); err != nil {
		resp.Error = function.NewArgumentFuncError(1, "cluster: "+err.Error())
		return
	}
	if c.Name == "" {
		resp.Error = function.NewArgumentFuncError(1, `cluster: name is required, e.g. { name = "eu-01", labels = { region = "eu" } }`)
		return
	}
	routes := make([]routing.Route, 0, len(inputs))
	for i, in := range inputs {
		r, err := in.route()
		if err != nil {
			resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("routes[%d]: %v", i, err))
			return
		}
		routes = append(routes, r)
	}
	router, err := routing.Compile(routes)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, "routes are not valid: "+err.Error())
		return
	}
	cluster := routing.Cluster{Name: c.Name, Labels: c.Labels, Groups: c.Groups}
	res := router.Resolve(cluster)

	result := map[string]attr.Value{
		"route":            types.StringNull(),
		"registries":       types.ListValueMust(types.StringType, []attr.Value{}),
		"matched_by":       types.StringNull(),
		"replication_wait": types.StringNull(),
		"chain":            types.ListValueMust(chainEntryType, []attr.Value{}),
		"unresolved":       types.ListValueMust(unresolvedType, []attr.Value{}),
	}
	if len(registriesArg) > 1 {
		resp.Error = function.NewArgumentFuncError(2, "registries: pass one map of registry name to reference, not several")
		return
	}
	if len(registriesArg) == 1 && res.Matched() {
		chain, unresolved, err := resolveReferences(cluster, res, registriesArg[0])
		if err != nil {
			resp.Error = err
			return
		}
		result["chain"], result["unresolved"] = chain, unresolved
	}
	if res.Matched() {
		result["route"] = types.StringValue(res.Route)
		result["registries"] = types.ListValueMust(types.StringType, strValues(res.Registries))
		result["matched_by"] = types.StringValue(res.MatchedBy.String())
		result["replication_wait"] = types.StringValue(res.ReplicationWait.String())
		for _, in := range inputs {
			if in.Name == res.Route && in.ReplicationWait != "" {
				result["replication_wait"] = types.StringValue(in.ReplicationWait) // as the route spells it
			}
		}
	}
	resp.Error = resp.Result.Set(ctx, types.ObjectValueMust(resolveRouteResult, result))
}

// resolveReferences resolves the references of res's chain for cluster, from the registries
// argument (a map of name to reference), with the routing library the hub uses.
func resolveReferences(cluster routing.Cluster, res routing.Resolution, arg types.Dynamic) (attr.Value, attr.Value, *function.FuncError) {
	var in map[string]string
	if err := decodeDynamic(arg, &in); err != nil {
		return nil, nil, function.NewArgumentFuncError(2, "registries: "+err.Error()+`; pass a map of registry name to reference, e.g. { site = "zot.{{ .labels.site }}.stores.internal/fleet" }`)
	}
	refs := map[string]*routing.Reference{}
	for _, name := range res.Registries {
		s, ok := in[name]
		if !ok {
			return nil, nil, function.NewArgumentFuncError(2, fmt.Sprintf("registries: route %q names registry %q, which registries does not list", res.Route, name))
		}
		ref, err := routing.ParseReference(s)
		if err != nil {
			return nil, nil, function.NewArgumentFuncError(2, fmt.Sprintf("registries[%q]: %v", name, err))
		}
		refs[name] = ref
	}
	entries, unresolved := routing.ResolveChain(cluster, res.Registries, refs)
	chain := make([]attr.Value, 0, len(entries))
	for _, e := range entries {
		chain = append(chain, types.ObjectValueMust(chainEntryType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(e.Registry), "reference": types.StringValue(e.Reference)}))
	}
	un := make([]attr.Value, 0, len(unresolved))
	for _, u := range unresolved {
		un = append(un, types.ObjectValueMust(unresolvedType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(u.Registry), "label": types.StringValue(u.Err.Label), "reason": types.StringValue(u.Err.Reason), "message": types.StringValue(u.String())}))
	}
	return types.ListValueMust(chainEntryType, chain), types.ListValueMust(unresolvedType, un), nil
}

func (in routeInput) route() (routing.Route, error) {
	r := routing.Route{Name: in.Name, Priority: in.Priority, Default: in.Default,
		ClusterNames: in.ClusterNames, ClusterGroups: in.ClusterGroups, Registries: in.Registries}
	if in.ReplicationWait != "" {
		d, err := time.ParseDuration(in.ReplicationWait)
		if err != nil {
			return r, fmt.Errorf("replication_wait %q is not a duration such as \"90s\" or \"10m\"", in.ReplicationWait)
		}
		r.ReplicationWait = d
	}
	for _, s := range in.ClusterSelectors {
		sel := routing.Selector{MatchLabels: s.MatchLabels}
		for _, e := range s.MatchExpressions {
			sel.MatchExpressions = append(sel.MatchExpressions, routing.Requirement{Key: e.Key, Operator: routing.Operator(e.Operator), Values: e.Values})
		}
		r.ClusterSelectors = append(r.ClusterSelectors, sel)
	}
	return r, nil
}

// decodeDynamic decodes an HCL value into a Go value through JSON, rejecting unknown attributes
// so that a misspelt attribute is an error rather than silently ignored.
func decodeDynamic(v types.Dynamic, into any) error {
	if v.IsNull() || v.IsUnknown() || v.IsUnderlyingValueNull() || v.IsUnderlyingValueUnknown() {
		return fmt.Errorf("a known value is required")
	}
	plain, err := plainValue(v.UnderlyingValue())
	if err != nil {
		return err
	}
	raw, err := json.Marshal(plain)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("unexpected shape: %v", err)
	}
	return nil
}

// plainValue converts a framework value into maps, slices, strings, numbers and bools.
func plainValue(v attr.Value) (any, error) {
	if v == nil || v.IsNull() {
		return nil, nil
	}
	if v.IsUnknown() {
		return nil, fmt.Errorf("a known value is required")
	}
	elements := func(vs []attr.Value) (any, error) {
		out := make([]any, len(vs))
		for i, e := range vs {
			p, err := plainValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	}
	attributes := func(m map[string]attr.Value) (any, error) {
		out := make(map[string]any, len(m))
		for k, e := range m {
			p, err := plainValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = p
		}
		return out, nil
	}
	switch t := v.(type) {
	case basetypes.StringValue:
		return t.ValueString(), nil
	case basetypes.BoolValue:
		return t.ValueBool(), nil
	case basetypes.NumberValue:
		if !t.ValueBigFloat().IsInt() {
			return nil, fmt.Errorf("%s is not a whole number", t.ValueBigFloat())
		}
		n, _ := t.ValueBigFloat().Int(new(big.Int))
		return json.Number(n.String()), nil
	case basetypes.Int64Value:
		return t.ValueInt64(), nil
	case basetypes.Float64Value:
		return t.ValueFloat64(), nil
	case basetypes.ListValue:
		return elements(t.Elements())
	case basetypes.SetValue:
		return elements(t.Elements())
	case basetypes.TupleValue:
		return elements(t.Elements())
	case basetypes.MapValue:
		return attributes(t.Elements())
	case basetypes.ObjectValue:
		return attributes(t.Attributes())
	case basetypes.DynamicValue:
		return plainValue(t.UnderlyingValue())
	}
	return nil, fmt.Errorf("unsupported value %s", v)
}
