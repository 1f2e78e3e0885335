package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

var _ datasource.DataSourceWithConfigure = &ociChainDataSource{}

func newOCIChainDataSource() datasource.DataSource {
	return &ociChainDataSource{hubDataSource{typeName: "oci_chain"}}
}

// ociChainDataSource resolves one cluster's route and registry chain on the hub.
type ociChainDataSource struct{ hubDataSource }

type ociChainModel struct {
	Workspace       types.String    `tfsdk:"workspace"`
	Cluster         types.String    `tfsdk:"cluster"`
	Route           types.String    `tfsdk:"route"`
	MatchedBy       types.String    `tfsdk:"matched_by"`
	Registries      []chainRegistry `tfsdk:"registries"`
	ReplicationWait types.String    `tfsdk:"replication_wait"`
	ResolvedBy      types.String    `tfsdk:"resolved_by"`
	Delivery        types.String    `tfsdk:"delivery"`
	WaitFor         types.String    `tfsdk:"wait_for_controller"`
	Unresolved      []unresolvedRef `tfsdk:"unresolved"`
}

// unresolvedRef is a registry of the route's chain whose reference names a label that does not
// resolve for the cluster.
type unresolvedRef struct {
	Name    types.String `tfsdk:"name"`
	Label   types.String `tfsdk:"label"`
	Reason  types.String `tfsdk:"reason"`
	Message types.String `tfsdk:"message"`
}

type chainRegistry struct {
	Name      types.String `tfsdk:"name"`
	Reference types.String `tfsdk:"reference"`
	Role      types.String `tfsdk:"role"`
	// Reachability and ProbedAt are the cluster's agent's last probe of the registry.
	Reachability types.String `tfsdk:"reachability"`
	ProbedAt     types.String `tfsdk:"probed_at"`
}

func (d *ociChainDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The route and registry chain one cluster pulls OCI artifacts through — the answer to \"where does cluster X pull from, and why?\".\n\n" +
			"When `fleet-controller hub` runs on the hub, this is what it delivered to the cluster, as it reports in the cluster's " +
			"ClusterOCIStorage object. That can differ from what the routes say now: when a route names a registry that does not exist, " +
			"for instance, the controller keeps the chain it delivered before, and `delivery` says so. Without the controller (or before " +
			"it has handled the cluster), the provider resolves the chain itself from the routes, registries and clusters on the hub. " +
			"`resolved_by` says which of the two you are looking at; either way no controller is needed to use this data source.",
		Attributes: map[string]schema.Attribute{
			"workspace":           schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "Workspace (hub namespace). Defaults to the provider's `workspace`."},
			"cluster":             schema.StringAttribute{Required: true, MarkdownDescription: "Name of the OCM ManagedCluster, a member of a ManagedClusterSet bound to the workspace."},
			"wait_for_controller": waitForControllerAttr("the workspace's routes (OCIStorageRoutes), and so on the clusters' delivered chains,"),
			"route": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The route the cluster's chain comes from; null when no route matches the cluster (it then has no chain)."},
			"matched_by": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The route's criterion that matched: `cluster_names`, `cluster_groups`, `cluster_selectors[<i>]` or `default`; null when unmatched."},
			"registries": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The chain, in the order the cluster tries it. When `resolved_by` is `controller` the names are those " +
					"delivered to the cluster; `reference` and `role` are always read from the workspace's registry Secrets as they are now.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Computed: true, MarkdownDescription: "Registry name."},
					"reference": schema.StringAttribute{Computed: true, MarkdownDescription: "`host[:port][/path]`, resolved for the cluster when the registry's reference names cluster labels " +
						"(`zot.{{ .labels.site }}.stores.internal` is `zot.berlin.stores.internal` for a cluster labelled `site = berlin`); null when the registry does not exist on the hub " +
						"(for instance, its Secret was deleted after the chain was delivered), or its reference no longer resolves for the cluster (see `unresolved`)."},
					"role": schema.StringAttribute{Computed: true, MarkdownDescription: "`source` or `mirror`; null when the registry does not exist on the hub."},
					"reachability": schema.StringAttribute{Computed: true, MarkdownDescription: "Whether the cluster reaches the registry, as its agent's " +
						"connectivity probe (`GET /v2/` with the agent's credentials and TLS settings) last reported it: `Reachable`, or the failure class " +
						"`Unauthorized`, `TLS` or `Unreachable`. Null until the agent reports, and when `resolved_by` is `provider`."},
					"probed_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When the agent last confirmed `reachability` (RFC 3339). " +
						"The agent probes every `--probe-interval` (2m) but reports only a change at once, and an unchanged result at least every " +
						"`--probe-refresh` (15m): so `probed_at` is at most that old while the agent runs."},
				}},
			},
			"unresolved": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The registries of the route's chain whose reference names a cluster label that does not resolve for this cluster, " +
					"which its chain therefore leaves out (as `fleet-controller hub` does, reporting `ReferencesResolved` False). Empty when every reference resolves.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":  schema.StringAttribute{Computed: true, MarkdownDescription: "Registry name."},
					"label": schema.StringAttribute{Computed: true, MarkdownDescription: "The label key of its reference that does not resolve."},
					"reason": schema.StringAttribute{Computed: true, MarkdownDescription: "`LabelMissing` (the cluster lacks the label), `LabelRefused` (its value would change the " +
						"reference's host, port or path shape, e.g. a `.` in the host) or `LabelForeign` (a cluster join of another workspace set it)."},
					"message": schema.StringAttribute{Computed: true, MarkdownDescription: "Why, naming the cluster, the registry and the label."},
				}},
			},
			"replication_wait": schema.StringAttribute{Computed: true,
				MarkdownDescription: "How long the cluster waits for a missing artifact at one registry before moving on, as spelled on the route (e.g. `10m`), " +
					"or as delivered (e.g. `1h0m0s`) when the controller delivered another value than the route has now; null when unmatched."},
			"resolved_by": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Where the values come from: `controller` when `fleet-controller hub` has reported the cluster's delivered chain " +
					"(a ClusterOCIStorage named after the cluster in the workspace namespace, with a `Ready` condition); `provider` when it has not — " +
					"the controller is not installed or has not handled the cluster yet — and the provider resolved the routes itself."},
			"delivery": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The controller's account of the delivery, the message of the ClusterOCIStorage's `Ready` condition: that the chain " +
					"is delivered in a ManifestWork the cluster's work agent applied; that the work is written and waits for the agent to apply it; " +
					"that the cluster does not report (`ClusterNotReporting`, naming since when); or for instance that the chain delivered before " +
					"stays in place because the route now names a registry that cannot be used. Null when `resolved_by` is `provider`."},
		},
	}
}

func (d *ociChainDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ociChainModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	ws := d.workspace(m.Workspace)
	d.awaitController(ctx, inventory.RouteKind, ws, "", m.WaitFor, &resp.Diagnostics, clusterStorageKind)
	inv, rep := d.resolve(ctx, ws, &resp.Diagnostics)
	if inv == nil {
		return
	}
	cluster := m.Cluster.ValueString()
	res, ok := rep.Resolution(cluster)
	if !ok {
		resp.Diagnostics.AddAttributeError(path.Root("cluster"), "Cluster not in workspace", notInWorkspace(cluster, inv))
		return
	}
	m.Workspace = types.StringValue(ws)
	m.Route, m.MatchedBy, m.ReplicationWait, m.Delivery = types.StringNull(), types.StringNull(), types.StringNull(), types.StringNull()
	m.ResolvedBy = types.StringValue(resolvedByProvider)
	var chain []string
	var reach []v1alpha1.RegistryReachability
	if st, ok := deliveries(ctx, d.env.Client.Live(), ws, &resp.Diagnostics)[cluster]; ok {
		m.ResolvedBy = types.StringValue(resolvedByController)
		m.Delivery = types.StringValue(readyCondition(st.Conditions).Message)
		m.Route, m.ReplicationWait = optionalString(st.Route), optionalString(sameWait(st.ReplicationWait, inv.Waits[st.Route]))
		if st.MatchedBy != "" {
			p, err := routing.ParseCRD(st.MatchedBy)
			if err != nil {
				resp.Diagnostics.AddWarning("Unexpected matchedBy on the hub",
					fmt.Sprintf("ClusterOCIStorage %s/%s: status.matchedBy: %v. matched_by shows it as written.", ws, cluster, err))
				m.MatchedBy = types.StringValue(st.MatchedBy)
			} else {
				m.MatchedBy = types.StringValue(p.String())
			}
		}
		chain, reach = st.Chain, st.Reachability
	} else if res.Matched() {
		m.Route = types.StringValue(res.Route)
		m.MatchedBy = types.StringValue(res.MatchedBy.String())
		m.ReplicationWait = types.StringValue(inv.Waits[res.Route])
		chain = res.Registries
	}
	// References are resolved for the cluster. As the controller does, a chain the provider
	// resolves leaves out the registries whose reference does not resolve for it; unresolved lists
	// them for the route the cluster resolves to now.
	cl, _ := inv.Cluster(cluster)
	var unresolved []routing.Unresolved
	if res.Matched() {
		_, unresolved = inv.Chain(cl, res.Registries)
		if m.ResolvedBy.ValueString() == resolvedByProvider {
			chain = slices.DeleteFunc(slices.Clone(chain), func(name string) bool {
				return slices.ContainsFunc(unresolved, func(u routing.Unresolved) bool { return u.Registry == name })
			})
		}
	}
	entries, _ := inv.Chain(cl, chain)
	resolved := map[string]string{}
	for _, e := range entries {
		resolved[e.Registry] = e.Reference
	}
	m.Registries = []chainRegistry{}
	for _, name := range chain {
		r := chainRegistry{Name: types.StringValue(name), Reference: types.StringNull(), Role: types.StringNull(),
			Reachability: types.StringNull(), ProbedAt: types.StringNull()}
		if reg, ok := inv.Registries[name]; ok {
			r.Role = types.StringValue(reg.Role)
			if ref, ok := resolved[name]; ok {
				r.Reference = types.StringValue(ref)
			}
		}
		if i := slices.IndexFunc(reach, func(p v1alpha1.RegistryReachability) bool { return p.Registry == name }); i >= 0 {
			r.Reachability = types.StringValue(reach[i].State)
			if reach[i].ProbedAt != nil {
				r.ProbedAt = types.StringValue(reach[i].ProbedAt.UTC().Format(time.RFC3339))
			}
		}
		m.Registries = append(m.Registries, r)
	}
	m.Unresolved = []unresolvedRef{}
	for _, u := range unresolved {
		m.Unresolved = append(m.Unresolved, unresolvedRef{Name: types.StringValue(u.Registry), Label: types.StringValue(u.Err.Label),
			Reason: types.StringValue(u.Err.Reason), Message: types.StringValue(u.String())})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// sameWait is the route's spelling of a delivered replication wait when both are the same
// duration (the controller writes Go's form, 10m0s for 10m), else the delivered one.
func sameWait(delivered, spelled string) string {
	d, err1 := time.ParseDuration(delivered)
	s, err2 := time.ParseDuration(spelled)
	if err1 == nil && err2 == nil && d == s {
		return spelled
	}
	return delivered
}

// optionalString is s, or null when it is empty.
func optionalString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func notInWorkspace(cluster string, inv *inventory.Workspace) string {
	if len(inv.Groups) == 0 {
		return fmt.Sprintf("Workspace %s routes no clusters: no ManagedClusterSet is bound to it. Bind one with a ManagedClusterSetBinding in namespace %s.", inv.Name, inv.Name)
	}
	return fmt.Sprintf("Cluster %q is not a member of the ManagedClusterSets bound to workspace %s (%s). Check the cluster's name, or add it to one of those sets.",
		cluster, inv.Name, strings.Join(inv.Groups, ", "))
}
