package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/fleetrules"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// appsInUse holds the provider instances (their *hubresource.Env) that configured a fleet_app or
// fleet_app_route: only those preload the lists the app and route checks read.
var appsInUse sync.Map

// preloadApps reads what the app and route checks read, so that the apply-time re-plan sees the
// hub as it was before this process wrote anything (hubresource.Env.Preload).
func preloadApps(ctx context.Context, env *hubresource.Env, l hub.Lister, ws string) {
	if _, ok := appsInUse.Load(env); !ok {
		return
	}
	for _, k := range []hub.Kind{fleetChartKind, fleetAppKind, fleetAppRouteKind, fleetClusterJoinKind, fleetSiteKind} {
		_, _ = l.List(ctx, k, ws, "")
	}
	_, _ = l.List(ctx, fleetAppRouteKind, "", "") // hosts are claimed across workspaces
	_, _ = l.List(ctx, siteClusterKind, "", "")
}

// waitForDeployed is the value of fleet_app's wait_for.
const waitForDeployed = "deployed"

type appModel struct {
	hubresource.Meta
	Chart        types.String `tfsdk:"chart"`
	Cluster      types.String `tfsdk:"cluster"`
	ReleaseName  types.String `tfsdk:"release_name"`
	Namespace    types.String `tfsdk:"namespace"`
	Values       valuesValue  `tfsdk:"values"`
	ValuesSecret types.Object `tfsdk:"values_secret"`
	Adopt        types.Bool   `tfsdk:"adopt"`
	RepairDrift  types.Bool   `tfsdk:"repair_drift"`
	Repairs      types.Int64  `tfsdk:"repairs"`
	WaitFor      types.String `tfsdk:"wait_for"`
	ForceDestroy types.Bool   `tfsdk:"force_destroy"`
	Phase        types.String `tfsdk:"phase"`
	Revision     types.Int64  `tfsdk:"revision"`
	Digest       types.String `tfsdk:"digest"`
	Registry     types.String `tfsdk:"registry"`
	Reason       types.String `tfsdk:"reason"`
	Message      types.String `tfsdk:"message"`
	Drift        types.Object `tfsdk:"drift"`
}

// appDrift is fleet_app's drift: what the cluster's agent found at its last drift check.
type appDrift struct {
	Count   types.Int64 `tfsdk:"count"`
	Objects []driftRef  `tfsdk:"objects"`
}

type driftRef struct {
	Kind      types.String `tfsdk:"kind"`
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
}

var (
	driftRefTypes = map[string]attr.Type{"kind": types.StringType, "namespace": types.StringType, "name": types.StringType}
	driftTypes    = map[string]attr.Type{"count": types.Int64Type, "objects": types.ListType{ElemType: types.ObjectType{AttrTypes: driftRefTypes}}}
)

// keepStatus are the plan modifiers of the app's string status attributes.
var keepStatus = []planmodifier.String{keepStatusOnSameSpec{}}

var secretKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

var newAppResource = withPreload[appModel, *appModel](&appsInUse, hubresource.New[appModel](appKind))

// appKind declares fleet_app.
var appKind = hubresource.Kind[appModel]{
	TypeName: "app",
	Object:   fleetAppKind,
	Description: "Installs a `fleet_chart` as a Helm release on one named cluster: a `FleetApp` (`fleet.umkim.io/v1alpha1`) in the " +
		"workspace. `fleet-controller hub` delivers the release request to `cluster` in a ManifestWork; the cluster's agent pulls the " +
		"chart through its routed registry chain and installs it with Helm, and the hub reports `phase`, `revision`, the `digest` and " +
		"`registry` it was pulled from.\n\n" +
		"**Destroying** the app uninstalls the release: destroy waits, up to the `delete` timeout (default 5 minutes), until the cluster confirms it. " +
		"When the cluster cannot (its ManagedCluster or namespace gone, or the cluster not available for `fleet-controller hub --orphan-after`, default 2m), " +
		"the app goes anyway and destroy warns with what may be left on the cluster (the release), as the Warning Event `Orphaned` does " +
		"(the controller guide's orphan policy). A destroy that times out says what it waits for; `force_destroy = true` stops the wait.\n\n" +
		"`values` is a JSON or YAML document (`jsonencode({...})` or `yamlencode({...})`); documents that mean the same values show no " +
		"diff. Values that must not be written in the configuration, such as passwords, stay in a Secret of the workspace that " +
		"`values_secret` names: they are merged over `values` on the cluster and never read by the provider.\n\n" +
		"**Drift.** The cluster's agent compares the release's objects, as Helm rendered them, with the cluster every few minutes " +
		"(`fleet-controller agent --drift-interval`, default 5m) and reports in `drift` the objects whose fields, as the chart sets them, were changed on the " +
		"cluster (`kubectl edit`, `kubectl scale`, ...) or that were deleted there; fields the chart does not set (what controllers and webhooks add) are not drift. " +
		"A plan warns when the release has drifted, naming the objects. An apply with `repair_drift = true` while it has drifted raises `repairs`, and the " +
		"agent upgrades the release once with the same chart and values: Helm's three-way merge restores every drifted object. Any change of the app " +
		"(a new chart version, new values) restores them too.\n\n" +
		"With `wait_for = \"deployed\"`, apply waits (up to the `create`/`update` timeout) until the hub reports the release Deployed, " +
		"and fails with the app's message when it becomes Failed or OwnedElsewhere.\n\n" +
		"The cluster's agent installs the release as the workspace's ServiceAccount on the cluster, with the role the cluster's administrator " +
		"gave workspaces (by default the namespaced kinds a typical chart creates, in the release's namespace), and never upgrades nor " +
		"uninstalls a release of that name and namespace that it did not install for this app, unless `adopt` is set.\n\n" +
		"Plan-time checks (warnings: another resource of the plan may create what is missing, and the app waits on the hub meanwhile): " +
		"`cluster` is not a ManagedCluster; it is in no ManagedClusterSet bound to the workspace (naming the sets that hold it: the " +
		"hub delivers nothing to it, `NotBound`, until a binding exists); no `fleet_cluster_join` joins it to a site (the hub delivers nothing to it, `NotJoined`, " +
		"until a join names it; a join of another workspace counts); its join exists but is not Ready yet (named, with its reason: the app is delivered all the same); " +
		"`chart` is not a FleetChart of the workspace.",
	Attributes: map[string]schema.Attribute{
		"chart": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the `fleet_chart` (FleetChart) in the same workspace.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(domainRE, "must be a FleetChart name")}},
		"cluster": schema.StringAttribute{Required: true,
			MarkdownDescription: "Name of the OCM ManagedCluster the release is installed on; it must be joined to a site (`fleet_cluster_join`, of any workspace): until then the hub delivers nothing to it (phase `Pending`, reason `NotJoined`). Changing it replaces the app.",
			Validators:          []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(domainRE, "must be a ManagedCluster name")},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"release_name": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The Helm release's name (at most 53 characters, Helm's limit); the app's `name` when unset, which must then fit too. Changing it replaces the app.",
			Validators:          []validator.String{stringvalidator.LengthBetween(1, 53), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg)},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"namespace": schema.StringAttribute{Required: true,
			MarkdownDescription: "Namespace on the cluster the release is installed in, created if missing. It must be the workspace's on the cluster: one the agent created for it, or one the cluster's administrator labelled `fleet.umkim.io/workspace=<workspace>`; any other (`kube-system`, another workspace's) fails the release. Changing it replaces the app.",
			Validators:          []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg)},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"values": schema.StringAttribute{Optional: true, Computed: true, CustomType: valuesType{},
			PlanModifiers: []planmodifier.String{keepEquivalentValues{}},
			MarkdownDescription: "Values for the chart: a JSON or YAML mapping, e.g. `jsonencode({ replicaCount = 2 })` or `yamlencode({...})`; they travel in the app's ManifestWork, which stays under 450 KiB (the plan warns from 256 KiB on). " +
				"Documents that parse to the same values are equal, so reformatting shows no diff; state holds what the hub returns."},
		"values_secret": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "A key of a Secret in the workspace holding more values (YAML or JSON), merged over `values`: for values that must not be in the configuration. Only the reference is written; the provider never reads the Secret.",
			Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the Secret.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 253)}},
				"key": schema.StringAttribute{Required: true, MarkdownDescription: "Key within the Secret.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(secretKeyRE, "must be a Secret key")}},
			}},
		"adopt": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Take over an existing Helm release of the same `release_name` and `namespace` on the cluster that the agent did not install for this app " +
				"(installed by hand with `helm install`, or for another app): the agent upgrades it with this app's chart and values and records the app as its owner, " +
				"so that destroying the app uninstalls it. Without it (the default) the agent never upgrades nor uninstalls such a release: it is left untouched and " +
				"`phase` is `OwnedElsewhere`, the `message` naming its owner. Defaults to `false`."},
		"repair_drift": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Repair drift: when the refreshed `drift` counts objects changed or deleted on the cluster, the plan raises `repairs` by one, and the apply " +
				"has the cluster's agent upgrade the release once with the same chart and values, which restores them (Helm's three-way merge). Nothing is planned " +
				"while the release has not drifted, so the setting may stay on; without it a drifted release gets a plan warning naming the objects."},
		"repairs": schema.Int64Attribute{Computed: true, PlanModifiers: []planmodifier.Int64{planRepairs{}},
			MarkdownDescription: "How many drift repairs applies with `repair_drift = true` asked for (the FleetApp's `spec.repairs`); each one is one upgrade of the release on the cluster."},
		"wait_for": schema.StringAttribute{Optional: true,
			MarkdownDescription: "`deployed`: make apply wait, up to the `create`/`update` timeout (default 5 minutes), until the hub reports the release `Deployed` " +
				"for the current spec and the chart's current generation (`status.observedGeneration` and `status.chartGeneration`); a release reported `Failed` fails the apply with the app's message. " +
				"A new chart version alone applies no `fleet_app`: set `wait_for` on the `fleet_chart` to wait for it. Unset, apply returns as soon as the hub has the app. " +
				"Waiting needs `fleet-controller hub` (its apps reconciler) and the cluster's agent.",
			Validators: []validator.String{stringvalidator.OneOf(waitForDeployed)}},
		"force_destroy": forceDestroyAttribute("the Helm release and what it installed"),
		"phase": schema.StringAttribute{Computed: true, PlanModifiers: keepStatus,
			MarkdownDescription: "Where the release stands: `Pending`, `Pulling`, `WaitingForArtifact`, `Installing`, `Deployed`, `Failed` or `OwnedElsewhere` (a release of that name and namespace that the agent did not install for this app is on the cluster: see `adopt`); null until reported."},
		"revision": schema.Int64Attribute{Computed: true, PlanModifiers: []planmodifier.Int64{keepStatusOnSameSpec{}}, MarkdownDescription: "The Helm release's revision: 1 after the install, one more per upgrade; null until reported."},
		"digest":   schema.StringAttribute{Computed: true, PlanModifiers: keepStatus, MarkdownDescription: "Digest of the chart the cluster pulled."},
		"registry": schema.StringAttribute{Computed: true, PlanModifiers: keepStatus, MarkdownDescription: "Registry that served the chart, or the one the pull waits on or failed at last."},
		"reason":   schema.StringAttribute{Computed: true, PlanModifiers: keepStatus, MarkdownDescription: "The pull's failure class (`Unauthorized`, `TLS`, `Unreachable`, `NotFound`, `IntegrityMismatch`) when not pulled."},
		"message":  schema.StringAttribute{Computed: true, PlanModifiers: keepStatus, MarkdownDescription: "What the release waits for, or why it failed."},
		"drift": schema.SingleNestedAttribute{Computed: true, PlanModifiers: []planmodifier.Object{keepStatusOnSameSpec{}},
			MarkdownDescription: "What the cluster's agent found at its last drift check of the release deployed for the app's current spec; null until it reported one " +
				"(and while an upgrade is under way).",
			Attributes: map[string]schema.Attribute{
				"count": schema.Int64Attribute{Computed: true, MarkdownDescription: "How many objects of the release were changed or deleted on the cluster; 0 when none."},
				"objects": schema.ListNestedAttribute{Computed: true,
					MarkdownDescription: "The drifted objects, by kind, namespace and name: the first ones (at most 10, fewer for long names, to fit OCM's status feedback).",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"kind":      schema.StringAttribute{Computed: true, MarkdownDescription: "Kind, e.g. `Deployment`."},
						"namespace": schema.StringAttribute{Computed: true, MarkdownDescription: "Namespace; null for a cluster-scoped object."},
						"name":      schema.StringAttribute{Computed: true, MarkdownDescription: "Name."},
					}}},
			}},
	},
	Owned:        []string{"spec"},
	Validate:     validateApp,
	Expand:       expandApp,
	Flatten:      flattenApp,
	CheckPlan:    checkAppPlan,
	Await:        awaitApp,
	ForceDestroy: func(m *appModel) bool { return m.ForceDestroy.ValueBool() },
}

// helmReleaseNameMax is the longest release name Helm installs.
const helmReleaseNameMax = 53

// validateApp checks that the release name (the app's name when release_name is unset) is one
// Helm installs, and that values, when known, is a mapping.
func validateApp(_ context.Context, m *appModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.ReleaseName.IsNull() && !m.Name.IsNull() && !m.Name.IsUnknown() && len(m.Name.ValueString()) > helmReleaseNameMax {
		diags.AddAttributeError(path.Root("name"), "Release name too long",
			fmt.Sprintf("name = %q (%d characters) is also the Helm release's name, as release_name is unset, and Helm refuses release names over %d characters. "+
				"Set release_name to a name of at most %d characters, or shorten name.", m.Name.ValueString(), len(m.Name.ValueString()), helmReleaseNameMax, helmReleaseNameMax))
	}
	if m.Values.IsNull() || m.Values.IsUnknown() {
		return diags
	}
	values, err := parseValues(m.Values.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("values"), "Invalid values", err.Error()+".")
		return diags
	}
	if raw, err := json.Marshal(values); err == nil && len(raw) > work.PlanWarning {
		diags.AddAttributeWarning(path.Root("values"), "Large values",
			fmt.Sprintf("values encode to %s. They travel to the cluster in the app's ManifestWork, which the controller does not write over %s (OCM refuses works over %s): "+
				"keep values small, e.g. move large files into the chart or a ConfigMap the chart reads.", work.KiB(len(raw)), work.KiB(work.Budget), work.KiB(work.Limit)))
	}
	return diags
}

func expandApp(ctx context.Context, req hubresource.ExpandRequest[appModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	m := req.Plan
	spec := map[string]any{"chart": m.Chart.ValueString(), "cluster": m.Cluster.ValueString(), "namespace": m.Namespace.ValueString()}
	if !m.ReleaseName.IsNull() {
		spec["releaseName"] = m.ReleaseName.ValueString()
	}
	if !m.Values.IsNull() {
		values, err := parseValues(m.Values.ValueString())
		if err != nil {
			diags.AddAttributeError(path.Root("values"), "Invalid values", err.Error()+".")
			return nil, diags
		}
		spec["values"] = values
	}
	if m.Adopt.ValueBool() {
		spec["adopt"] = true // false is the field's absence
	}
	if n := m.Repairs.ValueInt64(); n > 0 {
		spec["repairs"] = n // as 0
	}
	if !m.ValuesSecret.IsNull() {
		var ref siteSecretRef
		diags.Append(m.ValuesSecret.As(ctx, &ref, basetypes.ObjectAsOptions{})...)
		spec["valuesSecretRef"] = map[string]any{"name": ref.Name, "key": ref.Key}
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, diags
}

// flattenApp reads the app's spec and status; a field the hub does not carry is null, so that an
// out-of-band change shows as drift. values is the hub's document (see valuesType).
func flattenApp(ctx context.Context, obj *unstructured.Unstructured, m *appModel) diag.Diagnostics {
	var diags diag.Diagnostics
	var a v1alpha1.FleetApp
	if !decodeHub(obj, &a, &diags) {
		return diags
	}
	m.Chart = types.StringValue(a.Spec.Chart)
	m.Cluster = types.StringValue(a.Spec.Cluster)
	m.ReleaseName = stringOrNull(a.Spec.ReleaseName)
	m.Namespace = types.StringValue(a.Spec.Namespace)
	m.Adopt = types.BoolValue(a.Spec.Adopt)
	values, _, _ := unstructured.NestedMap(obj.Object, "spec", "values")
	v, err := valuesOf(values)
	if err != nil {
		diags.AddError("Unreadable FleetApp values on the hub", fmt.Sprintf("%s/%s: %v", obj.GetNamespace(), obj.GetName(), err))
	}
	m.Values = v
	m.ValuesSecret = types.ObjectNull(siteSecretTypes)
	if r := a.Spec.ValuesSecretRef; r != nil {
		m.ValuesSecret = objectFrom(ctx, siteSecretTypes, siteSecretRef{Name: r.Name, Key: r.Key}, &diags)
	}
	s := a.Status
	m.Phase, m.Digest, m.Registry, m.Reason, m.Message = stringOrNull(string(s.Phase)), stringOrNull(s.Digest), stringOrNull(s.Registry), stringOrNull(s.Reason), stringOrNull(s.Message)
	m.Revision = types.Int64Null()
	if s.Revision > 0 {
		m.Revision = types.Int64Value(int64(s.Revision))
	}
	m.Repairs = types.Int64Value(a.Spec.Repairs)
	m.Drift = types.ObjectNull(driftTypes)
	// A finding for an older spec (the controller has not seen this one yet) is none.
	if d := s.Drift; d != nil && s.ObservedGeneration == a.Generation {
		drift := appDrift{Count: types.Int64Value(int64(d.Count)), Objects: make([]driftRef, len(d.Objects))}
		for i, o := range d.Objects {
			drift.Objects[i] = driftRef{Kind: types.StringValue(o.Kind), Namespace: stringOrNull(o.Namespace), Name: types.StringValue(o.Name)}
		}
		m.Drift = objectFrom(ctx, driftTypes, drift, &diags)
	}
	return diags
}

// checkAppPlan checks the app against the hub as the plan began. Every finding is a warning:
// ManagedClusters are registered by OCM or made by other configurations, and a join or chart
// missing or not Ready may be created or fixed by a fleet_cluster_join or fleet_chart of this
// plan; the app waits on the hub meanwhile. Only what the change touches is checked: the cluster
// when new, the chart when new or changed.
func checkAppPlan(ctx context.Context, c hubresource.PlanCheck[appModel]) diag.Diagnostics {
	var diags diag.Diagnostics
	p := c.Plan
	if p == nil {
		return diags
	}
	id := c.Workspace + "/" + p.Name.ValueString()
	isNew := c.Prior == nil || c.Replace || !p.Cluster.Equal(c.Prior.Cluster)
	if !isNew {
		checkAppDrift(ctx, id, p, c.Prior, &diags)
	}
	if !p.Cluster.IsUnknown() && isNew {
		checkAppCluster(ctx, c, id, p.Cluster.ValueString(), &diags)
	}
	if !p.Chart.IsUnknown() && (isNew || !p.Chart.Equal(c.Prior.Chart)) {
		chart := p.Chart.ValueString()
		charts, err := c.Hub.List(ctx, fleetChartKind, c.Workspace, "")
		switch {
		case err != nil:
			diags.AddWarning("Chart not checked", fmt.Sprintf("Could not list the FleetCharts of workspace %s: %v.", c.Workspace, c.Env.CheckErr(ctx, err)))
		case !hasName(charts, chart) && !c.Env.Planned(fleetChartKind, c.Workspace, chart):
			diags.AddAttributeWarning(path.Root("chart"), "Chart not on the hub",
				fmt.Sprintf("FleetApp %s installs chart %q, which is not a FleetChart of workspace %s on the hub, and no fleet_chart of this configuration planned before the app creates it. "+
					"If one does, refer to it as fleet_chart.<label>.name, so that Terraform creates it first; otherwise correct the name, or create the chart. "+
					"Until it exists the app waits (phase Pending).", id, chart, c.Workspace))
		}
	}
	return diags
}

// checkAppDrift warns when the release of the app's prior state has drifted on its cluster
// and this plan does not upgrade it (a repair, or any change of the app's spec, restores it).
func checkAppDrift(ctx context.Context, id string, plan, prior *appModel, diags *diag.Diagnostics) {
	drift, ok := driftOf(ctx, prior.Drift)
	if !ok || drift.Count.ValueInt64() == 0 || !plan.Repairs.Equal(prior.Repairs) || !sameSpec(ctx, plan, prior) {
		return
	}
	names := make([]string, len(drift.Objects))
	for i, o := range drift.Objects {
		names[i] = v1alpha1.ObjectRef{Kind: o.Kind.ValueString(), Namespace: o.Namespace.ValueString(), Name: o.Name.ValueString()}.String()
	}
	listed := strings.Join(names, ", ")
	switch more := int(drift.Count.ValueInt64()) - len(names); {
	case len(names) == 0:
		listed = "not listed, as the cluster's work agent returns no list feedback (it needs OCM's RawFeedbackJsonString feature gate)"
	case more > 0:
		listed += fmt.Sprintf(" and %d more", more)
	}
	release := prior.ReleaseName.ValueString()
	if release == "" {
		release = prior.Name.ValueString()
	}
	diags.AddAttributeWarning(path.Root("drift"), "Release drifted on the cluster",
		fmt.Sprintf("FleetApp %s: %d object(s) of Helm release %s in namespace %s on cluster %q were changed or deleted on the cluster since Helm deployed them: %s. "+
			"Apply with repair_drift = true to have the cluster's agent upgrade the release with the same chart and values, which restores them; "+
			"if the change on the cluster is wanted, make it in the chart or the app's values instead.",
			id, drift.Count.ValueInt64(), release, prior.Namespace.ValueString(), prior.Cluster.ValueString(), listed))
}

// driftOf decodes a drift attribute; ok is false when it is null or unknown.
func driftOf(ctx context.Context, v types.Object) (d appDrift, ok bool) {
	if v.IsNull() || v.IsUnknown() {
		return d, false
	}
	return d, !v.As(ctx, &d, basetypes.ObjectAsOptions{}).HasError()
}

// repairPlanned tells whether a plan of configuration c over state s repairs the release's
// drift: repair_drift is set and the state's drift counts objects.
func repairPlanned(ctx context.Context, c, s *appModel) bool {
	d, ok := driftOf(ctx, s.Drift)
	return c.RepairDrift.ValueBool() && ok && d.Count.ValueInt64() > 0
}

// planRepairs plans repairs: 0 on create, the state's plus one when the plan repairs the
// release's drift (repairPlanned), else the state's.
type planRepairs struct{}

func (planRepairs) Description(context.Context) string {
	return "Raises the repair count by one when repair_drift is set and the release has drifted."
}

func (m planRepairs) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (planRepairs) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if req.State.Raw.IsNull() {
		resp.PlanValue = types.Int64Value(0)
		return
	}
	var c, s appModel
	if req.Config.Get(ctx, &c).HasError() || req.State.Get(ctx, &s).HasError() {
		return
	}
	n := req.StateValue.ValueInt64()
	if repairPlanned(ctx, &c, &s) {
		n++
	}
	resp.PlanValue = types.Int64Value(n)
}

// checkAppCluster warns when the app's cluster is no ManagedCluster, is not joined to a site (the
// app then waits on the hub), or its join is not Ready (the app is delivered; its routes need the
// join). A cluster joined by another workspace's join is joined: the app is delivered.
func checkAppCluster(ctx context.Context, c hubresource.PlanCheck[appModel], id, cluster string, diags *diag.Diagnostics) {
	clusters, err := c.Hub.List(ctx, siteClusterKind, "", "")
	switch {
	case err != nil:
		diags.AddWarning("Cluster not checked", fmt.Sprintf("Could not list the hub's ManagedClusters to check that %q is one: %v.", cluster, c.Env.CheckErr(ctx, err)))
		return
	case !hasName(clusters, cluster):
		diags.AddAttributeWarning(path.Root("cluster"), "Cluster not on the hub",
			fmt.Sprintf("FleetApp %s names cluster %q, which is not a ManagedCluster on the hub. The app is written but waits (phase Pending) until a cluster of that name registers; "+
				"ManagedClusters are registered by OCM or created by other configurations, not by this provider. If the name is a typo, correct it.", id, cluster))
		return
	}
	if !checkClusterBound(ctx, c, fmt.Sprintf("FleetApp %s installs on cluster %q", id, cluster), path.Root("cluster"), cluster, "delivers no release to it", diags) {
		return
	}
	joins, err := c.Hub.List(ctx, fleetClusterJoinKind, c.Workspace, "")
	if err != nil {
		diags.AddWarning("Cluster join not checked", fmt.Sprintf("Could not list the FleetClusterJoins of workspace %s: %v.", c.Workspace, c.Env.CheckErr(ctx, err)))
		return
	}
	join, elsewhere := joinOfCluster(clusters, joins, c.Workspace, cluster)
	if elsewhere != "" {
		return // joined by another workspace's join: the app is delivered; its routes' plans say what they need
	}
	if join == nil {
		for _, j := range hubresource.PlannedModels[clusterJoinModel](c.Env, fleetClusterJoinKind, c.Workspace) {
			if j.Cluster.ValueString() == cluster {
				return // a fleet_cluster_join of this plan, planned before the app, joins it
			}
		}
		diags.AddAttributeWarning(path.Root("cluster"), "Cluster not joined",
			fmt.Sprintf("Cluster %q of FleetApp %s is not joined to a site: no FleetClusterJoin of workspace %s names it, and no fleet_cluster_join of this configuration "+
				"planned before the app joins it. If one does, set the app's cluster to fleet_cluster_join.<label>.cluster, so that Terraform joins it first; otherwise join it. "+
				"Until it is joined the app waits (phase Pending, reason NotJoined, nothing delivered to the cluster).", cluster, id, c.Workspace))
		return
	}
	var j v1alpha1.FleetClusterJoin
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(join.Object, &j); err != nil {
		diags.AddWarning("Cluster join not checked", fmt.Sprintf("FleetClusterJoin %s/%s on the hub is unreadable: %v.", c.Workspace, join.GetName(), err))
		return
	}
	if ready := apimeta.FindStatusCondition(j.Status.Conditions, v1alpha1.ReadyCondition); ready == nil || ready.Status != "True" {
		reason := "no status reported yet"
		if ready != nil {
			reason = ready.Reason
			if ready.Message != "" {
				reason += ": " + ready.Message
			}
		}
		diags.AddAttributeWarning(path.Root("cluster"), "Cluster join not Ready",
			fmt.Sprintf("Cluster %q of FleetApp %s is joined by FleetClusterJoin %s/%s, which exists but is not Ready yet (%s). The app is delivered all the same (its release needs the join, not its readiness); "+
				"what the join waits for concerns the app's routes, and a fleet_cluster_join or fleet_site of this plan may fix it.", cluster, id, c.Workspace, join.GetName(), reason))
	}
}

// joinOfCluster is the join of joins (the workspace's) that counts for cluster by
// fleetrules.JoinOf, the reconcilers' rule, given the hub's ManagedClusters (for the cluster's
// joined-by annotation). nil when none does; elsewhere is then the join of another workspace
// that the annotation says holds the cluster, if any.
func joinOfCluster(clusters, joins []unstructured.Unstructured, ws, cluster string) (join *unstructured.Unstructured, elsewhere string) {
	var owner string
	if mc := byName(clusters, cluster); mc != nil {
		owner = mc.GetAnnotations()[v1alpha1.JoinedByAnnotation]
	}
	if owner != "" && !strings.HasPrefix(owner, ws+"/") {
		return nil, owner
	}
	typed := make([]v1alpha1.FleetClusterJoin, 0, len(joins))
	for i := range joins {
		var j v1alpha1.FleetClusterJoin
		if runtime.DefaultUnstructuredConverter.FromUnstructured(joins[i].Object, &j) == nil {
			typed = append(typed, j)
		}
	}
	if j := fleetrules.JoinOf(cluster, owner, typed); j != nil {
		return byName(joins, j.Name), ""
	}
	return nil, ""
}

// awaitApp waits, when wait_for says so, until the hub reports the app Deployed (or Failed, or
// OwnedElsewhere) for the change this apply wrote: the app's generation and its chart's, which a
// fleet_chart of the same apply may have changed just before.
func awaitApp(ctx context.Context, c *hub.Client, applied *unstructured.Unstructured, m *appModel) (*unstructured.Unstructured, diag.Diagnostics) {
	if m.WaitFor.ValueString() != waitForDeployed {
		return nil, nil
	}
	w := appWait
	w.current = func(obj *unstructured.Unstructured) bool {
		chart, err := c.Get(ctx, fleetChartKind, obj.GetNamespace(), m.Chart.ValueString())
		return err == nil && appCurrent(obj, chart.GetGeneration())
	}
	return awaitPhase(ctx, c, applied, w)
}

// appWait is what a wait for apps to be Deployed waits for.
var appWait = phaseWait{kind: fleetAppKind, want: string(v1alpha1.AppDeployed),
	done: []string{string(v1alpha1.AppDeployed)}, failed: []string{string(v1alpha1.AppFailed), string(v1alpha1.AppOwnedElsewhere)}, on: onCluster,
	reporter: "`fleet-controller hub` (its apps reconciler) must run on the hub and the cluster's agent must report the release."}

// appCurrent tells whether an app's status describes its spec's generation and its chart's
// generation chartGeneration.
func appCurrent(app *unstructured.Unstructured, chartGeneration int64) bool {
	observed, _, _ := unstructured.NestedInt64(app.Object, "status", "chartGeneration")
	return observedCurrent(app) && observed >= chartGeneration
}

// keepStatusOnSameSpec plans a status attribute as in state when the configuration differs from
// the state only in how values is written: the framework marks computed attributes unknown as
// soon as the configuration differs from the state, which would plan a change for a reformatted
// document that keepEquivalentValues plans as none.
type keepStatusOnSameSpec struct{}

func (keepStatusOnSameSpec) Description(context.Context) string {
	return "Keeps the reported status when nothing but the formatting of values changes."
}

func (m keepStatusOnSameSpec) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (keepStatusOnSameSpec) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.PlanValue.IsUnknown() && sameAppSpec(ctx, req.Config, req.State) {
		resp.PlanValue = req.StateValue
	}
}

func (keepStatusOnSameSpec) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if req.PlanValue.IsUnknown() && sameAppSpec(ctx, req.Config, req.State) {
		resp.PlanValue = req.StateValue
	}
}

func (keepStatusOnSameSpec) PlanModifyObject(ctx context.Context, req planmodifier.ObjectRequest, resp *planmodifier.ObjectResponse) {
	if req.PlanValue.IsUnknown() && sameAppSpec(ctx, req.Config, req.State) {
		resp.PlanValue = req.StateValue
	}
}

// sameAppSpec tells whether the configuration asks for what the state holds, values compared by
// meaning, and repairs no drift: the plan then changes nothing on the hub.
func sameAppSpec(ctx context.Context, config tfsdk.Config, state tfsdk.State) bool {
	if state.Raw.IsNull() {
		return false
	}
	var c, s appModel
	if config.Get(ctx, &c).HasError() || state.Get(ctx, &s).HasError() {
		return false
	}
	return sameSpec(ctx, &c, &s) && c.WaitFor.Equal(s.WaitFor) && c.Timeouts.Equal(s.Timeouts) && !repairPlanned(ctx, &c, &s)
}

// sameSpec tells whether a (a configuration or a plan) asks for the FleetApp spec the state s
// holds, values compared by meaning, repairs aside.
func sameSpec(ctx context.Context, a, s *appModel) bool {
	sameValues := a.Values.IsNull() && s.Values.IsNull()
	if !a.Values.IsNull() && !a.Values.IsUnknown() && !s.Values.IsNull() {
		sameValues, _ = s.Values.StringSemanticEquals(ctx, a.Values)
	}
	return sameValues && (a.Workspace.IsNull() || a.Workspace.Equal(s.Workspace)) && a.Name.Equal(s.Name) && a.Chart.Equal(s.Chart) &&
		a.Cluster.Equal(s.Cluster) && a.ReleaseName.Equal(s.ReleaseName) && a.Namespace.Equal(s.Namespace) && a.ValuesSecret.Equal(s.ValuesSecret) &&
		(a.Adopt.IsNull() && !s.Adopt.ValueBool() || a.Adopt.Equal(s.Adopt))
}

// forceDestroyAttribute is the force_destroy of a resource whose object's deletion waits for its
// cluster (hubresource.Kind.ForceDestroy); left is what may then be left on the cluster.
func forceDestroyAttribute(left string) schema.BoolAttribute {
	return schema.BoolAttribute{Optional: true,
		MarkdownDescription: "Destroy without waiting for the cluster: just before deleting the object the provider sets the annotation `" + hub.OrphanOnDeleteAnnotation +
			"`, and `fleet-controller hub` deletes its ManifestWork on the hub and lets it go at once, without the cluster's confirmation. " +
			"Use it for a cluster that is offline or gone for good: " + left + " may be left on the cluster (destroy warns, naming them), to be removed there " +
			"if the cluster comes back. Like every setting, it takes effect from state: set it and apply before the destroy that needs it. Unset or `false`, " +
			"destroy waits for the cluster, up to the `delete` timeout, except when the controller's orphan policy lets the object go (see the controller guide). " +
			"Stored in state only; nothing on the hub changes until destroy."}
}
