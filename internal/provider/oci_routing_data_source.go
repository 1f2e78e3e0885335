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
}

type routingRoute struct {
	Name     types.String `tfsdk:"name"`
	Priority types.Int64  `tfsdk:"priority"`
	Default  types.Bool   `tfsdk:"default"`
	Clusters []string     `tfsdk:"clusters"`
	Shadowed types.Bool   `tfsdk:"shadowed"`
}

func (d *ociRoutingDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The routing of a whole workspace as the hub resolves it: its routes in evaluation order with the " +
			"clusters each one wins, which routes are shadowed, and which clusters no route matches.",
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
				}},
			},
			"unmatched_clusters": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Clusters of the workspace that no route matches: they have no chain."},
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
			Clusters: nonNil(r.Clusters), Shadowed: types.BoolValue(shadowed[r.Route]),
		})
	}
	m.UnmatchedClusters = nonNil(rep.Unmatched)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// nonNil makes an empty list render as [] rather than null.
func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
