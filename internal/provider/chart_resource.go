package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

type chartModel struct {
	hubresource.Meta
	Repository     types.String `tfsdk:"repository"`
	Version        types.String `tfsdk:"version"`
	Digest         types.String `tfsdk:"digest"`
	ResolvedDigest types.String `tfsdk:"resolved_digest"`
	Apps           types.Int64  `tfsdk:"apps"`
	WaitFor        types.String `tfsdk:"wait_for"`
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
		"the workspace install the chart (`apps`).\n\n" +
		"A new `version` or `digest` changes the chart, not its apps: Terraform applies no `fleet_app` for it, so an app's `wait_for` does " +
		"not see it. With `wait_for = \"deployed\"` here, apply waits (up to the `create`/`update` timeout) until every app of the workspace " +
		"installing the chart reports its release Deployed for this chart's generation (the chart the apply wrote), and fails with the app's " +
		"message when one becomes Failed or OwnedElsewhere.",
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
		"wait_for": schema.StringAttribute{Optional: true,
			MarkdownDescription: "`deployed`: make apply wait, up to the `create`/`update` timeout (default 5 minutes), until every app of the workspace that " +
				"installs the chart reports its release `Deployed` for the chart as this apply wrote it (`status.chartGeneration` of each FleetApp); an app " +
				"reported `Failed` or `OwnedElsewhere` fails the apply with its message. Unset, apply returns as soon as the hub has the chart. " +
				"Waiting needs `fleet-controller hub` (its apps reconciler) and the clusters' agents.",
			Validators: []validator.String{stringvalidator.OneOf(waitForDeployed)}},
	},
	Owned:    []string{"spec"},
	Validate: validateChart,
	Expand:   expandChart,
	Flatten:  flattenChart,
	Await:    awaitChart,
}

// awaitChart waits, when wait_for says so, until every app of the workspace naming the chart
// reports Deployed for the chart's generation this apply wrote (and its own), then returns the
// chart as the hub has it then, its resolved digest that of the apps' pulls.
func awaitChart(ctx context.Context, c *hub.Client, applied *unstructured.Unstructured, m *chartModel) (*unstructured.Unstructured, diag.Diagnostics) {
	if m.WaitFor.ValueString() != waitForDeployed {
		return nil, nil
	}
	ns, name, generation := applied.GetNamespace(), applied.GetName(), applied.GetGeneration()
	w := appWait
	w.current = func(obj *unstructured.Unstructured) bool { return appCurrent(obj, generation) }
	diags := awaitPhases(ctx, w, func(ctx context.Context) ([]unstructured.Unstructured, error) {
		c.Refresh(fleetAppKind)
		apps, err := c.List(ctx, fleetAppKind, ns, "")
		var of []unstructured.Unstructured
		for _, a := range apps {
			if chart, _, _ := unstructured.NestedString(a.Object, "spec", "chart"); chart == name && a.GetDeletionTimestamp() == nil {
				of = append(of, a)
			}
		}
		return of, err
	})
	if diags.HasError() {
		return nil, diags
	}
	// The chart's status takes the digest the apps pulled (the first by name) right after them:
	// wait for it too, where a controller reports on the chart at all.
	var last *unstructured.Unstructured
	_ = wait.PollUntilContextCancel(ctx, awaitInterval, true, func(ctx context.Context) (bool, error) {
		chart, err := c.Get(ctx, fleetChartKind, ns, name)
		if err != nil {
			return false, nil //nolint:nilerr // transient: the deadline says so
		}
		last = chart
		c.Refresh(fleetAppKind)
		apps, err := c.List(ctx, fleetAppKind, ns, "")
		if err != nil {
			return false, nil //nolint:nilerr // transient: the deadline says so
		}
		resolved, _, _ := unstructured.NestedString(chart.Object, "status", "digest")
		observed, _, _ := unstructured.NestedInt64(chart.Object, "status", "observedGeneration")
		if observed == 0 {
			return true, nil // no controller reports on charts
		}
		slices.SortFunc(apps, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
		for _, a := range apps {
			chartName, _, _ := unstructured.NestedString(a.Object, "spec", "chart")
			if digest, _, _ := unstructured.NestedString(a.Object, "status", "digest"); chartName == name && digest != "" {
				return observed >= generation && resolved == digest, nil
			}
		}
		return observed >= generation, nil
	})
	return last, diags
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
