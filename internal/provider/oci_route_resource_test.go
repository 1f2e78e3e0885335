package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// Helpers that build ociRouteModel values as Terraform would hand them to the resource.

func strSet(ss ...string) types.Set   { return types.SetValueMust(types.StringType, strValues(ss)) }
func strList(ss ...string) types.List { return types.ListValueMust(types.StringType, strValues(ss)) }

// expr builds one match_expressions element; values nil means `values` is not set (null).
func expr(key, op string, values []string) attr.Value {
	vals := types.ListNull(types.StringType)
	if values != nil {
		vals = strList(values...)
	}
	return types.ObjectValueMust(expressionType.AttrTypes, map[string]attr.Value{
		"key": types.StringValue(key), "operator": types.StringValue(op), "values": vals,
	})
}

// sel builds one cluster_selectors element; a nil map or nil exprs means the attribute is unset.
func sel(labels map[string]string, exprs []attr.Value) attr.Value {
	ml := types.MapNull(types.StringType)
	if labels != nil {
		m := map[string]attr.Value{}
		for k, v := range labels {
			m[k] = types.StringValue(v)
		}
		ml = types.MapValueMust(types.StringType, m)
	}
	me := types.ListNull(expressionType)
	if exprs != nil {
		me = types.ListValueMust(expressionType, exprs)
	}
	return types.ObjectValueMust(selectorType.AttrTypes, map[string]attr.Value{"match_labels": ml, "match_expressions": me})
}

func sels(s ...attr.Value) types.List { return types.ListValueMust(selectorType, s) }

// route returns a known, valid-looking model with every optional attribute null; edit the rest.
func route(name string, priority int64, registries ...string) ociRouteModel {
	return ociRouteModel{
		Meta:             hubresource.Meta{Name: types.StringValue(name), Workspace: types.StringValue("ws"), ID: types.StringValue("ws/" + name)},
		Priority:         types.Int64Value(priority),
		Default:          types.BoolValue(false),
		ClusterNames:     types.SetNull(types.StringType),
		ClusterGroups:    types.SetNull(types.StringType),
		ClusterSelectors: types.ListNull(selectorType),
		Registries:       strList(registries...),
		ReplicationWait:  types.StringValue("0s"),
		Verify:           types.ObjectNull(verifyType.AttrTypes),
	}
}

// routeAttrs lists the route's own attributes by name, for comparisons.
func routeAttrs(m *ociRouteModel) map[string]attr.Value {
	return map[string]attr.Value{
		"priority": m.Priority, "default": m.Default, "cluster_names": m.ClusterNames, "cluster_groups": m.ClusterGroups,
		"cluster_selectors": m.ClusterSelectors, "registries": m.Registries, "replication_wait": m.ReplicationWait,
	}
}

func assertRouteModel(t *testing.T, got, want *ociRouteModel) {
	t.Helper()
	g, w := routeAttrs(got), routeAttrs(want)
	for k := range w {
		if !g[k].Equal(w[k]) {
			t.Errorf("%s = %v, want %v", k, g[k], w[k])
		}
	}
}

// throughHub serialises the expanded object to JSON and back, as the API server returns it.
func throughHub(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	obj.SetAPIVersion("fleet.umkim.io/v1alpha1")
	obj.SetKind("OCIStorageRoute")
	obj.SetName("r")
	obj.SetNamespace("ws")
	raw, err := obj.MarshalJSON()
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	back := &unstructured.Unstructured{}
	if err := back.UnmarshalJSON(raw); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return back
}

func TestOCIRouteExpandFlatten(t *testing.T) {
	ctx := context.Background()
	everything := route("eu", 10, "harbor-eu", "harbor-central", "zot-stores")
	everything.ClusterNames = strSet("eu-02", "eu-01")
	everything.ClusterGroups = strSet("airgap-stores")
	everything.ClusterSelectors = sels(
		sel(map[string]string{"region": "eu", "tier": "prod"}, nil),
		sel(nil, []attr.Value{
			expr("zone", "In", []string{"b", "a"}),
			expr("env", "NotIn", []string{"dev"}),
			expr("gpu", "Exists", nil),
			expr("legacy", "DoesNotExist", nil),
		}),
	)
	everything.ReplicationWait = types.StringValue("10m")

	emptyNames := route("names", 3, "harbor-central")
	emptyNames.ClusterNames = strSet()
	emptyNames.ClusterGroups = strSet("g")

	def := route("fallback", 1000, "harbor-central")
	def.Default = types.BoolValue(true)

	matchAll := route("all", 7, "harbor-central")
	matchAll.ClusterSelectors = sels(sel(nil, nil))

	emptyCollections := route("empty", 8, "harbor-central")
	emptyCollections.ClusterGroups = strSet("g")
	emptyCollections.ClusterSelectors = sels(sel(map[string]string{}, []attr.Value{}))

	seconds := route("seconds", 9, "harbor-central")
	seconds.ClusterNames = strSet("a")
	seconds.ReplicationWait = types.StringValue("600s")

	cases := []struct {
		name     string
		plan     ociRouteModel
		wantSpec map[string]any
		// wantImport is the model read back with no prior state (import); nil: same as plan.
		wantImport *ociRouteModel
	}{
		{
			name: "names, groups, labels and every operator",
			plan: everything,
			wantSpec: map[string]any{
				"priority":        int64(10),
				"registries":      []any{"harbor-eu", "harbor-central", "zot-stores"},
				"replicationWait": "10m",
				"clusterNames":    []any{"eu-01", "eu-02"},
				"clusterGroups":   []any{"airgap-stores"},
				"clusterSelectors": []any{
					map[string]any{"matchLabels": map[string]any{"region": "eu", "tier": "prod"}},
					map[string]any{"matchExpressions": []any{
						map[string]any{"key": "zone", "operator": "In", "values": []any{"b", "a"}},
						map[string]any{"key": "env", "operator": "NotIn", "values": []any{"dev"}},
						map[string]any{"key": "gpu", "operator": "Exists"},
						map[string]any{"key": "legacy", "operator": "DoesNotExist"},
					}},
				},
			},
		},
		{
			name: "empty cluster_names stays an empty set",
			plan: emptyNames,
			wantSpec: map[string]any{
				"priority": int64(3), "registries": []any{"harbor-central"}, "replicationWait": "0s", "clusterGroups": []any{"g"},
			},
			wantImport: func() *ociRouteModel {
				m := emptyNames
				m.ClusterNames = types.SetNull(types.StringType)
				return &m
			}(),
		},
		{
			name:     "default route",
			plan:     def,
			wantSpec: map[string]any{"priority": int64(1000), "default": true, "registries": []any{"harbor-central"}, "replicationWait": "0s"},
		},
		{
			name: "empty selector matches every cluster",
			plan: matchAll,
			wantSpec: map[string]any{
				"priority": int64(7), "registries": []any{"harbor-central"}, "replicationWait": "0s", "clusterSelectors": []any{map[string]any{}},
			},
		},
		{
			name: "empty match_labels and match_expressions stay empty",
			plan: emptyCollections,
			wantSpec: map[string]any{
				"priority": int64(8), "registries": []any{"harbor-central"}, "replicationWait": "0s",
				"clusterGroups": []any{"g"}, "clusterSelectors": []any{map[string]any{}},
			},
			wantImport: func() *ociRouteModel {
				m := emptyCollections
				m.ClusterSelectors = sels(sel(nil, nil))
				return &m
			}(),
		},
		{
			// The hub keeps the duration as written, so import reads back the configuration's spelling.
			name: "the user's spelling of a duration reaches the hub and comes back",
			plan: seconds,
			wantSpec: map[string]any{
				"priority": int64(9), "registries": []any{"harbor-central"}, "replicationWait": "600s", "clusterNames": []any{"a"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, diags := expandOCIRoute(ctx, hubresource.ExpandRequest[ociRouteModel]{Plan: &tc.plan, Config: &tc.plan})
			if diags.HasError() {
				t.Fatalf("expand: %v", diags)
			}
			spec := obj.Object["spec"].(map[string]any)
			// Sets have no order of their own: compare clusterNames/clusterGroups sorted.
			for _, k := range []string{"clusterNames", "clusterGroups"} {
				if l, ok := spec[k].([]any); ok {
					sortAny(l)
				}
			}
			if want := fullSpec(tc.wantSpec); !reflect.DeepEqual(normalise(spec), normalise(want)) {
				t.Errorf("spec =\n  %#v\nwant\n  %#v", spec, tc.wantSpec)
			}

			hubObj := throughHub(t, obj)
			// Apply: the hub's object is read back into the plan.
			back := tc.plan
			if diags := flattenOCIRoute(ctx, hubObj, &back); diags.HasError() {
				t.Fatalf("flatten: %v", diags)
			}
			assertRouteModel(t, &back, &tc.plan)

			// Import: the object is read into an empty model.
			var imported ociRouteModel
			imported.ClusterNames, imported.ClusterGroups = types.SetNull(types.StringType), types.SetNull(types.StringType)
			imported.ClusterSelectors, imported.Registries = types.ListNull(selectorType), types.ListNull(types.StringType)
			if diags := flattenOCIRoute(ctx, hubObj, &imported); diags.HasError() {
				t.Fatalf("flatten on import: %v", diags)
			}
			want := tc.wantImport
			if want == nil {
				want = &tc.plan
			}
			t.Run("import", func(t *testing.T) { assertRouteModel(t, &imported, want) })
		})
	}
}

// TestOCIRouteExpandFlattenEmptyLists covers configuration that writes an empty list where the
// hub object has no field: the value read back must equal the configuration, or Terraform reports
// "Provider produced inconsistent result after apply".
func TestOCIRouteExpandFlattenEmptyLists(t *testing.T) {
	ctx := context.Background()
	noSelectors := route("no-selectors", 4, "harbor-central")
	noSelectors.ClusterNames = strSet("a")
	noSelectors.ClusterSelectors = sels()

	existsEmptyValues := route("exists", 5, "harbor-central")
	existsEmptyValues.ClusterSelectors = sels(sel(nil, []attr.Value{expr("gpu", "Exists", []string{})}))

	emptyGroups := route("no-groups", 6, "harbor-central")
	emptyGroups.ClusterNames = strSet("a")
	emptyGroups.ClusterGroups = strSet()

	for name, plan := range map[string]ociRouteModel{
		"cluster_selectors = []":  noSelectors,
		"Exists with values = []": existsEmptyValues,
		"cluster_groups = []":     emptyGroups,
	} {
		t.Run(name, func(t *testing.T) {
			obj, diags := expandOCIRoute(ctx, hubresource.ExpandRequest[ociRouteModel]{Plan: &plan, Config: &plan})
			if diags.HasError() {
				t.Fatalf("expand: %v", diags)
			}
			back := plan
			if diags := flattenOCIRoute(ctx, throughHub(t, obj), &back); diags.HasError() {
				t.Fatalf("flatten: %v", diags)
			}
			assertRouteModel(t, &back, &plan)
		})
	}
}

// fullSpec completes an expected spec with what Expand always writes: every field, empty lists and
// maps and false included, so that server-side apply owns them all.
func fullSpec(spec map[string]any) map[string]any {
	out := map[string]any{"default": false, "clusterNames": []any{}, "clusterGroups": []any{}, "clusterSelectors": []any{}}
	for k, v := range spec {
		out[k] = v
	}
	for _, s := range out["clusterSelectors"].([]any) {
		sel := s.(map[string]any)
		if _, ok := sel["matchLabels"]; !ok {
			sel["matchLabels"] = map[string]any{}
		}
		if _, ok := sel["matchExpressions"]; !ok {
			sel["matchExpressions"] = []any{}
		}
		for _, e := range sel["matchExpressions"].([]any) {
			if expr := e.(map[string]any); expr["values"] == nil {
				expr["values"] = []any{}
			}
		}
	}
	return out
}

func sortAny(l []any) {
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && l[j].(string) < l[j-1].(string); j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
}

// normalise turns the typed slices and numbers of an expanded spec into the shapes JSON decoding
// gives, so that expected specs can be written as JSON-like literals.
func normalise(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = normalise(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalise(e)
		}
		return out
	case int:
		return int64(v)
	case int32:
		return int64(v)
	}
	return v
}

func TestOCIRouteAttrPath(t *testing.T) {
	cases := []struct {
		name string
		in   routing.Path
		want path.Path
	}{
		{"whole route", nil, path.Empty()},
		{"attribute", routing.Path{routing.Attr("priority")}, path.Root("priority")},
		{"list element", routing.Path{routing.Attr("registries"), routing.Index(2)}, path.Root("registries").AtListIndex(2)},
		{"set element stops at the set", routing.Path{routing.Attr("cluster_names"), routing.Index(1)}, path.Root("cluster_names")},
		{"group element stops at the set", routing.Path{routing.Attr("cluster_groups"), routing.Index(0)}, path.Root("cluster_groups")},
		{"map key", routing.Path{routing.Attr("cluster_selectors"), routing.Index(1), routing.Attr("match_labels"), routing.Key("region")},
			path.Root("cluster_selectors").AtListIndex(1).AtName("match_labels").AtMapKey("region")},
		{"expression value", routing.Path{routing.Attr("cluster_selectors"), routing.Index(0), routing.Attr("match_expressions"), routing.Index(3), routing.Attr("values"), routing.Index(1)},
			path.Root("cluster_selectors").AtListIndex(0).AtName("match_expressions").AtListIndex(3).AtName("values").AtListIndex(1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := attrPath(tc.in); !got.Equal(tc.want) {
				t.Errorf("attrPath(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

type wantDiag struct {
	path    path.Path
	summary string
	detail  string
}

func assertDiags(t *testing.T, got diag.Diagnostics, want []wantDiag) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics, want %d:\n%s", len(got), len(want), describeDiags(got))
	}
	for i, w := range want {
		d := got[i]
		var p path.Path
		if dp, ok := d.(diag.DiagnosticWithPath); ok {
			p = dp.Path()
		} else {
			t.Errorf("diagnostic %d has no attribute path: %s", i, d.Summary())
		}
		if !p.Equal(w.path) {
			t.Errorf("diagnostic %d path = %s, want %s", i, p, w.path)
		}
		if d.Summary() != w.summary {
			t.Errorf("diagnostic %d summary = %q, want %q", i, d.Summary(), w.summary)
		}
		if d.Detail() != w.detail {
			t.Errorf("diagnostic %d detail =\n  %q\nwant\n  %q", i, d.Detail(), w.detail)
		}
	}
}

func describeDiags(ds diag.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		p := ""
		if dp, ok := d.(diag.DiagnosticWithPath); ok {
			p = dp.Path().String()
		}
		b.WriteString("  " + d.Severity().String() + " [" + p + "] " + d.Summary() + ": " + d.Detail() + "\n")
	}
	return b.String()
}

func TestValidateOCIRoute(t *testing.T) {
	ctx := context.Background()
	edit := func(m ociRouteModel, f func(*ociRouteModel)) ociRouteModel { f(&m); return m }
	base := route("r", 10, "harbor-eu", "harbor-central")
	badKey := "bad key"
	keyErr := strings.Join(validation.IsQualifiedName(badKey), "; ")

	cases := []struct {
		name  string
		model ociRouteModel
		want  []wantDiag
	}{
		{"valid", edit(base, func(m *ociRouteModel) { m.ClusterNames = strSet("a") }), nil},
		{"valid default", edit(base, func(m *ociRouteModel) { m.Default = types.BoolValue(true) }), nil},
		{"default with criteria", edit(base, func(m *ociRouteModel) {
			m.Default = types.BoolValue(true)
			m.ClusterNames = strSet("a")
			m.ClusterSelectors = sels(sel(map[string]string{"region": "eu"}, nil))
		}), []wantDiag{
			{path.Root("cluster_names"), "Invalid route", `route "r": cluster_names: a default route takes no criteria: it catches every cluster no other route matches.`},
			{path.Root("cluster_selectors"), "Invalid route", `route "r": cluster_selectors: a default route takes no criteria: it catches every cluster no other route matches.`},
		}},
		{"non-default without criteria", base, []wantDiag{
			{path.Empty(), "Invalid route", `route "r": a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors.`},
		}},
		{"empty set is no criterion", edit(base, func(m *ociRouteModel) { m.ClusterNames = strSet() }), []wantDiag{
			{path.Empty(), "Invalid route", `route "r": a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors.`},
		}},
		{"empty chain", edit(base, func(m *ociRouteModel) { m.ClusterNames = strSet("a"); m.Registries = strList() }), []wantDiag{
			{path.Root("registries"), "Invalid route", `route "r": registries: must name at least one registry.`},
		}},
		{"duplicate registry", edit(base, func(m *ociRouteModel) {
			m.ClusterNames = strSet("a")
			m.Registries = strList("harbor-eu", "harbor-central", "harbor-eu")
		}), []wantDiag{
			{path.Root("registries").AtListIndex(2), "Invalid route", `route "r": registries[2]: registry "harbor-eu" is already listed at registries[0].`},
		}},
		{"bad label key", edit(base, func(m *ociRouteModel) {
			m.ClusterSelectors = sels(sel(map[string]string{badKey: "x"}, nil))
		}), []wantDiag{
			{path.Root("cluster_selectors").AtListIndex(0).AtName("match_labels").AtMapKey(badKey), "Invalid route",
				`route "r": cluster_selectors[0].match_labels["bad key"]: invalid label key "bad key": ` + keyErr + "."},
		}},
		{"In without values", edit(base, func(m *ociRouteModel) {
			m.ClusterSelectors = sels(
				sel(map[string]string{"region": "eu"}, nil),
				sel(nil, []attr.Value{expr("gpu", "Exists", nil), expr("zone", "In", nil)}),
			)
		}), []wantDiag{
			{path.Root("cluster_selectors").AtListIndex(1).AtName("match_expressions").AtListIndex(1).AtName("values"), "Invalid route",
				`route "r": cluster_selectors[1].match_expressions[1].values: operator In needs at least one value.`},
		}},
		{"Exists with values", edit(base, func(m *ociRouteModel) {
			m.ClusterSelectors = sels(sel(nil, []attr.Value{expr("gpu", "Exists", []string{"yes"})}))
		}), []wantDiag{
			{path.Root("cluster_selectors").AtListIndex(0).AtName("match_expressions").AtListIndex(0).AtName("values"), "Invalid route",
				`route "r": cluster_selectors[0].match_expressions[0].values: operator Exists takes no values.`},
		}},
		{"unknown values are left to apply", edit(base, func(m *ociRouteModel) {
			m.ClusterNames = strSet("a")
			m.Registries = types.ListUnknown(types.StringType)
		}), nil},
		{"what is known is checked", edit(base, func(m *ociRouteModel) {
			m.Default = types.BoolValue(true)
			m.ClusterNames = types.SetValueMust(types.StringType, []attr.Value{types.StringUnknown()})
			m.Registries = strList("a", "a")
		}), []wantDiag{
			{path.Root("cluster_names"), "Invalid route", `route "r": cluster_names: a default route takes no criteria: it catches every cluster no other route matches.`},
			{path.Root("registries").AtListIndex(1), "Invalid route", `route "r": registries[1]: registry "a" is already listed at registries[0].`},
		}},
		{"unknown default leaves the criteria rules to apply", edit(base, func(m *ociRouteModel) {
			m.Default = types.BoolUnknown()
		}), nil},
		{"cluster name that is no object name", edit(base, func(m *ociRouteModel) { m.ClusterNames = strSet("US_02") }), []wantDiag{
			{path.Root("cluster_names"), "Invalid route", `route "r": cluster_names[0]: cluster "US_02" is not a valid name: use lowercase letters, digits and '-', at most 63 characters, starting and ending with a letter or digit.`},
		}},
		{"unknown registry reference is left to apply", edit(base, func(m *ociRouteModel) {
			m.ClusterNames = strSet("a")
			m.Registries = types.ListValueMust(types.StringType, []attr.Value{types.StringUnknown(), types.StringValue("harbor-eu")})
		}), nil},
		{"unknown cluster name is left to apply", edit(base, func(m *ociRouteModel) {
			m.ClusterNames = types.SetValueMust(types.StringType, []attr.Value{types.StringUnknown()})
		}), nil},
		{"unknown label value is left to apply", edit(base, func(m *ociRouteModel) {
			m.ClusterSelectors = sels(types.ObjectValueMust(selectorType.AttrTypes, map[string]attr.Value{
				"match_labels":      types.MapValueMust(types.StringType, map[string]attr.Value{"region": types.StringUnknown()}),
				"match_expressions": types.ListNull(expressionType),
			}))
		}), nil},
		{"unknown expression is left to apply", edit(base, func(m *ociRouteModel) {
			m.ClusterSelectors = sels(sel(nil, []attr.Value{types.ObjectValueMust(expressionType.AttrTypes, map[string]attr.Value{
				"key": types.StringValue("zone"), "operator": types.StringValue("In"), "values": types.ListUnknown(types.StringType),
			})}))
		}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertDiags(t, validateOCIRoute(ctx, &tc.model), tc.want)
		})
	}
}

func TestOCIRouteDurationValidator(t *testing.T) {
	p := path.Root("replication_wait")
	cases := []struct {
		name   string
		value  types.String
		detail string // "" for valid
	}{
		{"minutes", types.StringValue("10m"), ""},
		{"hours and minutes", types.StringValue("1h30m"), ""},
		{"zero", types.StringValue("0s"), ""},
		{"canonical", types.StringValue("10m0s"), ""},
		{"null", types.StringNull(), ""},
		{"unknown", types.StringUnknown(), ""},
		{"no unit", types.StringValue("10"), `"10" is not a duration: write a number with a unit, e.g. "90s", "10m" or "1h30m".`},
		{"word", types.StringValue("ten minutes"), `"ten minutes" is not a duration: write a number with a unit, e.g. "90s", "10m" or "1h30m".`},
		{"empty", types.StringValue(""), `"" is not a duration: write a number with a unit, e.g. "90s", "10m" or "1h30m".`},
		{"negative", types.StringValue("-5m"), `"-5m" is negative: use 0s or more.`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp validator.StringResponse
			durationValidator{}.ValidateString(context.Background(), validator.StringRequest{Path: p, ConfigValue: tc.value}, &resp)
			var want []wantDiag
			if tc.detail != "" {
				want = []wantDiag{{p, "Invalid duration", tc.detail}}
			}
			assertDiags(t, resp.Diagnostics, want)
		})
	}
}
