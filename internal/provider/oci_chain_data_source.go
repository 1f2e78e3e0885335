package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/umkim/terraform-provider-fleet/internal/inventory"
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
}

type chainRegistry struct {
	Name      types.String `tfsdk:"name"`
	Reference types.String `tfsdk:"reference"`
	Role      types.String `tfsdk:"role"`
}

func (d *ociChainDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The route and registry chain one cluster pulls OCI artifacts through, resolved from the routes, " +
			"registries and clusters on the hub — the answer to \"where does cluster X pull from, and why?\".",
		Attributes: map[string]schema.Attribute{
			"workspace": schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "Workspace (hub namespace). Defaults to the provider's `workspace`."},
			"cluster":   schema.StringAttribute{Required: true, MarkdownDescription: "Name of the OCM ManagedCluster, a member of a ManagedClusterSet bound to the workspace."},
			"route":     schema.StringAttribute{Computed: true, MarkdownDescription: "The route the cluster uses; null when no route matches it (it then has no chain)."},
			"matched_by": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The route's criterion that matched: `cluster_names`, `cluster_groups`, `cluster_selectors[<i>]` or `default`; null when unmatched."},
			"registries": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The chain, in the order the cluster tries it.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":      schema.StringAttribute{Computed: true, MarkdownDescription: "Registry name."},
					"reference": schema.StringAttribute{Computed: true, MarkdownDescription: "`host[:port][/path]`; null when the registry does not exist on the hub."},
					"role":      schema.StringAttribute{Computed: true, MarkdownDescription: "`source` or `mirror`; null when the registry does not exist on the hub."},
				}},
			},
			"replication_wait": schema.StringAttribute{Computed: true, MarkdownDescription: "How long the cluster waits for a missing artifact at one registry before moving on."},
		},
	}
}

func (d *ociChainDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ociChainModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	ws := d.workspace(m.Workspace)
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
	m.Route, m.MatchedBy, m.ReplicationWait = types.StringNull(), types.StringNull(), types.StringNull()
	m.Registries = []chainRegistry{}
	if res.Matched() {
		m.Route = types.StringValue(res.Route)
		m.MatchedBy = types.StringValue(res.MatchedBy.String())
		m.ReplicationWait = types.StringValue(inv.Waits[res.Route])
		for _, name := range res.Registries {
			r := chainRegistry{Name: types.StringValue(name), Reference: types.StringNull(), Role: types.StringNull()}
			if reg, ok := inv.Registries[name]; ok {
				r.Reference, r.Role = types.StringValue(reg.Reference), types.StringValue(reg.Role)
			}
			m.Registries = append(m.Registries, r)
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func notInWorkspace(cluster string, inv *inventory.Workspace) string {
	if len(inv.Groups) == 0 {
		return fmt.Sprintf("Workspace %s routes no clusters: no ManagedClusterSet is bound to it. Bind one with a ManagedClusterSetBinding in namespace %s.", inv.Name, inv.Name)
	}
	return fmt.Sprintf("Cluster %q is not a member of the ManagedClusterSets bound to workspace %s (%s). Check the cluster's name, or add it to one of those sets.",
		cluster, inv.Name, strings.Join(inv.Groups, ", "))
}
