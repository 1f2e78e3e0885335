package provider

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

func TestOCIRegistryExpandFlatten(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		plan     ociRegistryModel
		config   ociRegistryModel
		wantData map[string]string
	}{
		{
			name: "minimal mirror",
			plan: ociRegistryModel{Role: types.StringValue("mirror"), Reference: types.StringValue("zot.local:5000"),
				BasicHTTP: types.BoolValue(true), InsecureSkipTLS: types.BoolValue(false)},
			wantData: map[string]string{"reference": "zot.local:5000", "basicHTTP": "true", "insecureSkipTLS": "false"},
		},
		{
			name: "source with push and agent credentials",
			plan: ociRegistryModel{Role: types.StringValue("source"), Reference: types.StringValue("harbor.example.com/fleet"),
				Username: types.StringValue("pusher"), AgentUsername: types.StringValue("puller"),
				PasswordWOVersion: types.Int64Value(1), AgentPasswordWOVersion: types.Int64Value(1),
				BasicHTTP: types.BoolValue(false), InsecureSkipTLS: types.BoolValue(true), CACerts: types.StringValue(testCA)},
			config: ociRegistryModel{PasswordWO: types.StringValue("p1"), AgentPasswordWO: types.StringValue("p2")},
			wantData: map[string]string{"reference": "harbor.example.com/fleet", "username": "pusher", "password": "p1",
				"agentUsername": "puller", "agentPassword": "p2", "basicHTTP": "false", "insecureSkipTLS": "true", "cacerts": testCA},
		},
		{
			name: "unknown username is not written",
			plan: ociRegistryModel{Role: types.StringValue("mirror"), Reference: types.StringValue("r.io"),
				Username: types.StringUnknown(), BasicHTTP: types.BoolValue(false), InsecureSkipTLS: types.BoolValue(false)},
			wantData: map[string]string{"reference": "r.io", "basicHTTP": "false", "insecureSkipTLS": "false"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, diags := expandOCIRegistry(ctx, hubresource.ExpandRequest[ociRegistryModel]{Plan: &tc.plan, Config: &tc.config})
			if diags.HasError() {
				t.Fatalf("expand: %v", diags)
			}
			if got := obj.Object["type"]; got != OCIRegistrySecretType {
				t.Errorf("type = %v, want %s", got, OCIRegistrySecretType)
			}
			if got := obj.GetLabels()[OCIRegistryRoleLabel]; got != tc.plan.Role.ValueString() {
				t.Errorf("role label = %q, want %q", got, tc.plan.Role.ValueString())
			}
			data := obj.Object["data"].(map[string]any)
			if len(data) != len(tc.wantData) {
				t.Errorf("data has %d keys, want %d: %v", len(data), len(tc.wantData), data)
			}
			for k, want := range tc.wantData {
				raw, _ := base64.StdEncoding.DecodeString(data[k].(string))
				if string(raw) != want {
					t.Errorf("data[%s] = %q, want %q", k, raw, want)
				}
			}

			var back ociRegistryModel
			obj.SetName("r")
			obj.SetNamespace("ws")
			if diags := flattenOCIRegistry(ctx, obj, &back); diags.HasError() {
				t.Fatalf("flatten: %v", diags)
			}
			for _, pair := range [][2]types.String{
				{back.Role, tc.plan.Role}, {back.Reference, tc.plan.Reference}, {back.CACerts, tc.plan.CACerts},
				{back.Username, known(tc.plan.Username)}, {back.AgentUsername, known(tc.plan.AgentUsername)},
			} {
				if !pair[0].Equal(pair[1]) {
					t.Errorf("round trip: got %v, want %v", pair[0], pair[1])
				}
			}
			if !back.BasicHTTP.Equal(tc.plan.BasicHTTP) || !back.InsecureSkipTLS.Equal(tc.plan.InsecureSkipTLS) {
				t.Errorf("flags round trip: got %v/%v", back.BasicHTTP, back.InsecureSkipTLS)
			}
			if !back.PasswordWO.IsNull() || !back.AgentPasswordWO.IsNull() {
				t.Errorf("flatten must never read passwords into the model")
			}
		})
	}
}

// A credential key on the hub changes only when its version does, and goes only when the
// configuration removes the value and its version.
func TestOCIRegistryCredentialKeys(t *testing.T) {
	v := types.Int64Value
	none := types.Int64Null()
	model := func(version types.Int64, password string) *ociRegistryModel {
		m := &ociRegistryModel{Role: types.StringValue("mirror"), Reference: types.StringValue("r.io"), Username: types.StringValue("u"),
			PasswordWOVersion: version, PasswordWO: types.StringNull(), AgentPasswordWOVersion: none, AgentPasswordWO: types.StringNull()}
		if password != "" {
			m.PasswordWO = types.StringValue(password)
		}
		return m
	}
	onHub := func(password string) *unstructured.Unstructured {
		data := map[string]any{"reference": base64.StdEncoding.EncodeToString([]byte("r.io"))}
		if password != "" {
			data["password"] = base64.StdEncoding.EncodeToString([]byte(password))
		}
		return &unstructured.Unstructured{Object: map[string]any{"type": OCIRegistrySecretType, "data": data}}
	}
	cases := []struct {
		name         string
		plan, config *ociRegistryModel
		prior        *ociRegistryModel
		current      *unstructured.Unstructured
		want         string // the password key on the hub after apply; "" = absent
	}{
		{"create sends it", model(v(1), ""), model(v(1), "new"), nil, nil, "new"},
		{"same version keeps the hub's, even if the value changed", model(v(1), ""), model(v(1), "changed"), model(v(1), ""), onHub("old"), "old"},
		{"an unrelated change keeps it", model(v(1), ""), model(v(1), "old"), model(v(1), ""), onHub("old"), "old"},
		{"a new version sends it", model(v(2), ""), model(v(2), "new"), model(v(1), ""), onHub("old"), "new"},
		{"after import a version sends it", model(v(1), ""), model(v(1), "new"), model(none, ""), onHub("old"), "new"},
		{"removing value and version removes it", model(none, ""), model(none, ""), model(v(1), ""), onHub("old"), ""},
		{"never configured: the hub's is left alone", model(none, ""), model(none, ""), model(none, ""), onHub("kubectl"), "kubectl"},
		{"lost on the hub: sent again", model(v(1), ""), model(v(1), "p"), model(v(1), ""), onHub(""), "p"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, diags := expandOCIRegistry(context.Background(), hubresource.ExpandRequest[ociRegistryModel]{Plan: tc.plan, Config: tc.config, Prior: tc.prior, Current: tc.current})
			if diags.HasError() {
				t.Fatal(diags)
			}
			enc, ok := obj.Object["data"].(map[string]any)["password"].(string)
			got, _ := base64.StdEncoding.DecodeString(enc)
			if string(got) != tc.want || ok != (tc.want != "") {
				t.Fatalf("password on the hub = %q (present %t), want %q", got, ok, tc.want)
			}
		})
	}
}

func TestOCIRegistryValidateCredentialVersions(t *testing.T) {
	base := func() ociRegistryModel {
		return ociRegistryModel{Username: types.StringValue("u"), PasswordWO: types.StringNull(), PasswordWOVersion: types.Int64Null(),
			AgentUsername: types.StringNull(), AgentPasswordWO: types.StringNull(), AgentPasswordWOVersion: types.Int64Null()}
	}
	cases := []struct {
		name    string
		edit    func(*ociRegistryModel)
		summary string // "" = valid
	}{
		{"both", func(m *ociRegistryModel) {
			m.PasswordWO, m.PasswordWOVersion = types.StringValue("p"), types.Int64Value(1)
		}, ""},
		{"neither", func(*ociRegistryModel) {}, ""},
		{"value without version", func(m *ociRegistryModel) { m.PasswordWO = types.StringValue("p") }, "Missing password_wo_version"},
		{"version without value", func(m *ociRegistryModel) { m.PasswordWOVersion = types.Int64Value(1) }, "Missing password_wo"},
		{"agent value without version", func(m *ociRegistryModel) {
			m.AgentUsername, m.AgentPasswordWO = types.StringValue("a"), types.StringValue("p")
		}, "Missing agent_password_wo_version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			tc.edit(&m)
			diags := validateOCIRegistry(context.Background(), &m)
			if tc.summary == "" {
				if diags.HasError() {
					t.Fatalf("want valid, got %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary() != tc.summary {
				t.Fatalf("diagnostics = %v, want one %q", diags, tc.summary)
			}
		})
	}
}

// known maps unknown to null: what the hub returns for a value that was not written.
func known(v types.String) types.String {
	if v.IsUnknown() {
		return types.StringNull()
	}
	return v
}

func TestOCIRegistryFlattenRejectsOtherSecrets(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"type": "Opaque", "data": map[string]any{}}}
	obj.SetNamespace("ws")
	obj.SetName("db-password")
	var m ociRegistryModel
	diags := flattenOCIRegistry(context.Background(), obj, &m)
	if !diags.HasError() || !strings.Contains(diags.Errors()[0].Detail(), `Secret ws/db-password has type "Opaque"`) {
		t.Fatalf("want a not-an-OCI-registry error, got %v", diags)
	}
}

func TestCheckPEMCertificates(t *testing.T) {
	cases := []struct{ name, in, wantErr string }{
		{"one certificate", testCA, ""},
		{"two certificates", testCA + testCA, ""},
		{"empty", "", "no PEM certificate found"},
		{"garbage", "hello", "no PEM certificate found"},
		{"key", "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n", `is a "EC PRIVATE KEY", not a CERTIFICATE`},
		{"corrupt certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "is not a valid X.509 certificate"},
		{"trailing text", testCA + "junk", "text after the last PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPEMCertificates(tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
