package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/internal/inventory"
)

var _ datasource.DataSourceWithConfigure = &ociRoutingDataSource{}

func newOCIRoutingDataSource() datasource.DataSource {
	return &ociRoutingDataSource{hubDataSource{typeName: "oci_routing"}}
}

// ociRoutingDataSource shows a workspace's whole routing: which clusters each route wins.
type ociRoutingDataSource struct{ hubDataSource }

type ociRoutingModel struct {
	Workspace         types.String   `tfsdk:"workspace"`
	ResolvedBy        types.String   `tfsdk:"resolved_by"`
	Routes            []routingRoute `tfsdk:"routes"`
	UnmatchedClusters []string       `tfsdk:"unmatched_clusters"`
	Conflicts         []string       `tfsdk:"conflicts"`
	WaitFor           types.String   `tfsdk:"wait_for_controller"`
}

type routingRoute struct {
	Name     types.String `tfsdk:"name"`
	Priority types.Int64  `tfsdk:"priority"`
	Default  types.Bool   `tfsdk:"default"`
	Clusters []string     `tfsdk:"clusters"`
	Shadowed types.Bool   `tfsdk:"shadowed"`
	Conflict types.String `tfsdk:"conflict"`
	// From the controller's status of the route.
	Ready           types.Bool   `tfsdk:"ready"`
	Status          types.String `tfsdk:"status"`
	MatchedClusters types.Int64  `tfsdk:"matched_clusters"`
}

func (d *ociRoutingDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The routing of a whole workspace as the hub resolves it: its routes in evaluation order with the " +
			"clusters each one wins, which routes are shadowed, which clusters no route matches, and any conflicts between routes.\n\n" +
			"The provider resolves the routing itself from the routes, registries and clusters on the hub, so this works without " +
			"`fleet-controller hub`. When the controller runs, each route also shows its health as the controller reports it in the " +
			"route's status (`ready`, `status`, `matched_clusters`), and `resolved_by` says whether the controller has caught up with every route.",
		Attributes: map[string]schema.Attribute{
			"workspace":           schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "Workspace (hub namespace). Defaults to the provider's `workspace`."},
			"wait_for_controller": waitForControllerAttr("the workspace's routes (OCIStorageRoutes)"),
			"resolved_by": schema.StringAttribute{Computed: true,
				MarkdownDescription: "`controller` when the workspace has routes and `fleet-controller hub` has reported on the current spec of every one " +
					"of them (each route's `status.observedGeneration` equals its `metadata.generation`, and the status has a `Ready` condition); " +
					"`provider` otherwise: the controller is not installed, or has not caught up with a change yet. Either way `clusters`, " +
					"`shadowed`, `conflict`, `unmatched_clusters` and `conflicts` are the provider's own resolution."},
			"routes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Routes in evaluation order: ascending priority, the default route last.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":     schema.StringAttribute{Computed: true, MarkdownDescription: "Route name."},
					"priority": schema.Int64Attribute{Computed: true, MarkdownDescription: "Route priority."},
					"default":  schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether it is the default route."},
					"clusters": schema.ListAttribute{Computed: true, ElementType: types.StringType,
						MarkdownDescription: "Clusters that resolve to this route, sorted, as the provider resolves them (also when `resolved_by` is " +
							"`controller`: the route's status names only a sample of its clusters)."},
					"shadowed": schema.BoolAttribute{Computed: true,
						MarkdownDescription: "True when the route selects clusters but an earlier route matches every one of them first."},
					"conflict": schema.StringAttribute{Computed: true,
						MarkdownDescription: "The conflict the route is part of (a priority it shares, or a second default route) and how it resolves; null when none."},
					"ready": schema.BoolAttribute{Computed: true,
						MarkdownDescription: "Whether the controller reports the route as working (its `Ready` condition is `True`): its spec is valid, every " +
							"registry of its chain exists, no other route shares its priority, and its chain is delivered to its clusters. Null when the " +
							"controller has not reported on the route's current spec (no controller, or it has not caught up yet)."},
					"status": schema.StringAttribute{Computed: true,
						MarkdownDescription: "The controller's `Ready` condition of the route as `<reason>: <message>`, what to look at when `ready` is false, " +
							"e.g. `RegistryNotFound: spec.registries names \"legacy\", which is not a registry Secret in this namespace; ...`. Null when `ready` is null."},
					"matched_clusters": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "How many clusters resolve to this route: the controller's count when `resolved_by` is `controller`, else the length of `clusters`."},
				}},
			},
			"unmatched_clusters": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Clusters of the workspace that no route matches: they have no chain."},
			"conflicts": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Rules the workspace's routes break for now — routes sharing a priority, several default routes — and how routing " +
					"resolves them: ties go to the route whose name sorts first. Empty when there are none."},
		},
	}
}

func (d *ociRoutingDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ociRoutingModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	ws := d.workspace(m.Workspace)
	d.awaitController(ctx, inventory.RouteKind, ws, "", m.WaitFor, &resp.Diagnostics, clusterStorageKind)
	inv, rep := d.resolve(ctx, ws, &resp.Diagnostics)
	if inv == nil {
		return
	}
	statuses, all := routeStatuses(ctx, d.env.Client.Live(), ws, &resp.Diagnostics)
	shadowed := map[string]bool{}
	for _, s := range rep.Shadowed {
		shadowed[s.Route] = true
	}
	m.Workspace = types.StringValue(ws)
	m.ResolvedBy = types.StringValue(resolvedByProvider)
	if all {
		m.ResolvedBy = types.StringValue(resolvedByController)
	}
	m.Routes = []routingRoute{}
	for _, r := range rep.Routes {
		rr := routingRoute{
			Name: types.StringValue(r.Route), Priority: types.Int64Value(r.Priority), Default: types.BoolValue(r.Default),
			Clusters: nonNil(r.Clusters), Shadowed: types.BoolValue(shadowed[r.Route]), Conflict: optionalString(r.Conflict),
			Ready: types.BoolNull(), Status: types.StringNull(), MatchedClusters: types.Int64Value(int64(len(r.Clusters))),
		}
		if st, ok := statuses[r.Route]; ok {
			ready := readyCondition(st.Conditions)
			rr.Ready = types.BoolValue(ready.Status == metav1.ConditionTrue)
			rr.Status = types.StringValue(ready.Reason + ": " + ready.Message)
			if all {
				rr.MatchedClusters = types.Int64Value(int64(st.MatchedClusters))
			}
		}
		m.Routes = append(m.Routes, rr)
	}
	m.UnmatchedClusters = nonNil(rep.Unmatched)
	m.Conflicts = []string{}
	for _, c := range rep.Conflicts {
		m.Conflicts = append(m.Conflicts, c.String())
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// nonNil makes an empty list render as [] rather than null.
func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
