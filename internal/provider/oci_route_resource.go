package provider

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
	"github.com/umkim/terraform-provider-fleet/internal/work"
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
	Verify           types.Object `tfsdk:"verify"`
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
		"At plan time the provider checks the route against the hub as it was when the plan began: a priority or default role that " +
		"another route has stops the plan when no Terraform configuration manages that route, and is a warning when one does (this " +
		"plan may change it; ties are broken by name). A registry not on the hub yet, cluster names and groups the workspace does " +
		"not have, a route shadowed by an earlier one, and a change that moves clusters from one route to another are warnings " +
		"naming the routes and clusters. See the OCI routing guide.",
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
			MarkdownDescription: fmt.Sprintf("Names of OCM ManagedClusters this route matches, at most %d.", routing.MaxClusterNames),
		},
		"cluster_groups": schema.SetAttribute{
			Optional:            true,
			ElementType:         types.StringType,
			MarkdownDescription: fmt.Sprintf("ManagedClusterSets (bound to the workspace) whose members this route matches, at most %d.", routing.MaxClusterGroups),
		},
		"cluster_selectors": schema.ListNestedAttribute{
			Optional:            true,
			MarkdownDescription: fmt.Sprintf("Label selectors, at most %d; a cluster matching any of them matches the route. `{}` matches every cluster.", routing.MaxClusterSelectors),
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"match_labels": schema.MapAttribute{
					Optional:            true,
					ElementType:         types.StringType,
					MarkdownDescription: fmt.Sprintf("Labels a cluster must all have, with these values; at most %d.", routing.MaxMatchLabels),
				},
				"match_expressions": schema.ListNestedAttribute{
					Optional:            true,
					MarkdownDescription: fmt.Sprintf("Requirements a cluster's labels must all meet, at most %d.", routing.MaxMatchExpressions),
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"key": schema.StringAttribute{Required: true, MarkdownDescription: "Label key."},
						"operator": schema.StringAttribute{
							Required:            true,
							MarkdownDescription: "`In`, `NotIn`, `Exists` or `DoesNotExist`. `NotIn` and `DoesNotExist` match clusters without the label.",
						},
						"values": schema.ListAttribute{
							Optional:            true,
							ElementType:         types.StringType,
							MarkdownDescription: fmt.Sprintf("Values for `In` and `NotIn` (at most %d); none for `Exists` and `DoesNotExist`.", routing.MaxRequirementValues),
						},
					}},
				},
			}},
		},
		"registries": schema.ListAttribute{
			Required:            true,
			ElementType:         types.StringType,
			MarkdownDescription: fmt.Sprintf("The pull chain: names of `fleet_oci_registry` resources in the same workspace, tried in this order; at most %d.", routing.MaxRegistries),
		},
		"replication_wait": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			Default:             stringdefault.StaticString("0s"),
			MarkdownDescription: "How long agents retry a registry that lacks an artifact (replication is behind) before moving on, e.g. `10m`; from `0s` to `24h` (a day). Defaults to `0s`.",
			Validators:          []validator.String{durationValidator{}}, // the day's bound is routing's, checked with the route
		},
		"verify": verifyAttribute,
	},
	Owned:     []string{"spec"},
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

// routeOf converts the model for the routing library. Unknown values are filled in so that
// what is known can be checked: an unknown element of a list by a placeholder name, an unknown
// list or scalar by its zero value. known is false when anything was unknown; vague names the
// attributes that are wholly unknown. An empty list or map is nil, as inventory.RouteFrom reads the
// hub's, so that a route the plan leaves as it is equals the hub's (unchangedOnHub).
func routeOf(ctx context.Context, m *ociRouteModel) (r routing.Route, known bool, vague map[string]bool, diags diag.Diagnostics) {
	vague = map[string]bool{}
	placeholders := 0
	strs := func(name string, v attr.Value, into *[]string) {
		if v.IsUnknown() {
			vague[name] = true
			return
		}
		for _, e := range elements(v) {
			if e.IsUnknown() {
				placeholders++
				*into = append(*into, fmt.Sprintf("%s%d", unknownPrefix, placeholders))
				continue
			}
			*into = append(*into, e.(types.String).ValueString())
		}
	}
	r = routing.Route{Name: m.Name.ValueString(), Priority: m.Priority.ValueInt64(), Default: m.Default.ValueBool()}
	for attrName, v := range map[string]attr.Value{"name": m.Name, "priority": m.Priority, "default": m.Default, "replication_wait": m.ReplicationWait} {
		if v.IsUnknown() {
			vague[attrName] = true
		}
	}
	if !m.ReplicationWait.IsNull() && !m.ReplicationWait.IsUnknown() {
		r.ReplicationWait, _ = time.ParseDuration(m.ReplicationWait.ValueString()) // checked by durationValidator
	}
	strs("cluster_names", m.ClusterNames, &r.ClusterNames)
	strs("cluster_groups", m.ClusterGroups, &r.ClusterGroups)
	strs("registries", m.Registries, &r.Registries)
	if m.ClusterSelectors.IsUnknown() {
		vague["cluster_selectors"] = true
	}
	var selectors []selectorModel
	if !m.ClusterSelectors.IsUnknown() {
		diags.Append(m.ClusterSelectors.ElementsAs(ctx, &selectors, false)...)
	}
	for _, s := range selectors {
		if !allKnown(s.MatchLabels, s.MatchExpressions) {
			placeholders++
			r.ClusterSelectors = append(r.ClusterSelectors, routing.Selector{}) // a criterion, of unknown shape
			continue
		}
		sel := routing.Selector{}
		diags.Append(s.MatchLabels.ElementsAs(ctx, &sel.MatchLabels, false)...)
		if len(sel.MatchLabels) == 0 {
			sel.MatchLabels = nil // as inventory.RouteFrom reads the hub's {}
		}
		var exprs []expressionModel
		diags.Append(s.MatchExpressions.ElementsAs(ctx, &exprs, false)...)
		for _, e := range exprs {
			req := routing.Requirement{Key: e.Key.ValueString(), Operator: routing.Operator(e.Operator.ValueString())}
			diags.Append(e.Values.ElementsAs(ctx, &req.Values, false)...)
			if len(req.Values) == 0 {
				req.Values = nil
			}
			sel.MatchExpressions = append(sel.MatchExpressions, req)
		}
		r.ClusterSelectors = append(r.ClusterSelectors, sel)
	}
	known = placeholders == 0 && len(vague) == 0 && !diags.HasError()
	return r, known, vague, diags
}

// unknownPrefix starts the placeholder names of unknown list elements.
const unknownPrefix = "unknown-"

// allKnown reports whether the values, and every element of collections among them, are known:
// a reference such as fleet_oci_registry.x.name is an unknown element of a known list during
// validation.
func allKnown(vs ...attr.Value) bool {
	for _, v := range vs {
		if v.IsUnknown() || !allKnown(elements(v)...) {
			return false
		}
	}
	return true
}

// elements returns the elements of a collection or object value; none for other values.
func elements(v attr.Value) []attr.Value {
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
	return elems
}

// validateOCIRoute checks what is known of the route (placeholders of unknown elements are valid
// names). A problem is dropped when an unknown value could make it go away: the need for
// criteria while default or a criterion is wholly unknown, and a problem with an attribute that
// is wholly unknown (read as empty).
func validateOCIRoute(ctx context.Context, m *ociRouteModel) diag.Diagnostics {
	r, _, vague, diags := routeOf(ctx, m)
	if diags.HasError() {
		return diags
	}
	criteriaVague := vague["default"] || vague["cluster_names"] || vague["cluster_groups"] || vague["cluster_selectors"]
	for _, p := range routing.ValidateRoute(r) {
		var first string
		if len(p.Path) > 0 {
			first = string(p.Path[0].(routing.Attr))
		}
		if (first == "" && criteriaVague) || vague[first] {
			continue
		}
		diags.AddAttributeError(attrPath(p.Path), "Invalid route", p.Error()+".")
	}
	diags.Append(validateRouteVerify(ctx, m)...)
	return diags
}

func expandOCIRoute(ctx context.Context, req hubresource.ExpandRequest[ociRouteModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	r, known, _, diags := routeOf(ctx, req.Plan)
	if !known {
		diags.AddError("Route not fully known", "A value of the route is still unknown at apply time; this is a bug in the provider.")
		return nil, diags
	}
	spec := inventory.RouteSpec(r, req.Plan.ReplicationWait.ValueString())
	if v, _, d := verifyOf(ctx, req.Plan.Verify); v != nil {
		spec["verify"] = verifySpec(v)
	} else {
		diags.Append(d...)
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, diags
}

func flattenOCIRoute(ctx context.Context, obj *unstructured.Unstructured, m *ociRouteModel) diag.Diagnostics {
	var diags diag.Diagnostics
	r, err := inventory.RouteFrom(obj)
	if err != nil {
		// Read what can be read, so that the plan shows the bad value as drift to correct.
		diags.AddWarning("Invalid OCIStorageRoute on the hub", fmt.Sprintf("OCIStorageRoute %s/%s: %v. Apply writes the configured value.", obj.GetNamespace(), obj.GetName(), err))
	}
	m.Priority = types.Int64Value(r.Priority)
	m.Default = types.BoolValue(r.Default)
	m.ClusterNames = keepEmpty(m.ClusterNames, r.ClusterNames, func(v []attr.Value) attr.Value { return types.SetValueMust(types.StringType, v) }, types.SetNull(types.StringType)).(types.Set)
	m.ClusterGroups = keepEmpty(m.ClusterGroups, r.ClusterGroups, func(v []attr.Value) attr.Value { return types.SetValueMust(types.StringType, v) }, types.SetNull(types.StringType)).(types.Set)
	m.Registries = keepEmpty(m.Registries, r.Registries, func(v []attr.Value) attr.Value { return types.ListValueMust(types.StringType, v) }, types.ListNull(types.StringType)).(types.List)
	if prior, err := time.ParseDuration(m.ReplicationWait.ValueString()); err != nil || prior != r.ReplicationWait {
		// Not the duration of the configuration (or none, on import): take the hub's spelling.
		written, _, _ := unstructured.NestedString(obj.Object, "spec", "replicationWait")
		if written == "" {
			written = "0s"
		}
		m.ReplicationWait = types.StringValue(written)
	}
	diags.Append(flattenRouteVerify(ctx, obj, m)...)

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

// durationSyntax is Go's duration syntax: a value that has it and does not parse overflows.
var durationSyntax = regexp.MustCompile(`^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`)

// durationValidator checks a Go duration such as "90s" or "1h30m": zero or more and, when max is
// set, at most max. A route's replication_wait leaves max unset: its bound is the routing
// library's, which the route's validation checks with the rest of the route.
type durationValidator struct{ max time.Duration }

func (v durationValidator) Description(context.Context) string {
	if v.max > 0 {
		return fmt.Sprintf(`must be a duration such as "90s", "10m" or "1h30m", at most %s`, v.max)
	}
	return `must be a duration such as "90s", "10m" or "1h30m"`
}
func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	switch {
	case err != nil && durationSyntax.MatchString(req.ConfigValue.ValueString()):
		resp.Diagnostics.AddAttributeError(req.Path, "Duration too long",
			fmt.Sprintf("%q is longer than any duration can be (about 292 years): use a shorter one.", req.ConfigValue.ValueString()))
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%q is not a duration: write a number with a unit, e.g. \"90s\", \"10m\" or \"1h30m\".", req.ConfigValue.ValueString()))
	case d < 0 || strings.HasPrefix(req.ConfigValue.ValueString(), "-"):
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf("%q is negative: use 0s or more.", req.ConfigValue.ValueString()))
	case v.max > 0 && d > v.max:
		resp.Diagnostics.AddAttributeError(req.Path, "Duration too long", fmt.Sprintf("%q is longer than %s: use at most %s.", req.ConfigValue.ValueString(), v.max, v.max))
	}
}

// checkOCIRoutePlan judges one route's change against the hub as it was when the plan began
// (see hubresource.PlanCheck): collisions with routes no Terraform configuration manages are
// errors, the rest are warnings, and the effect on clusters is that of this change alone.
func checkOCIRoutePlan(ctx context.Context, c hubresource.PlanCheck[ociRouteModel]) diag.Diagnostics {
	var diags diag.Diagnostics
	inv := checkedWorkspace(ctx, c, "route", &diags)
	if inv == nil {
		return diags
	}
	// This resource's routes on the hub: its planned name's, and on replace its prior one.
	var replaced []string
	priorName, planName := "", ""
	if c.Prior != nil {
		priorName = c.Prior.Name.ValueString()
		replaced = append(replaced, priorName)
	}
	if c.Plan != nil {
		planName = c.Plan.Name.ValueString()
		replaced = append(replaced, planName)
	}
	for _, bad := range inv.Invalid {
		if bad.Kind == inventory.RouteKind.Kind && (bad.Name == planName || bad.Name == priorName) {
			diags.AddWarning("Invalid OCIStorageRoute on the hub", fmt.Sprintf("%s; apply writes the configured route.", bad))
		}
	}
	if c.Plan == nil {
		diags.Append(routeEffect(inv, c.Workspace, fmt.Sprintf("Destroying route %q", priorName), routing.Change{Removed: replaced})...)
		return diags
	}

	route, known, vague, d := routeOf(ctx, c.Plan)
	if diags.Append(d...); d.HasError() {
		return diags
	}
	won := wonBy(route, replaced, inv) // whether it is unchanged on the hub, decided once for every check
	if !vague["registries"] {
		checkRegistries(c, route, inv, &diags)
		checkChainCAs(c, route, inv, &diags)
	}
	if !vague["cluster_names"] && !vague["cluster_groups"] {
		checkClusterNames(route, inv, c.Workspace, &diags)
	}
	if !vague["cluster_selectors"] {
		checkSelectors(route, inv, c.Workspace, &diags)
	}
	var priorRoute *routing.Route
	if c.Prior != nil && !c.Replace {
		if r, ok, _, _ := routeOf(ctx, c.Prior); ok {
			priorRoute = &r
		}
	}
	if !vague["registries"] && !vague["replication_wait"] {
		checkPredictedFailover(ctx, c, route, won, &diags)
	}
	if !vague["priority"] && !vague["default"] {
		checkCollisions(c.Env, route, priorRoute, replaced, inv, c.Workspace, &diags)
	}
	if diags.HasError() {
		return diags
	}
	if !known {
		diags.AddWarning("Route effect not checked", fmt.Sprintf("Route %q has values known only at apply, so its effect on clusters was not computed.", route.Name))
		return diags
	}
	checkFirstRegistryReachable(ctx, c, route, won, &diags)
	checkRouteVerify(ctx, c, route, known, won, &diags)
	if won.Unchanged {
		return diags // unchanged: what other routes' changes do to its clusters is reported on them
	}
	diags.Append(routeEffect(inv, c.Workspace, fmt.Sprintf("Applying route %q", route.Name), routing.Change{Removed: replaced, Next: &route})...)
	return diags
}

// checkedWorkspace loads the inventory a plan-time check judges a change against; when the hub
// cannot be asked in time it warns that the noun's checks were skipped and returns nil.
func checkedWorkspace[M any](ctx context.Context, c hubresource.PlanCheck[M], noun string, diags *diag.Diagnostics) *inventory.Workspace {
	inv, err := inventory.Load(ctx, c.Hub, c.Workspace, c.Env.Client.FieldManager())
	if err == nil {
		return inv
	}
	diags.AddWarning("Hub checks skipped", fmt.Sprintf("The %s was not checked against the hub: %v.", noun, c.Env.CheckErr(ctx, err)))
	return nil
}

// checkRegistries warns about registries of the chain that the hub does not have and that no
// fleet_oci_registry of this configuration planned before the route creates (hubresource.Env.Planned):
// a route that refers to the registry (fleet_oci_registry.eu.name) is planned after it, so the
// configuration the docs recommend gets no warning.
func checkRegistries(c hubresource.PlanCheck[ociRouteModel], route routing.Route, inv *inventory.Workspace, diags *diag.Diagnostics) {
	for i, reg := range route.Registries {
		if _, ok := inv.Registries[reg]; ok || strings.HasPrefix(reg, unknownPrefix) || c.Env.Planned(secretKind, c.Workspace, reg) {
			continue
		}
		diags.AddAttributeWarning(path.Root("registries").AtListIndex(i), "Registry not on the hub",
			fmt.Sprintf("Route %q names registry %q, which workspace %s does not have, and no fleet_oci_registry of this configuration planned before the route creates it. "+
				"If one does, refer to it as fleet_oci_registry.<label>.name, so that Terraform creates it before the route; otherwise correct the name, "+
				"or create the registry. Until it exists, the route is not Ready (RegistryNotFound) and its clusters keep the chain they had.", route.Name, reg, c.Workspace))
	}
}

// checkChainCAs warns when the CA bundles of the route's registries add up near the work budget:
// a registry this plan creates (planned before the route, as its reference makes Terraform do) by
// its planned bundle, any other by the hub's. A registry this plan changes counts on the hub's
// value here, and by its planned value in its own check (checkOCIRegistryPlan), which warns of its
// routes.
func checkChainCAs(c hubresource.PlanCheck[ociRouteModel], route routing.Route, inv *inventory.Workspace, diags *diag.Diagnostics) {
	var parts []work.Part
	for _, reg := range route.Registries { // one lookup per registry: a plan of n routes stays linear
		size := inv.Registries[reg].CABytes
		if p, ok := hubresource.PlannedModel[ociRegistryModel](c.Env, secretKind, c.Workspace, reg); ok {
			size = len(p.CACerts.ValueString())
		}
		parts = append(parts, work.Part{What: strconv.Quote(reg), Size: size})
	}
	if msg, ok := chainCAWarning(route.Name, parts); ok {
		diags.AddAttributeWarning(path.Root("registries"), chainCASummary, msg)
	}
}

const chainCASummary = "Chain's CA bundles near the work budget"

// chainCAWarning is the warning for route's chain whose registries' CA bundles (parts, named by
// the registry) add up near the work budget (work.NearBudget), naming each with its size.
func chainCAWarning(route string, parts []work.Part) (string, bool) {
	parts, total, near := work.NearBudget(parts)
	if !near {
		return "", false
	}
	sizes := make([]string, len(parts))
	for i, p := range parts {
		sizes[i] = fmt.Sprintf("%s (%s)", p.What, work.KiB(p.Size))
	}
	return fmt.Sprintf("Route %q's chain carries the CA bundles of registries %s, %s together, to each of its clusters in one ManifestWork, which the "+
		"controller does not write over %s (OCM refuses works over %s; the route then reports WorkTooLarge). Keep only the CAs that sign each "+
		"registry's certificate, or split the registries across routes.", route, strings.Join(sizes, ", "), work.KiB(total), work.KiB(work.Budget), work.KiB(work.Limit)), true
}

// checkClusterNames warns about cluster names and groups that the workspace cannot route.
func checkClusterNames(route routing.Route, inv *inventory.Workspace, ws string, diags *diag.Diagnostics) {
	var missing, unbound []string
	for _, n := range route.ClusterNames {
		if _, ok := inv.Cluster(n); !ok && !strings.HasPrefix(n, unknownPrefix) {
			missing = append(missing, strconv.Quote(n))
		}
	}
	for _, g := range route.ClusterGroups {
		if !inv.HasGroup(g) && !strings.HasPrefix(g, unknownPrefix) {
			unbound = append(unbound, strconv.Quote(g))
		}
	}
	if len(missing) > 0 {
		diags.AddAttributeWarning(path.Root("cluster_names"), "Clusters not in workspace",
			fmt.Sprintf("Route %q names %s, which %s no ManagedCluster in the cluster sets bound to workspace %s. The route matches them once they join; check the spelling.",
				route.Name, strings.Join(missing, ", "), plural(len(missing), "is", "are"), ws))
	}
	if len(unbound) > 0 {
		diags.AddAttributeWarning(path.Root("cluster_groups"), "Cluster groups not bound to workspace",
			fmt.Sprintf("Route %q names cluster group %s, which %s not a ManagedClusterSet bound to workspace %s (bound: %s). Bind it with a ManagedClusterSetBinding, or check the spelling.",
				route.Name, strings.Join(unbound, ", "), plural(len(unbound), "is", "are"), ws, orNone(inv.Groups)))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// checkCollisions reports another route with the planned priority, or another default route,
// when this change makes the collision (a new route, or a changed priority or default).
func checkCollisions(env *hubresource.Env, route routing.Route, prior *routing.Route, replaced []string, inv *inventory.Workspace, ws string, diags *diag.Diagnostics) {
	if prior != nil && prior.Priority == route.Priority && prior.Default == route.Default {
		return
	}
	for _, o := range inv.Routes {
		if slices.Contains(replaced, o.Name) {
			continue
		}
		var attr, summary, clash, tie string
		switch {
		case route.Default && o.Default:
			attr, summary = "default", "Second default route"
			clash = fmt.Sprintf("route %q is the default route of workspace %s; at most one route may be the default", o.Name, ws)
			tie = fmt.Sprintf("both are default routes after apply and %q, first by name, is the default", min(o.Name, route.Name))
		case !route.Default && !o.Default && o.Priority == route.Priority:
			attr, summary = "priority", "Priority already taken"
			clash = fmt.Sprintf("route %q of workspace %s has priority %d; priorities must be unique", o.Name, ws, o.Priority)
			tie = fmt.Sprintf("both routes have priority %d after apply and %q, first by name, is evaluated first", o.Priority, min(o.Name, route.Name))
		default:
			continue
		}
		switch owner := inv.Owners[o.Name]; {
		case env.ChangeableBy(inv.Managed[o.Name], owner):
			diags.AddAttributeWarning(path.Root(attr), summary, fmt.Sprintf("On the hub, %s. Route %q is managed by Terraform: if this plan changes it or destroys it, the conflict goes away; "+
				"otherwise %s (the fleet_oci_routing data source shows the conflict).", clash, o.Name, tie))
		case env.OwnedElsewhere(owner) != "":
			diags.AddAttributeError(path.Root(attr), summary, fmt.Sprintf("On the hub, %s. The configuration with owner %q manages route %q, so this plan cannot change it: "+
				"choose another %s for %q, or agree the change with that owner. Nothing was written to the hub.", clash, owner, o.Name, attr, route.Name))
		default:
			diags.AddAttributeError(path.Root(attr), summary, fmt.Sprintf("On the hub, %s. No Terraform configuration manages route %q, so this plan cannot change it: "+
				"choose another %s for %q, or change %q on the hub (or import it).", clash, o.Name, attr, route.Name, o.Name))
		}
	}
}

// routeEffect warns about the clusters a change takes from a route or leaves with none, and when
// its route is shadowed.
func routeEffect(inv *inventory.Workspace, ws, change string, ch routing.Change) diag.Diagnostics {
	var diags diag.Diagnostics
	router, rep, err := inv.Resolve()
	if err != nil {
		return diags // invalid routes are left out by the inventory: this does not happen
	}
	eff, err := router.Effect(inv.Clusters, rep, ch)
	if err != nil {
		diags.AddWarning("Route effect not checked", fmt.Sprintf("The effect of the change on the clusters of workspace %s was not computed. %v.", ws, err))
		return diags
	}
	// A cluster that had no route loses nothing by gaining one: only clusters taken from a route,
	// or left with none, are worth a warning (a new route on an empty workspace warns of nothing).
	var moves []routing.Move
	for _, m := range eff.Moves {
		if m.From != "" {
			moves = append(moves, m)
		}
	}
	if len(moves) > 0 {
		unrouted := 0
		for _, m := range moves {
			if m.To == "" {
				unrouted++
			}
		}
		detail := fmt.Sprintf("%s moves %d cluster(s) in workspace %s: %s. They pull through the new chain on their next pull; nothing is redeployed.",
			change, len(moves), ws, describeMoves(moves, 20))
		if unrouted > 0 {
			detail += fmt.Sprintf(" %d of them %s left with no route, and so with no registry chain.", unrouted, plural(unrouted, "is", "are"))
		}
		diags.AddWarning("Clusters change route", detail)
	}
	if s := eff.Static; s != nil {
		var covers []string
		for _, c := range s.Coverage {
			covers = append(covers, fmt.Sprintf("%s by route %q (priority %d) %s", c.Field, c.By, c.ByPriority, c.ByField))
		}
		diags.AddWarning("Route shadowed", fmt.Sprintf("Route %q can never win a cluster: every criterion is covered by an earlier route — %s. "+
			"Give it a lower priority than those routes, or remove it.", s.Route, strings.Join(covers, "; ")))
	} else if s := eff.Shadow; s != nil {
		var claims []string
		lowest := s.Priority
		for _, c := range s.Claims {
			claims = append(claims, fmt.Sprintf("%s is matched first by route %q (priority %d)", c.Cluster, c.Route, c.Priority))
			lowest = min(lowest, c.Priority)
		}
		diags.AddWarning("Route shadowed", fmt.Sprintf("Route %q (priority %d) wins none of the clusters it selects: %s. "+
			"Give it a priority lower than %d to take them, or remove it.", s.Route, s.Priority, strings.Join(claims, "; "), lowest))
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

// checkSelectors warns about each of the route's cluster selectors that matches no cluster the
// workspace may route: a hint at a misspelt label, before any cluster is left on another route.
// A selector is matched by the routing library itself, as a one-route router, over the clusters
// that carry one of its matchLabels (selectorCandidates).
func checkSelectors(route routing.Route, inv *inventory.Workspace, ws string, diags *diag.Diagnostics) {
	for i, sel := range route.ClusterSelectors {
		router, err := routing.Compile([]routing.Route{{Name: "selector", ClusterSelectors: []routing.Selector{sel}, Registries: []string{"selector"}}})
		if err != nil {
			continue // an invalid selector is reported by validation
		}
		matched := false
		for c := range selectorCandidates(sel, inv) {
			if router.Resolve(*c).Matched() {
				matched = true
				break
			}
		}
		if !matched {
			diags.AddAttributeWarning(path.Root("cluster_selectors").AtListIndex(i), "Selector matches no cluster",
				fmt.Sprintf("Route %q: cluster_selectors[%d] (%s) matches none of the %d clusters of workspace %s. "+
					"The route matches clusters once they carry these labels; check the label keys and values (kubectl get managedclusters --show-labels).",
					route.Name, i, describeSelector(sel), len(inv.Clusters), ws))
		}
	}
}

// describeSelector renders a selector as Kubernetes writes one: region=eu,tier in (a,b),!gpu.
func describeSelector(sel routing.Selector) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		parts = append(parts, k+"="+sel.MatchLabels[k])
	}
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case routing.Exists:
			parts = append(parts, e.Key)
		case routing.DoesNotExist:
			parts = append(parts, "!"+e.Key)
		case routing.NotIn:
			parts = append(parts, e.Key+" notin ("+strings.Join(e.Values, ",")+")")
		default:
			parts = append(parts, e.Key+" in ("+strings.Join(e.Values, ",")+")")
		}
	}
	return strings.Join(parts, ",")
}
