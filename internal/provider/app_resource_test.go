package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

func values(doc string) valuesValue { return valuesValue{basetypes.NewStringValue(doc)} }

// TestValuesSemanticEquality: JSON and YAML documents of the same values are equal, whatever
// their key order, spacing or number spelling; other values are not; a document that is not a
// mapping is refused with a message saying what values must be.
func TestValuesSemanticEquality(t *testing.T) {
	ctx := context.Background()
	json := `{"image":{"tag":"1.2"},"ports":[80,443],"replicaCount":2,"debug":false}`
	for _, c := range []struct {
		name, other string
		equal       bool
	}{
		{"same JSON", json, true},
		{"keys reordered and spaced", `{ "replicaCount": 2, "debug": false, "ports": [80, 443], "image": { "tag": "1.2" } }`, true},
		{"yamlencode", "\"debug\": false\n\"image\":\n  \"tag\": \"1.2\"\n\"ports\":\n- 80\n- 443\n\"replicaCount\": 2\n", true},
		{"plain YAML", "replicaCount: 2\ndebug: false\nports: [80, 443]\nimage:\n  tag: \"1.2\"\n", true},
		{"2.0 is 2", `{"image":{"tag":"1.2"},"ports":[80,443],"replicaCount":2.0,"debug":false}`, true},
		{"another count", `{"image":{"tag":"1.2"},"ports":[80,443],"replicaCount":3,"debug":false}`, false},
		{"tag as a number", `{"image":{"tag":1.2},"ports":[80,443],"replicaCount":2,"debug":false}`, false},
		{"ports reordered", `{"image":{"tag":"1.2"},"ports":[443,80],"replicaCount":2,"debug":false}`, false},
		{"not a document", `{"image":`, false},
	} {
		got, diags := values(json).StringSemanticEquals(ctx, values(c.other))
		if diags.HasError() || got != c.equal {
			t.Errorf("%s: equal = %v (%v), want %v", c.name, got, diags, c.equal)
		}
	}
	for _, doc := range []string{`[1, 2]`, `"text"`, ``, `null`} {
		if _, err := parseValues(doc); err == nil || !strings.Contains(err.Error(), "values must be a mapping") {
			t.Errorf("parseValues(%q) = %v, want the mapping error", doc, err)
		}
	}
	m, err := parseValues("a: 1\nb: 1.5\n")
	if err != nil || m["a"] != int64(1) || m["b"] != 1.5 {
		t.Errorf(`parseValues("a: 1, b: 1.5") = %#v, %v; want int64 1 and float64 1.5, as the hub's objects hold numbers`, m, err)
	}
}

// roundTrip expands model, as apply does, then flattens the object into a fresh model, as read
// does, giving the object and the model read back.
func roundTrip[M any](t *testing.T, kind hubresource.Kind[M], model *M) (*unstructured.Unstructured, *M) {
	t.Helper()
	ctx := context.Background()
	obj, diags := kind.Expand(ctx, hubresource.ExpandRequest[M]{Plan: model, Config: model})
	if diags.HasError() {
		t.Fatalf("expand: %v", diags)
	}
	back := new(M)
	if diags := kind.Flatten(ctx, obj, back); diags.HasError() {
		t.Fatalf("flatten: %v", diags)
	}
	return obj, back
}

// TestChartRoundTrip: the spec carries what is set, and reads back the same; status reads back
// as resolved_digest and apps once observed.
func TestChartRoundTrip(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	kind := chartKind
	in := &chartModel{Repository: types.StringValue("charts/hello"), Version: types.StringNull(), Digest: types.StringValue(digest)}
	obj, out := roundTrip(t, kind, in)
	if got := obj.Object["spec"]; !equalJSON(got, map[string]any{"repository": "charts/hello", "digest": digest}) {
		t.Errorf("spec = %v", got)
	}
	if !out.Repository.Equal(in.Repository) || !out.Version.IsNull() || !out.Digest.Equal(in.Digest) || !out.ResolvedDigest.IsNull() || !out.Apps.IsNull() {
		t.Errorf("read back %+v, want the model and null status", out)
	}
	obj.Object["status"] = map[string]any{"observedGeneration": int64(1), "digest": digest, "apps": int64(3)}
	if diags := kind.Flatten(context.Background(), obj, out); diags.HasError() || out.ResolvedDigest.ValueString() != digest || out.Apps.ValueInt64() != 3 {
		t.Errorf("status read back: %+v (%v), want resolved_digest %s and 3 apps", out, diags, digest)
	}
	if d := validateChart(context.Background(), &chartModel{Version: types.StringNull(), Digest: types.StringNull()}); !d.HasError() {
		t.Error("a chart without version nor digest validates")
	}
	d := validateChart(context.Background(), &chartModel{Version: types.StringValue("0.1.0"), Digest: types.StringValue(digest)})
	if !d.HasError() || !strings.Contains(d.Errors()[0].Detail(), "never read the version") {
		t.Errorf("a chart with version and digest: %v, want an error that says the version would be ignored", d)
	}
}

// TestAppRoundTrip: values are sent as an object and read back as the hub's JSON (semantically
// equal to the YAML configured); the values Secret is a reference only; status fields read back.
func TestAppRoundTrip(t *testing.T) {
	in := &appModel{Chart: types.StringValue("hello"), Cluster: types.StringValue("eu-01"), ReleaseName: types.StringNull(), Namespace: types.StringValue("web"),
		Values:       values("replicaCount: 2\nimage:\n  tag: \"1.2\"\n"),
		ValuesSecret: types.ObjectValueMust(siteSecretTypes, map[string]attr.Value{"name": types.StringValue("hello-secrets"), "key": types.StringValue("values.yaml")})}
	obj, out := roundTrip(t, appKind, in)
	want := map[string]any{"chart": "hello", "cluster": "eu-01", "namespace": "web", "values": map[string]any{"replicaCount": 2, "image": map[string]any{"tag": "1.2"}},
		"valuesSecretRef": map[string]any{"name": "hello-secrets", "key": "values.yaml"}}
	if got := obj.Object["spec"]; !equalJSON(got, want) {
		t.Errorf("spec = %v, want %v", got, want)
	}
	if out.Values.ValueString() != `{"image":{"tag":"1.2"},"replicaCount":2}` {
		t.Errorf("values read back %s, want the hub's JSON", out.Values.ValueString())
	}
	if eq, _ := in.Values.StringSemanticEquals(context.Background(), out.Values); !eq {
		t.Error("values read back are not semantically equal to the configured YAML")
	}
	if !out.ValuesSecret.Equal(in.ValuesSecret) || !out.ReleaseName.IsNull() || !out.Phase.IsNull() || !out.Revision.IsNull() {
		t.Errorf("read back %+v", out)
	}
	obj.Object["status"] = map[string]any{"observedGeneration": int64(1), "phase": "Failed", "revision": int64(2), "digest": "sha256:x", "registry": "r.example.com", "reason": "NotFound", "message": "no tag"}
	if diags := appKind.Flatten(context.Background(), obj, out); diags.HasError() || out.Phase.ValueString() != "Failed" || out.Revision.ValueInt64() != 2 ||
		out.Registry.ValueString() != "r.example.com" || out.Reason.ValueString() != "NotFound" || out.Message.ValueString() != "no tag" || out.Digest.ValueString() != "sha256:x" {
		t.Errorf("status read back: %+v (%v)", out, diags)
	}
	if out.Adopt.ValueBool() || out.Adopt.IsNull() {
		t.Errorf("adopt read back %v, want false (the field absent)", out.Adopt)
	}
	// adopt = true is written as spec.adopt and reads back; false is no field at all.
	in.Adopt = types.BoolValue(true)
	obj, out = roundTrip(t, appKind, in)
	if got, _ := obj.Object["spec"].(map[string]any); got["adopt"] != true || !out.Adopt.ValueBool() {
		t.Errorf("adopt: spec %v, read back %v; want adopt true both", got, out.Adopt)
	}
	in.Adopt = types.BoolValue(false)
	if obj, _ = roundTrip(t, appKind, in); obj.Object["spec"].(map[string]any)["adopt"] != nil {
		t.Errorf("adopt = false wrote spec.adopt: %v", obj.Object["spec"])
	}
	if d := validateApp(context.Background(), &appModel{Values: values("- a\n- b\n")}); !d.HasError() {
		t.Error("a list of values validates")
	}
}

// TestAppRouteRoundTrip: the route's spec reads back the same, with mode and path as the hub's
// defaults when it lacks them; the Ready condition reads back as ready, reason and message.
func TestAppRouteRoundTrip(t *testing.T) {
	in := &appRouteModel{App: types.StringValue("hello"), Mode: types.StringValue("hub"), Host: types.StringValue("hello.example.com"), Path: types.StringValue("/api"),
		Service: types.ObjectValueMust(routeServiceTypes, map[string]attr.Value{"name": types.StringValue("hello"), "port": types.Int64Value(8080)}),
		TLS:     types.ObjectValueMust(routeTLSTypes, map[string]attr.Value{"secret_name": types.StringNull(), "acme_issuer": types.StringValue("letsencrypt")})}
	obj, out := roundTrip(t, appRouteKind, in)
	want := map[string]any{"app": "hello", "mode": "hub", "host": "hello.example.com", "path": "/api", "service": map[string]any{"name": "hello", "port": 8080},
		"tls": map[string]any{"acmeIssuer": "letsencrypt"}}
	if got := obj.Object["spec"]; !equalJSON(got, want) {
		t.Errorf("spec = %v, want %v", got, want)
	}
	for name, eq := range map[string]bool{"app": out.App.Equal(in.App), "mode": out.Mode.Equal(in.Mode), "host": out.Host.Equal(in.Host), "path": out.Path.Equal(in.Path),
		"service": out.Service.Equal(in.Service), "tls": out.TLS.Equal(in.TLS), "ready": out.Ready.IsNull()} {
		if !eq {
			t.Errorf("%s read back differs: %+v", name, out)
		}
	}
	obj.Object["spec"] = map[string]any{"app": "hello", "service": map[string]any{"name": "hello", "port": int64(80)}}
	obj.Object["status"] = map[string]any{"observedGeneration": int64(1), "url": "https://x", "conditions": []any{
		map[string]any{"type": "Ready", "status": "False", "reason": "NoIngress", "message": "bind it", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	if diags := appRouteKind.Flatten(context.Background(), obj, out); diags.HasError() || out.Mode.ValueString() != "site" || out.Path.ValueString() != "/" || !out.Host.IsNull() ||
		!out.TLS.IsNull() || out.Ready.ValueBool() || out.Reason.ValueString() != "NoIngress" || out.Message.ValueString() != "bind it" || out.URL.ValueString() != "https://x" {
		t.Errorf("defaults and status read back: %+v (%v)", out, diags)
	}
	if d := validateAppRoute(context.Background(), &appRouteModel{Mode: types.StringValue("site"), Host: types.StringNull()}); !d.HasError() {
		t.Error("mode site without host validates")
	}
	if d := validateAppRoute(context.Background(), &appRouteModel{Mode: types.StringValue("none"), Host: types.StringNull()}); d.HasError() {
		t.Errorf("mode none without host: %v", d)
	}
}

// TestKeepEquivalentValues: a configured document that means the state's values plans the
// state's document (no diff); other values plan the configuration; unset plans null.
func TestKeepEquivalentValues(t *testing.T) {
	state := types.StringValue(`{"replicaCount":2}`)
	for _, c := range []struct {
		name   string
		config types.String
		want   types.String
	}{
		{"same values as YAML", types.StringValue("replicaCount: 2\n"), state},
		{"other values", types.StringValue("replicaCount: 3\n"), types.StringValue("replicaCount: 3\n")},
		{"unset", types.StringNull(), types.StringNull()},
		{"unknown", types.StringUnknown(), types.StringUnknown()},
	} {
		resp := &planmodifier.StringResponse{PlanValue: c.config}
		keepEquivalentValues{}.PlanModifyString(context.Background(), planmodifier.StringRequest{ConfigValue: c.config, StateValue: state, PlanValue: c.config}, resp)
		if !resp.PlanValue.Equal(c.want) {
			t.Errorf("%s: planned %v, want %v", c.name, resp.PlanValue, c.want)
		}
	}
}

// TestAppDriftRoundTrip: repairs is written as spec.repairs (0 as no field) and read back; the
// agent's drift is read only when the status answers the object's generation.
func TestAppDriftRoundTrip(t *testing.T) {
	in := &appModel{Chart: types.StringValue("hello"), Cluster: types.StringValue("eu-01"), ReleaseName: types.StringNull(), Namespace: types.StringValue("web"),
		Values: valuesNull(), ValuesSecret: types.ObjectNull(siteSecretTypes), Repairs: types.Int64Value(0)}
	obj, out := roundTrip(t, appKind, in)
	if spec := obj.Object["spec"].(map[string]any); spec["repairs"] != nil || out.Repairs.ValueInt64() != 0 || out.Repairs.IsNull() || !out.Drift.IsNull() {
		t.Errorf("no repairs: spec %v, read back repairs %v drift %v; want no field, 0 and no drift", spec, out.Repairs, out.Drift)
	}
	in.Repairs = types.Int64Value(3)
	obj, out = roundTrip(t, appKind, in)
	if spec := obj.Object["spec"].(map[string]any); spec["repairs"] != int64(3) || out.Repairs.ValueInt64() != 3 {
		t.Errorf("3 repairs: spec %v, read back %v", spec, out.Repairs)
	}
	drift := map[string]any{"count": int64(2), "objects": []any{map[string]any{"kind": "Deployment", "namespace": "web", "name": "hello"}}}
	for _, tc := range []struct {
		name      string
		observed  int64
		wantCount int64 // -1: null
	}{{"for this generation", 4, 2}, {"for an older generation", 3, -1}} {
		obj.SetGeneration(4)
		obj.Object["status"] = map[string]any{"observedGeneration": tc.observed, "phase": "Deployed", "drift": drift}
		if diags := appKind.Flatten(context.Background(), obj, out); diags.HasError() {
			t.Fatal(diags)
		}
		d, ok := driftOf(context.Background(), out.Drift)
		switch {
		case tc.wantCount < 0 && ok:
			t.Errorf("%s: drift %v, want null", tc.name, out.Drift)
		case tc.wantCount >= 0 && (!ok || d.Count.ValueInt64() != tc.wantCount || len(d.Objects) != 1 || d.Objects[0].Name.ValueString() != "hello"):
			t.Errorf("%s: drift %v, want count 2 naming Deployment web/hello", tc.name, out.Drift)
		}
	}
}

// TestCheckAppDrift: a plan that leaves a drifted release as it is warns, naming the objects and
// repair_drift; a plan that repairs it, or upgrades it with a new spec, or a release without
// drift, does not.
func TestCheckAppDrift(t *testing.T) {
	ctx := context.Background()
	model := func(count int64, objects ...string) *appModel {
		m := &appModel{Chart: types.StringValue("hello"), Cluster: types.StringValue("eu-01"), ReleaseName: types.StringNull(), Namespace: types.StringValue("web"),
			Values: values(`{"a":1}`), ValuesSecret: types.ObjectNull(siteSecretTypes), Adopt: types.BoolValue(false), Repairs: types.Int64Value(1), Drift: types.ObjectNull(driftTypes)}
		m.Name, m.Workspace = types.StringValue("hello"), types.StringValue("ws")
		if count >= 0 {
			d := appDrift{Count: types.Int64Value(count), Objects: []driftRef{}}
			for _, o := range objects {
				kind, name, _ := strings.Cut(o, " ")
				d.Objects = append(d.Objects, driftRef{Kind: types.StringValue(kind), Namespace: types.StringValue("web"), Name: types.StringValue(name)})
			}
			var diags diag.Diagnostics
			m.Drift = objectFrom(ctx, driftTypes, d, &diags)
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		plan, prior *appModel
		want        []string // nil: no warning
	}{
		{"drifted, left as it is", model(-1), model(2, "ConfigMap hello-config", "Deployment hello"),
			[]string{"FleetApp ws/hello: 2 object(s) of Helm release hello in namespace web on cluster \"eu-01\"", "ConfigMap web/hello-config, Deployment web/hello.", "repair_drift = true"}},
		{"drifted, sample short of the count", model(-1), model(5, "Deployment hello"), []string{"Deployment web/hello and 4 more."}},
		{"drifted, no sample", model(-1), model(1), []string{"not listed", "RawFeedbackJsonString"}},
		{"not checked", model(-1), model(-1), nil},
		{"no drift", model(-1), model(0), nil},
		{"repaired by this plan", func() *appModel { m := model(-1); m.Repairs = types.Int64Value(2); return m }(), model(1, "Deployment hello"), nil},
		{"upgraded by new values", func() *appModel { m := model(-1); m.Values = values(`{"a":2}`); return m }(), model(1, "Deployment hello"), nil},
		{"values reformatted only", func() *appModel { m := model(-1); m.Values = values("a: 1\n"); return m }(), model(1, "Deployment hello"), []string{"Deployment web/hello."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			checkAppDrift(ctx, "ws/hello", tc.plan, tc.prior, &diags)
			if tc.want == nil {
				if len(diags) != 0 {
					t.Errorf("want no diagnostics, got %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning || diags[0].Summary() != "Release drifted on the cluster" {
				t.Fatalf("want one warning \"Release drifted on the cluster\", got %v", diags)
			}
			for _, w := range tc.want {
				if !strings.Contains(diags[0].Detail(), w) {
					t.Errorf("warning %q does not say %q", diags[0].Detail(), w)
				}
			}
		})
	}
}
