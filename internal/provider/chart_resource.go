package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

type chartModel struct {
	hubresource.Meta
	Repository     types.String `tfsdk:"repository"`
	Version        types.String `tfsdk:"version"`
	Digest         types.String `tfsdk:"digest"`
	ResolvedDigest types.String `tfsdk:"resolved_digest"`
	Apps           types.Int64  `tfsdk:"apps"`
}

// The patterns of FleetChartSpec, checked at plan.
var (
	chartRepositoryRE = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	chartVersionRE    = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]*$`)
	digestRE          = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

var newChartResource = hubresource.New[chartModel](chartKind)

// chartKind declares fleet_chart.
var chartKind = hubresource.Kind[chartModel]{
	TypeName: "chart",
	Object:   fleetChartKind,
	Description: "A Helm chart stored as an OCI artifact in the workspace's registries: a `FleetChart` (`fleet.umkim.io/v1alpha1`) " +
		"that `fleet_app`s install on clusters. Every cluster pulls `repository` through the registry chain its `fleet_oci_route` " +
		"gives, by `version` (the tag `helm push` wrote) or by `digest` (the manifest, verified on pull), not both: with a digest the version " +
		"would not be used, so the plan refuses the pair rather than ignore one.\n\n" +
		"`fleet-controller hub` (its apps reconciler) reports the digest a cluster pulled (`resolved_digest`) and how many apps of " +
		"the workspace install the chart (`apps`).",
	Attributes: map[string]schema.Attribute{
		"repository": schema.StringAttribute{Required: true,
			MarkdownDescription: "The chart's repository path inside the routed registries, e.g. `charts/hello`.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 255),
				stringvalidator.RegexMatches(chartRepositoryRE, "must be an OCI repository path: lowercase path components separated by '/'")}},
		"version": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The chart's version: the tag Helm pushed it under (a `+` of semver build metadata is written `_`, as `helm push` does). Give `version` or `digest`, not both.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 128),
				stringvalidator.RegexMatches(chartVersionRE, "must be an OCI tag: letters, digits, '_', '.' and '-', not starting with '.' or '-'")}},
		"digest": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Pins the chart's manifest (`sha256:<hex>`), which every cluster pulls by digest and verifies. Give `version` or `digest`, not both.",
			Validators:          []validator.String{stringvalidator.RegexMatches(digestRE, "must be sha256:<64 lowercase hex digits>")}},
		"resolved_digest": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The manifest digest a cluster pulled for this chart, once any did; null until then."},
		"apps": schema.Int64Attribute{Computed: true,
			MarkdownDescription: "How many FleetApps of the workspace install this chart, as `fleet-controller hub` reports; null until reported."},
	},
	Owned:    []string{"spec"},
	Validate: validateChart,
	Expand:   expandChart,
	Flatten:  flattenChart,
}

// validateChart checks that the chart is named by version or by digest, not both: a pull by
// digest never reads the tag, so the pair would leave the version silently unused.
func validateChart(_ context.Context, m *chartModel) diag.Diagnostics {
	var diags diag.Diagnostics
	switch {
	case m.Version.IsNull() && m.Digest.IsNull():
		diags.AddAttributeError(path.Root("version"), "Chart without version or digest",
			"Set version (the tag Helm pushed the chart under) or digest (sha256:<hex> of its manifest): the clusters need one to pull the chart.")
	case !m.Version.IsNull() && !m.Version.IsUnknown() && !m.Digest.IsNull() && !m.Digest.IsUnknown():
		diags.AddAttributeError(path.Root("digest"), "Chart with both version and digest",
			fmt.Sprintf("version = %q and digest = %q: the clusters pull a chart by digest when it has one and never read the version, so it would be ignored. "+
				"Keep digest to pin the manifest, or version to follow the tag; remove the other.", m.Version.ValueString(), m.Digest.ValueString()))
	}
	return diags
}

func expandChart(_ context.Context, req hubresource.ExpandRequest[chartModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	m := req.Plan
	spec := map[string]any{"repository": m.Repository.ValueString()}
	if !m.Version.IsNull() {
		spec["version"] = m.Version.ValueString()
	}
	if !m.Digest.IsNull() {
		spec["digest"] = m.Digest.ValueString()
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, nil
}

// flattenChart reads the chart's spec and status; a field the hub does not carry is null, so
// that an out-of-band change shows as drift.
func flattenChart(_ context.Context, obj *unstructured.Unstructured, m *chartModel) diag.Diagnostics {
	var diags diag.Diagnostics
	var c v1alpha1.FleetChart
	if !decodeHub(obj, &c, &diags) {
		return diags
	}
	m.Repository = types.StringValue(c.Spec.Repository)
	m.Version = stringOrNull(c.Spec.Version)
	m.Digest = stringOrNull(c.Spec.Digest)
	m.ResolvedDigest = stringOrNull(c.Status.Digest)
	m.Apps = types.Int64Null()
	if c.Status.ObservedGeneration > 0 {
		m.Apps = types.Int64Value(int64(c.Status.Apps))
	}
	return diags
}
