package provider

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			obj, diags := expandOCIRegistry(ctx, &tc.plan, &tc.config)
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
