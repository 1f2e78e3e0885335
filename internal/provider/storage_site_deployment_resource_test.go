package provider

import (
	"context"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

func TestCheckQuantity(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"8G", true}, {"16Gi", true}, {"2048M", true}, {"1.5G", true}, {"0", true}, {"1e9", true},
		{"", false}, {"8 gigs", false}, {"8GB", false}, {"-8G", false}, {"+8G", false}, {"G", false}, {"8g", false},
	} {
		if err := checkQuantity(tc.in); (err == nil) != tc.ok {
			t.Errorf("checkQuantity(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

// TestStorageSiteDeploymentRoundTrip: what Expand writes, Flatten reads back as the same
// configuration, so that an applied configuration plans nothing; absent and false stay distinct.
func TestStorageSiteDeploymentRoundTrip(t *testing.T) {
	ctx := context.Background()
	vp := func(b bool) *bool { return &b }
	ip := func(i int64) *int64 { return &i }
	sp := func(s string) *string { return &s }
	for _, tc := range []struct {
		name     string
		discover *ssdDiscover
		sizing   *ssdSizing
		wantSpec map[string]any
	}{
		{name: "minimal", wantSpec: map[string]any{}},
		{
			name:     "empty discover and sizing",
			discover: &ssdDiscover{}, sizing: &ssdSizing{},
			wantSpec: map[string]any{"discover": map[string]any{}, "sizing": map[string]any{}},
		},
		{
			name:     "explicit false and empty lists",
			discover: &ssdDiscover{EnableControlPlaneNodes: vp(false), Workers: []string{}, NodeSelector: map[string]string{}},
			sizing:   &ssdSizing{EnableDriveFormat: vp(false), Stripe: &ssdStripe{ParityChunks: ip(0)}},
			wantSpec: map[string]any{"discover": map[string]any{"enableControlPlaneNodes": false, "workers": []any{}, "nodeSelector": map[string]any{}},
				"sizing": map[string]any{"enableDriveFormat": false, "stripe": map[string]any{"parityChunks": int64(0)}}},
		},
		{
			name:     "everything",
			discover: &ssdDiscover{EnableControlPlaneNodes: vp(true), Workers: []string{"w1", "w2"}, NodeSelector: map[string]string{"a": "b"}},
			sizing: &ssdSizing{Name: sp("c"), VCPUCount: ip(4), MinHugePagesSize: sp("8G"), MaxSubsystemCount: ip(64),
				EnableDriveFormat: vp(true), EnableJournalDevice: vp(true), Stripe: &ssdStripe{DataChunks: ip(2), ParityChunks: ip(1)}},
			wantSpec: map[string]any{"discover": map[string]any{"enableControlPlaneNodes": true, "workers": []any{"w1", "w2"}, "nodeSelector": map[string]any{"a": "b"}},
				"sizing": map[string]any{"name": "c", "vcpuCount": int64(4), "minHugePagesSize": "8G", "maxSubsystemCount": int64(64),
					"enableDriveFormat": true, "enableJournalDevice": true, "stripe": map[string]any{"dataChunks": int64(2), "parityChunks": int64(1)}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			m := storageSiteDeploymentModel{ssdFields: ssdFields{
				Cluster: types.StringValue("edge-1"), SiteNamespace: types.StringValue("simplyblock"), DraftName: types.StringValue("site-draft"),
				Approved: types.BoolValue(true), Discover: types.ObjectNull(ssdDiscoverTypes), Sizing: types.ObjectNull(ssdSizingTypes),
			}}
			if tc.discover != nil {
				m.Discover = objectFrom(ctx, ssdDiscoverTypes, *tc.discover, &diags)
			}
			if tc.sizing != nil {
				m.Sizing = objectFrom(ctx, ssdSizingTypes, *tc.sizing, &diags)
			}
			obj, d := expandStorageSiteDeployment(ctx, hubresource.ExpandRequest[storageSiteDeploymentModel]{Plan: &m, Config: &m})
			diags.Append(d...)
			want := map[string]any{"cluster": "edge-1", "siteNamespace": "simplyblock", "draftName": "site-draft", "approved": true}
			for k, v := range tc.wantSpec {
				want[k] = v
			}
			if got := obj.Object["spec"]; !equalJSON(got, want) {
				t.Errorf("spec = %v\nwant   %v", got, want)
			}
			var back ssdFields
			diags.Append(flattenStorageSiteDeployment(ctx, &unstructured.Unstructured{Object: jsonCopy(obj.Object)}, &back)...)
			if diags.HasError() {
				t.Fatal(diags)
			}
			for name, pair := range map[string][2]interface{ String() string }{
				"discover": {back.Discover, m.Discover}, "sizing": {back.Sizing, m.Sizing}, "cluster": {back.Cluster, m.Cluster},
				"approved": {back.Approved, m.Approved}, "draft_name": {back.DraftName, m.DraftName},
			} {
				if pair[0].String() != pair[1].String() {
					t.Errorf("%s read back as %s, want %s", name, pair[0], pair[1])
				}
			}
			if !back.Phase.IsNull() || !back.StorageCluster.IsNull() || !back.Draft.IsNull() {
				t.Errorf("no status, yet phase %s, draft %s, storage_cluster %s", back.Phase, back.Draft, back.StorageCluster)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	return jsonEqual(jsonCopy(map[string]any{"v": a}), jsonCopy(map[string]any{"v": b}))
}

func jsonEqual(a, b map[string]any) bool { return reflect.DeepEqual(a, b) }
