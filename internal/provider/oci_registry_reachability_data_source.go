package provider

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

func newOCIRegistryReachabilityDataSource() datasource.DataSource {
	return &ociRegistryReachabilityDataSource{hubDataSource{typeName: "oci_registry_reachability"}}
}

// ociRegistryReachabilityDataSource shows one registry's reachability across the clusters whose
// chain names it, as their agents' connectivity probes report it.
type ociRegistryReachabilityDataSource struct{ hubDataSource }

type ociRegistryReachabilityModel struct {
	Workspace   types.String        `tfsdk:"workspace"`
	Registry    types.String        `tfsdk:"registry"`
	Clusters    types.Int64         `tfsdk:"clusters"`
	Reachable   types.Int64         `tfsdk:"reachable"`
	Failing     []reachabilityEntry `tfsdk:"failing"`
	NotReported []types.String      `tfsdk:"not_reported"`
}

type reachabilityEntry struct {
	Cluster  types.String `tfsdk:"cluster"`
	State    types.String `tfsdk:"state"`
	ProbedAt types.String `tfsdk:"probed_at"`
}

func (d *ociRegistryReachabilityDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Whether the clusters that pull from a registry can reach it — \"reachable from n of m clusters\", and which fail how.\n\n" +
			"Every cluster's agent (`fleet-controller agent`) probes each registry of its chain every `--probe-interval` (2m, jittered): " +
			"`GET /v2/` with the agent's credentials and the registry's TLS settings, as a pull would. The result comes back to the hub " +
			"through the status feedback of the chain's ManifestWork, and `fleet-controller hub` (its `probe-status` reconciler) writes it " +
			"on each cluster's ClusterOCIStorage (`status.reachability`), which this data source reads. An agent reports a change at once " +
			"and an unchanged result at least every `--probe-refresh` (15m), so `probed_at` is at most that old while it runs and reports; " +
			"an older one means the agent or the cluster's feedback stopped.",
		Attributes: map[string]schema.Attribute{
			"workspace": schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "Workspace (hub namespace). Defaults to the provider's `workspace`."},
			"registry":  schema.StringAttribute{Required: true, MarkdownDescription: "Name of the registry (`fleet_oci_registry`) in the workspace."},
			"clusters": schema.Int64Attribute{Computed: true,
				MarkdownDescription: "How many clusters of the workspace have the registry in their delivered chain (`fleet_oci_chain`)."},
			"reachable": schema.Int64Attribute{Computed: true, MarkdownDescription: "How many of them last reported the registry `Reachable`."},
			"failing": schema.ListNestedAttribute{Computed: true,
				MarkdownDescription: "The clusters that last reported a failure, sorted by cluster.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"cluster":   schema.StringAttribute{Computed: true, MarkdownDescription: "The cluster."},
					"state":     schema.StringAttribute{Computed: true, MarkdownDescription: "The probe's failure class: `Unauthorized`, `TLS` or `Unreachable`."},
					"probed_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When the cluster's agent last confirmed it (RFC 3339); null when not reported."},
				}},
			},
			"not_reported": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The clusters whose chain names the registry but whose agent has not reported a probe of it (yet): the agent is not " +
					"running, runs with `--probe-interval=0`, or the chain was delivered moments ago. Sorted."},
		},
	}
}

func (d *ociRegistryReachabilityDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ociRegistryReachabilityModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	ws := d.workspace(m.Workspace)
	inv, _ := d.resolve(ctx, ws, &resp.Diagnostics)
	if inv == nil {
		return
	}
	registry := m.Registry.ValueString()
	if _, ok := inv.Registries[registry]; !ok {
		resp.Diagnostics.AddAttributeError(path.Root("registry"), "Registry not in workspace",
			fmt.Sprintf("Workspace %s has no registry %q (a fleet_oci_registry Secret). Check the name.", ws, registry))
		return
	}
	reports, chained := reachOf(deliveries(ctx, d.env.Client.Live(), ws, &resp.Diagnostics), registry)
	m.Workspace = types.StringValue(ws)
	m.Clusters = types.Int64Value(int64(len(chained)))
	m.Failing, m.NotReported = []reachabilityEntry{}, []types.String{}
	var reachable int64
	reported := map[string]bool{}
	for _, r := range reports {
		if !slices.Contains(chained, r.Cluster) {
			continue // a result for a chain the cluster no longer has
		}
		reported[r.Cluster] = true
		if r.State == v1alpha1.Reachable {
			reachable++
			continue
		}
		e := reachabilityEntry{Cluster: types.StringValue(r.Cluster), State: types.StringValue(r.State), ProbedAt: types.StringNull()}
		if !r.ProbedAt.IsZero() {
			e.ProbedAt = types.StringValue(r.ProbedAt.UTC().Format(time.RFC3339))
		}
		m.Failing = append(m.Failing, e)
	}
	for _, c := range chained {
		if !reported[c] {
			m.NotReported = append(m.NotReported, types.StringValue(c))
		}
	}
	m.Reachable = types.Int64Value(reachable)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
