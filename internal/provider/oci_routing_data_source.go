package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = &ociRoutingDataSource{}

func newOCIRoutingDataSource() datasource.DataSource {
	return &ociRoutingDataSource{hubDataSource{typeName: "oci_routing"}}
}

// ociRoutingDataSource shows a workspace's whole routing: which clusters each route wins.
type ociRoutingDataSource struct{ hubDataSource }

type ociRoutingModel struct {
	Workspace         types.String   `tfsdk:"workspace"`
	Routes            []routingRoute `tfsdk:"routes"`
	UnmatchedClusters []string       `tfsdk:"unmatched_clusters"`
	Conflicts         []string       `tfsdk:"conflicts"`
}

type routingRoute struct {
	Name     types.String `tfsdk:"name"`
	Priority types.Int64  `tfsdk:"priority"`
	Default  types.Bool   `tfsdk:"default"`
	Clusters []string     `tfsdk:"clusters"`
	Shadowed types.Bool   `tfsdk:"shadowed"`
	Conflict types.String `tfsdk:"conflict"`
}

func (d *ociRoutingDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The routing of a whole workspace as the hub resolves it: its routes in evaluation order with the " +
			"clusters each one wins, which routes are shadowed, which clusters no route matches, and any conflicts between routes.",
		Attributes: map[string]schema.Attribute{
			"workspace": schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "Workspace (hub namespace). Defaults to the provider's `workspace`."},
			"routes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Routes in evaluation order: ascending priority, the default route last.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":     schema.StringAttribute{Computed: true, MarkdownDescription: "Route name."},
					"priority": schema.Int64Attribute{Computed: true, MarkdownDescription: "Route priority."},
					"default":  schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether it is the default route."},
					"clusters": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Clusters that resolve to this route, sorted."},
					"shadowed": schema.BoolAttribute{Computed: true,
						MarkdownDescription: "True when the route selects clusters but an earlier route matches every one of them first."},
					"conflict": schema.StringAttribute{Computed: true,
						MarkdownDescription: "The conflict the route is part of (a priority it shares, or a second default route) and how it resolves; null when none."},
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
	inv, rep := d.resolve(ctx, ws, &resp.Diagnostics)
	if inv == nil {
		return
	}
	shadowed := map[string]bool{}
	for _, s := range rep.Shadowed {
		shadowed[s.Route] = true
	}
	m.Workspace = types.StringValue(ws)
	m.Routes = []routingRoute{}
	for _, r := range rep.Routes {
		m.Routes = append(m.Routes, routingRoute{
			Name: types.StringValue(r.Route), Priority: types.Int64Value(r.Priority), Default: types.BoolValue(r.Default),
			Clusters: nonNil(r.Clusters), Shadowed: types.BoolValue(shadowed[r.Route]), Conflict: types.StringNull(),
		})
		if r.Conflict != "" {
			m.Routes[len(m.Routes)-1].Conflict = types.StringValue(r.Conflict)
		}
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
