package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// TestRouteBounds: a route over a bound is a plan error naming the attribute and the bound; a
// route at every bound is valid.
func TestRouteBounds(t *testing.T) {
	ctx := context.Background()
	at := route("r", 2147483647, names("reg", 16)...)
	at.ClusterNames, at.ClusterGroups, at.ReplicationWait = strSet(names("c", 1000)...), strSet(names("g", 100)...), types.StringValue("24h")
	assertDiags(t, validateOCIRoute(ctx, &at), nil)

	for _, tc := range []struct {
		name string
		edit func(*ociRouteModel)
		want wantDiag
	}{
		{"a day and a second", func(m *ociRouteModel) { m.ReplicationWait = types.StringValue("24h0m1s") },
			wantDiag{path.Root("replication_wait"), "Invalid route", `route "r": replication_wait: must be at most 24h0m0s (a day), got 24h0m1s.`}},
		{"17 registries", func(m *ociRouteModel) { m.Registries = strList(names("reg", 17)...) },
			wantDiag{path.Root("registries"), "Invalid route", `route "r": registries: holds 17 registries; at most 16 are allowed.`}},
		{"1001 cluster names", func(m *ociRouteModel) { m.ClusterNames = strSet(names("c", 1001)...) },
			wantDiag{path.Root("cluster_names"), "Invalid route", `route "r": cluster_names: holds 1001 cluster names; at most 1000 are allowed.`}},
		{"101 cluster groups", func(m *ociRouteModel) { m.ClusterGroups = strSet(names("g", 101)...) },
			wantDiag{path.Root("cluster_groups"), "Invalid route", `route "r": cluster_groups: holds 101 cluster groups; at most 100 are allowed.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := route("r", 1, "reg")
			m.ClusterNames = strSet("a")
			tc.edit(&m)
			assertDiags(t, validateOCIRoute(ctx, &m), []wantDiag{tc.want})
		})
	}
}

func TestDurationValidatorMax(t *testing.T) {
	p := path.Root("request_timeout")
	for in, want := range map[string]string{"1h": "", "59m": "", "1h0m1s": `"1h0m1s" is longer than 1h0m0s: use at most 1h0m0s.`,
		"3000000h": `"3000000h" is longer than any duration can be (about 292 years): use a shorter one.`} {
		var resp validator.StringResponse
		durationValidator{max: maxRequestTimeout}.ValidateString(context.Background(), validator.StringRequest{Path: p, ConfigValue: types.StringValue(in)}, &resp)
		var w []wantDiag
		if want != "" {
			w = []wantDiag{{p, "Duration too long", want}}
		}
		assertDiags(t, resp.Diagnostics, w)
	}
}

// TestLargeInputWarnings: values and CA bundles over 256 KiB warn at plan, naming the field and
// the controller's 450 KiB work budget; smaller ones do not.
func TestLargeInputWarnings(t *testing.T) {
	warned := func(d diag.Diagnostics, attr string) bool {
		for _, w := range d.Warnings() {
			if wp, ok := w.(diag.DiagnosticWithPath); ok && wp.Path().Equal(path.Root(attr)) && strings.Contains(w.Detail(), "450 KiB") {
				return true
			}
		}
		return false
	}
	big := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("v", 257<<10))
	if d := validateApp(context.Background(), &appModel{Values: values(big)}); d.HasError() || !warned(d, "values") {
		t.Errorf("257 KiB of values: %v, want a warning on values", d)
	}
	if d := validateApp(context.Background(), &appModel{Values: values(`{"a":1}`)}); len(d) != 0 {
		t.Errorf("small values: %v", d)
	}
	ca := strings.Repeat("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", (257<<10)/50)
	if d := validateOCIRegistry(context.Background(), &ociRegistryModel{CACerts: types.StringValue(ca)}); d.HasError() || !warned(d, "ca_certs") {
		t.Errorf("257 KiB CA bundle: %v, want a warning on ca_certs", d)
	}
	if d := validateOCIRegistry(context.Background(), &ociRegistryModel{CACerts: types.StringValue(ca[:1000])}); len(d) != 0 {
		t.Errorf("small CA bundle: %v", d)
	}
}
