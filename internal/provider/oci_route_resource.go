package provider

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

type ociRouteModel struct {
	hubresource.Meta
	Priority         types.Int64  `tfsdk:"priority"`
	Default          types.Bool   `tfsdk:"default"`
	ClusterNames     types.Set    `tfsdk:"cluster_names"`
	ClusterGroups    types.Set    `tfsdk:"cluster_groups"`
	ClusterSelectors types.List   `tfsdk:"cluster_selectors"`
	Registries       types.List   `tfsdk:"registries"`
	ReplicationWait  types.String `tfsdk:"replication_wait"`
}

var newOCIRouteResource = hubresource.New[ociRouteModel](hubresource.Kind[ociRouteModel]{
	TypeName: "oci_route",
	Object:   inventory.RouteKind,
	Description: "Routes clusters of a workspace to an ordered chain of OCI registries: an `OCIStorageRoute` on the hub.\n\n" +
		"A cluster matches the route when its name is in `cluster_names`, or it is a member of a ManagedClusterSet in " +
		"`cluster_groups`, or it matches any of `cluster_selectors` (Kubernetes label selectors; an empty selector matches every " +
		"cluster). Routes are evaluated in ascending `priority` and the **first match wins**; the `default` route catches every " +
		"cluster no other route matched. Clusters try the `registries` in order: auth, TLS, connection and integrity failures move " +
		"on at once, a missing artifact is retried for `replication_wait` first.\n\n" +
		"At plan time the provider checks the route against the hub: a priority another route has, a registry that neither exists " +
		"nor is created by the plan, or a second default route stop the plan; a route that is shadowed by an earlier one, or a " +
		"change that moves clusters from one route to another, is reported as a warning naming the routes and clusters.",
	Attributes: map[string]schema.Attribute{
		"priority": schema.Int64Attribute{
			Required:            true,
			MarkdownDescription: "Evaluation order: lower is tried first. Unique among the workspace's routes (the default route's priority has no effect).",
			Validators:          []validator.Int64{int64validator.Between(0, math.MaxInt32)},
		},
		"default": schema.BoolAttribute{
			Optional:            true,
			Computed:            true,
			Default:             booldefault.StaticBool(false),
			MarkdownDescription: "Make this the workspace's catch-all route. A default route has no cluster criteria; at most one per workspace.",
		},
		"cluster_names": schema.SetAttribute{
			Optional:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "Names of OCM ManagedClusters this route matches.",
		},
		"cluster_groups": schema.SetAttribute{
			Optional:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "ManagedClusterSets (bound to the workspace) whose members this route matches.",
		},
		"cluster_selectors": schema.ListNestedAttribute{
			Optional:            true,
			MarkdownDescription: "Label selectors; a cluster matching any of them matches the route. `{}` matches every cluster.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"match_labels": schema.MapAttribute{
					Optional:            true,
					ElementType:         types.StringType,
					MarkdownDescription: "Labels a cluster must all have, with these values.",
				},
				"match_expressions": schema.ListNestedAttribute{
					Optional:            true,
					MarkdownDescription: "Requirements a cluster's labels must all meet.",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"key": schema.StringAttribute{Required: true, MarkdownDescription: "Label key."},
						"operator": schema.StringAttribute{
							Required:            true,
							MarkdownDescription: "`In`, `NotIn`, `Exists` or `DoesNotExist`. `NotIn` and `DoesNotExist` match clusters without the label.",
							Validators:          []validator.String{stringvalidator.OneOf(string(routing.In), string(routing.NotIn), string(routing.Exists), string(routing.DoesNotExist))},
						},
						"values": schema.ListAttribute{
							Optional:            true,
							ElementType:         types.StringType,
							MarkdownDescription: "Values for `In` and `NotIn`; none for `Exists` and `DoesNotExist`.",
						},
					}},
				},
			}},
		},
		"registries": schema.ListAttribute{
			Required:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "The pull chain: names of `fleet_oci_registry` resources in the same workspace, tried in this order.",
		},
		"replication_wait": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			Default:             stringdefault.StaticString("0s"),
			MarkdownDescription: "How long agents retry a registry that lacks an artifact (replication is behind) before moving on, e.g. `10m`. Defaults to `0s`.",
			Validators:          []validator.String{durationValidator{}},
		},
	},
	Validate:  validateOCIRoute,
	Expand:    expandOCIRoute,
	Flatten:   flattenOCIRoute,
	CheckPlan: checkOCIRoutePlan,
})

type selectorModel struct {
	MatchLabels      types.Map  `tfsdk:"match_labels"`
	MatchExpressions types.List `tfsdk:"match_expressions"`
}

type expressionModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   types.List   `tfsdk:"values"`
}

var (
	expressionType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"key": types.StringType, "operator": types.StringType, "values": types.ListType{ElemType: types.StringType},
	}}
	selectorType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"match_labels": types.MapType{ElemType: types.StringType}, "match_expressions": types.ListType{ElemType: expressionType},
	}}
)

// routeOf converts the model for the routing library. ok is false when a value is unknown.
func routeOf(ctx context.Context, m *ociRouteModel) (r routing.Route, ok bool, diags diag.Diagnostics) {
	if !allKnown(m.Name, m.Priority, m.Default, m.ClusterNames, m.ClusterGroups, m.ClusterSelectors, m.Registries, m.ReplicationWait) {
		return r, false, nil
	}
	r = routing.Route{Name: m.Name.ValueString(), Priority: m.Priority.ValueInt64(), Default: m.Default.ValueBool()}
	if !m.ReplicationWait.IsNull() {
		r.ReplicationWait, _ = time.ParseDuration(m.ReplicationWait.ValueString()) // checked by durationValidator
	}
	diags.Append(m.ClusterNames.ElementsAs(ctx, &r.ClusterNames, false)...)
	diags.Append(m.ClusterGroups.ElementsAs(ctx, &r.ClusterGroups, false)...)
	diags.Append(m.Registries.ElementsAs(ctx, &r.Registries, false)...)
	var selectors []selectorModel
	diags.Append(m.ClusterSelectors.ElementsAs(ctx, &selectors, false)...)
	for _, s := range selectors {
		if !allKnown(s.MatchLabels, s.MatchExpressions) {
			return r, false, diags
		}
		sel := routing.Selector{}
		diags.Append(s.MatchLabels.ElementsAs(ctx, &sel.MatchLabels, false)...)
		var exprs []expressionModel
		diags.Append(s.MatchExpressions.ElementsAs(ctx, &exprs, false)...)
		for _, e := range exprs {
			if !allKnown(e.Key, e.Operator, e.Values) {
				return r, false, diags
			}
			req := routing.Requirement{Key: e.Key.ValueString(), Operator: routing.Operator(e.Operator.ValueString())}
			diags.Append(e.Values.ElementsAs(ctx, &req.Values, false)...)
			sel.MatchExpressions = append(sel.MatchExpressions, req)
		}
		r.ClusterSelectors = append(r.ClusterSelectors, sel)
	}
	return r, !diags.HasError(), diags
}

// allKnown reports whether the values, and every element of collections among them, are known:
// a reference such as fleet_oci_registry.x.name is an unknown element of a known list during
// validation.
func allKnown(vs ...attr.Value) bool {
	for _, v := range vs {
		if v.IsUnknown() {
			return false
		}
		var elems []attr.Value
		switch c := v.(type) {
		case types.List:
			elems = c.Elements()
		case types.Set:
			elems = c.Elements()
		case types.Map:
			for _, e := range c.Elements() {
				elems = append(elems, e)
			}
		case types.Object:
			for _, e := range c.Attributes() {
				elems = append(elems, e)
			}
		}
		if !allKnown(elems...) {
			return false
		}
	}
	return true
}

func validateOCIRoute(ctx context.Context, m *ociRouteModel) diag.Diagnostics {
	r, ok, diags := routeOf(ctx, m)
	if !ok {
		return diags
	}
	for _, p := range routing.ValidateRoute(r) {
		diags.AddAttributeError(attrPath(p.Path), "Invalid route", p.Error()+".")
	}
	return diags
}

func expandOCIRoute(ctx context.Context, plan, _ *ociRouteModel) (*unstructured.Unstructured, diag.Diagnostics) {
	r, ok, diags := routeOf(ctx, plan)
	if !ok {
		diags.AddError("Route not fully known", "A value of the route is still unknown at apply time; this is a bug in the provider.")
		return nil, diags
	}
	spec := map[string]any{
		"priority":        r.Priority,
		"registries":      toAny(r.Registries),
		"replicationWait": plan.ReplicationWait.ValueString(), // as written: the hub keeps it, so import reads it back

	}
	if r.Default {
		spec["default"] = true
	}
	if len(r.ClusterNames) > 0 {
		spec["clusterNames"] = toAny(r.ClusterNames)
	}
	if len(r.ClusterGroups) > 0 {
		spec["clusterGroups"] = toAny(r.ClusterGroups)
	}
	if r.ClusterSelectors != nil {
		var selectors []any
		for _, s := range r.ClusterSelectors {
			sel := map[string]any{}
			if len(s.MatchLabels) > 0 {
				labels := map[string]any{}
				for k, v := range s.MatchLabels {
					labels[k] = v
				}
				sel["matchLabels"] = labels
			}
			var exprs []any
			for _, e := range s.MatchExpressions {
				expr := map[string]any{"key": e.Key, "operator": string(e.Operator)}
				if len(e.Values) > 0 {
					expr["values"] = toAny(e.Values)
				}
				exprs = append(exprs, expr)
			}
			if exprs != nil {
				sel["matchExpressions"] = exprs
			}
			selectors = append(selectors, sel)
		}
		spec["clusterSelectors"] = selectors
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, diags
}

func flattenOCIRoute(ctx context.Context, obj *unstructured.Unstructured, m *ociRouteModel) diag.Diagnostics {
	var diags diag.Diagnostics
	var api v1alpha1.OCIStorageRoute
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &api); err != nil {
		diags.AddError("Cannot read OCIStorageRoute", err.Error())
		return diags
	}
	r := inventory.RouteFromAPI(&api)
	m.Priority = types.Int64Value(r.Priority)
	m.Default = types.BoolValue(r.Default)
	m.ClusterNames = keepEmpty(m.ClusterNames, r.ClusterNames, func(v []attr.Value) attr.Value { return types.SetValueMust(types.StringType, v) }, types.SetNull(types.StringType)).(types.Set)
	m.ClusterGroups = keepEmpty(m.ClusterGroups, r.ClusterGroups, func(v []attr.Value) attr.Value { return types.SetValueMust(types.StringType, v) }, types.SetNull(types.StringType)).(types.Set)
	m.Registries = keepEmpty(m.Registries, r.Registries, func(v []attr.Value) attr.Value { return types.ListValueMust(types.StringType, v) }, types.ListNull(types.StringType)).(types.List)
	if prior, err := time.ParseDuration(m.ReplicationWait.ValueString()); err != nil || prior != r.ReplicationWait {
		// Not the duration of the configuration (or none, on import): take the hub's spelling.
		written, _, _ := unstructured.NestedString(obj.Object, "spec", "replicationWait")
		if d, err := time.ParseDuration(written); err != nil || d != r.ReplicationWait {
			written = r.ReplicationWait.String()
		}
		m.ReplicationWait = types.StringValue(written)
	}

	var priorSelectors []selectorModel
	if !m.ClusterSelectors.IsNull() && !m.ClusterSelectors.IsUnknown() {
		diags.Append(m.ClusterSelectors.ElementsAs(ctx, &priorSelectors, false)...)
	}
	if r.ClusterSelectors == nil {
		// `cluster_selectors = []` is written as no field; keep it empty rather than null.
		if m.ClusterSelectors.IsNull() || m.ClusterSelectors.IsUnknown() || len(priorSelectors) > 0 {
			m.ClusterSelectors = types.ListNull(selectorType)
		} else {
			m.ClusterSelectors = types.ListValueMust(selectorType, []attr.Value{})
		}
		return diags
	}
	var selectors []attr.Value
	for i, s := range r.ClusterSelectors {
		prior := selectorModel{MatchLabels: types.MapNull(types.StringType), MatchExpressions: types.ListNull(expressionType)}
		if i < len(priorSelectors) {
			prior = priorSelectors[i]
		}
		labels := map[string]attr.Value{}
		for k, v := range s.MatchLabels {
			labels[k] = types.StringValue(v)
		}
		matchLabels := types.MapNull(types.StringType)
		if len(labels) > 0 || (!prior.MatchLabels.IsNull() && !prior.MatchLabels.IsUnknown()) {
			matchLabels = types.MapValueMust(types.StringType, labels)
		}
		var priorExprs []expressionModel
		if !prior.MatchExpressions.IsNull() && !prior.MatchExpressions.IsUnknown() {
			diags.Append(prior.MatchExpressions.ElementsAs(ctx, &priorExprs, false)...)
		}
		var exprs []attr.Value
		for j, e := range s.MatchExpressions {
			values := types.ListNull(types.StringType)
			if len(e.Values) > 0 || (j < len(priorExprs) && !priorExprs[j].Values.IsNull() && !priorExprs[j].Values.IsUnknown()) {
				values = types.ListValueMust(types.StringType, strValues(e.Values))
			}
			exprs = append(exprs, types.ObjectValueMust(expressionType.AttrTypes, map[string]attr.Value{
				"key": types.StringValue(e.Key), "operator": types.StringValue(string(e.Operator)), "values": values,
			}))
		}
		matchExpressions := types.ListNull(expressionType)
		if len(exprs) > 0 || (!prior.MatchExpressions.IsNull() && !prior.MatchExpressions.IsUnknown()) {
			matchExpressions = types.ListValueMust(expressionType, exprs)
		}
		selectors = append(selectors, types.ObjectValueMust(selectorType.AttrTypes, map[string]attr.Value{
			"match_labels": matchLabels, "match_expressions": matchExpressions,
		}))
	}
	m.ClusterSelectors = types.ListValueMust(selectorType, selectors)
	return diags
}

// keepEmpty renders values as a collection; an empty one stays empty (not null) when the prior
// value was an empty collection, so that `[]` in configuration does not read back as drift.
func keepEmpty(prior attr.Value, values []string, build func([]attr.Value) attr.Value, null attr.Value) attr.Value {
	if len(values) == 0 && (prior.IsNull() || prior.IsUnknown()) {
		return null
	}
	return build(strValues(values))
}

func strValues(ss []string) []attr.Value {
	out := make([]attr.Value, len(ss))
	for i, s := range ss {
		out[i] = types.StringValue(s)
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// attrPath converts a routing problem's path to the attribute path of the resource. Set elements
// have no index in Terraform, so a path into cluster_names or cluster_groups stops at the set.
func attrPath(p routing.Path) path.Path {
	out := path.Empty()
	for _, step := range p {
		switch s := step.(type) {
		case routing.Attr:
			out = out.AtName(string(s))
		case routing.Index:
			if last, _ := out.Steps().LastStep(); last != nil && (last.String() == "cluster_names" || last.String() == "cluster_groups") {
				return out
			}
			out = out.AtListIndex(int(s))
		case routing.Key:
			out = out.AtMapKey(string(s))
		}
	}
	return out
}

// durationValidator checks a Go duration such as "90s" or "1h30m".
type durationValidator struct{}

func (durationValidator) Description(context.Context) string {
	return `must be a duration such as "90s", "10m" or "1h30m"`
}
func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%q is not a duration: write a number with a unit, e.g. \"90s\", \"10m\" or \"1h30m\".", req.ConfigValue.ValueString()))
	case d < 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf("%q is negative: use 0s or more.", req.ConfigValue.ValueString()))
	}
}

// checkOCIRoutePlan checks the route against the workspace's routes, registries and clusters on
// the hub, together with the routes and registries this plan creates or updates.
func checkOCIRoutePlan(ctx context.Context, env *hubresource.Env, plan, _ *ociRouteModel) diag.Diagnostics {
	route, ok, diags := routeOf(ctx, plan)
	if !ok || plan.Workspace.IsUnknown() {
		name := "This route"
		if !plan.Name.IsUnknown() {
			name = fmt.Sprintf("Route %q", plan.Name.ValueString())
		}
		diags.AddWarning("Hub checks skipped", name+" has values that are known only at apply time, so its order, registries and effect on clusters were not checked against the hub.")
		return diags
	}
	ws := plan.Workspace.ValueString()
	inv, err := inventory.Load(ctx, env.Client, ws)
	if err != nil {
		diags.AddWarning("Hub checks skipped", fmt.Sprintf("Route %q was not checked against the hub: %v", route.Name, err))
		return diags
	}

	plannedRegistries := hubresource.Planned[ociRegistryModel](env, "oci_registry", ws)
	for i, reg := range route.Registries {
		if _, onHub := inv.Registries[reg]; !onHub && plannedRegistries[reg] == nil {
			diags.AddAttributeError(path.Root("registries").AtListIndex(i), "Registry not found",
				fmt.Sprintf("Route %q names registry %q, which workspace %s does not have and this plan does not create. "+
					"Create it with a fleet_oci_registry resource and reference it (fleet_oci_registry.<label>.name) so that it is created first, or fix the name.",
					route.Name, reg, ws))
		}
	}

	// The workspace's other routes (the hub's, updated by what this plan changes); before: with
	// this route as the hub has it, if it does; after: with this route as planned.
	others := map[string]routing.Route{}
	var onHub *routing.Route
	for i, r := range inv.Routes {
		others[r.Name] = r
		if r.Name == route.Name {
			onHub = &inv.Routes[i]
		}
	}
	for name, m := range hubresource.Planned[ociRouteModel](env, "oci_route", ws) {
		if r, ok, _ := routeOf(ctx, m); ok {
			others[name] = r
		}
	}
	delete(others, route.Name)
	rest := make([]routing.Route, 0, len(others)+1)
	for _, r := range others {
		rest = append(rest, r)
	}
	after := append(slices.Clip(rest), route)
	before := rest
	if onHub != nil {
		before = append(slices.Clip(rest), *onHub)
	}

	// A collision is reported on the route whose change causes it, not on an unchanged route the
	// new one collides with — unless the hub already has the collision.
	changed := onHub == nil || onHub.Priority != route.Priority || onHub.Default != route.Default
	onHubAlready := map[routing.Step]bool{}
	for _, p := range routing.Validate(inv.Routes) {
		if p.Route == route.Name && len(p.Path) == 1 {
			onHubAlready[p.Path[0]] = true
		}
	}
	for _, p := range routing.Validate(after) {
		if p.Route != route.Name || len(p.Path) != 1 || (p.Path[0] != routing.Attr("priority") && p.Path[0] != routing.Attr("default")) {
			continue
		}
		if !changed && !onHubAlready[p.Path[0]] {
			continue
		}
		summary := "Priority already taken"
		if p.Path[0] == routing.Attr("default") {
			summary = "Second default route"
		}
		diags.AddAttributeError(attrPath(p.Path), summary, fmt.Sprintf("In workspace %s, %s.", ws, p.Error()))
	}
	if diags.HasError() || (onHub != nil && reflect.DeepEqual(*onHub, route)) {
		// An unchanged route has no effect of its own: what other routes' changes do to its
		// clusters is reported on them.
		return diags
	}
	afterRouter, err := routing.Compile(after)
	if err != nil {
		diags.AddWarning("Route effect not checked", fmt.Sprintf("The routes of workspace %s are not valid together, so the effect of %q on clusters was not computed: %v", ws, route.Name, err))
		return diags
	}
	afterReport := afterRouter.ResolveAll(inv.Clusters)
	diags.Append(shadowWarnings(route.Name, afterRouter, afterReport)...)

	if beforeRouter, err := routing.Compile(before); err == nil {
		moves := routing.Diff(beforeRouter.ResolveAll(inv.Clusters).Clusters, afterReport.Clusters)
		if len(moves) > 0 {
			diags.AddWarning("Clusters change route", fmt.Sprintf("Applying route %q moves %d cluster(s) in workspace %s: %s. They pull through the new chain on their next pull; nothing is redeployed.",
				route.Name, len(moves), ws, describeMoves(moves, 20)))
		}
	}
	return diags
}

func shadowWarnings(name string, router *routing.Router, rep *routing.Report) diag.Diagnostics {
	var diags diag.Diagnostics
	for _, s := range router.StaticShadows() {
		if s.Route != name {
			continue
		}
		var covers []string
		for _, c := range s.Coverage {
			covers = append(covers, fmt.Sprintf("%s by route %q (priority %d) %s", c.Field, c.By, c.ByPriority, c.ByField))
		}
		diags.AddWarning("Route shadowed", fmt.Sprintf("Route %q can never win a cluster: every criterion is covered by an earlier route — %s. "+
			"Give it a lower priority than those routes, or remove it.", name, strings.Join(covers, "; ")))
		return diags
	}
	for _, s := range rep.Shadowed {
		if s.Route != name {
			continue
		}
		var claims []string
		lowest := s.Priority
		for _, c := range s.Claims {
			claims = append(claims, fmt.Sprintf("%s is matched first by route %q (priority %d)", c.Cluster, c.Route, c.Priority))
			lowest = min(lowest, c.Priority)
		}
		diags.AddWarning("Route shadowed", fmt.Sprintf("Route %q (priority %d) wins none of the clusters it selects: %s. "+
			"Give it a priority lower than %d to take them, or remove it.", name, s.Priority, strings.Join(claims, "; "), lowest))
	}
	return diags
}

func describeMoves(moves []routing.Move, limit int) string {
	var parts []string
	for i, m := range moves {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(moves)-limit))
			break
		}
		parts = append(parts, fmt.Sprintf("%s from %s to %s", m.Cluster, routeLabel(m.From), routeLabel(m.To)))
	}
	return strings.Join(parts, ", ")
}

func routeLabel(name string) string {
	if name == "" {
		return "no route"
	}
	return fmt.Sprintf("%q", name)
}
