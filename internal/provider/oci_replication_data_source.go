package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

var _ datasource.DataSourceWithConfigure = &ociReplicationDataSource{}

func newOCIReplicationDataSource() datasource.DataSource {
	return &ociReplicationDataSource{hubDataSource{typeName: "oci_replication"}}
}

// ociReplicationKind is the per-registry status object `fleet-controller hub` writes with the
// registry's observed replication lag: one per registry of a workspace, named after it.
var ociReplicationKind = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("ocireplications"), Kind: "OCIReplication"}

// ociReplicationDataSource shows the observed replication lag of one registry of a workspace,
// from its OCIReplication.
type ociReplicationDataSource struct{ hubDataSource }

type ociReplicationModel struct {
	Workspace     types.String          `tfsdk:"workspace"`
	Registry      types.String          `tfsdk:"registry"`
	Window        types.String          `tfsdk:"window"`
	Measured      types.Int64           `tfsdk:"measured"`
	P50           types.String          `tfsdk:"p50"`
	P95           types.String          `tfsdk:"p95"`
	P50Seconds    types.Int64           `tfsdk:"p50_seconds"`
	P95Seconds    types.Int64           `tfsdk:"p95_seconds"`
	Waiting       types.Int64           `tfsdk:"waiting"`
	OldestWaiting types.String          `tfsdk:"oldest_waiting"`
	Artifacts     []replicatedArtifactM `tfsdk:"artifacts"`
}

type replicatedArtifactM struct {
	Repository   types.String `tfsdk:"repository"`
	Digest       types.String `tfsdk:"digest"`
	PushedAt     types.String `tfsdk:"pushed_at"`
	PushedAtFrom types.String `tfsdk:"pushed_at_from"`
	FirstPulled  types.String `tfsdk:"first_pulled"`
	Lag          types.String `tfsdk:"lag"`
	LagSeconds   types.Int64  `tfsdk:"lag_seconds"`
}

func (d *ociReplicationDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	num := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "How far behind one registry of a workspace is: the replication lag its clusters observed, the answer to " +
			"\"how long after a push can a cluster pull it from this mirror?\".\n\n" +
			"An artifact's **pushed-at** is its manifest's `org.opencontainers.image.created` annotation, which the agents report, or, when " +
			"the manifest has none, the earliest successful pull of its digest (from any registry, by any cluster of the workspace) that " +
			"`fleet-controller hub` observed: the artifact was pushed before, so that lag is a lower bound. Its **lag** at this registry is " +
			"the time from pushed-at to the first successful pull of the digest from this registry by any cluster, as the hub observed it " +
			"(to the second, as the agents time their pulls). A registry counts an artifact once a " +
			"cluster asked it for the artifact: it pulled from it, waits at it, or gave up on it for a later registry of its chain. `p50` and " +
			"`p95` are over the artifacts of the window that were pulled from it; those it has not served yet are `waiting`.\n\n" +
			"`fleet-controller hub`'s `replication` reconciler writes the figures on an `OCIReplication` named after the registry in the " +
			"workspace (`kubectl get ocireplications -n <workspace>`), from the pulls the clusters' ClusterOCIStorages list (at most 100 a " +
			"cluster). A registry no cluster has asked for anything has none: `measured` is 0 and the figures are null. A route whose " +
			"`replication_wait` is shorter than its first registry's `p95` gets a plan warning naming the clusters that will fail over.",
		Attributes: map[string]schema.Attribute{
			"workspace":   schema.StringAttribute{Required: true, MarkdownDescription: "Workspace (hub namespace) of the registry."},
			"registry":    schema.StringAttribute{Required: true, MarkdownDescription: "The registry's name (its `fleet_oci_registry`'s `name`)."},
			"window":      str("How far back pushed artifacts count, e.g. `24h0m0s` (the controller's `--replication-window`); null without figures."),
			"measured":    num("How many artifacts of the window clusters pulled from the registry: what `p50` and `p95` are over."),
			"p50":         str("The median lag, as a duration such as `1m30s`; null when `measured` is 0."),
			"p95":         str("The 95th percentile of the lags (nearest rank); null when `measured` is 0."),
			"p50_seconds": num("`p50` in whole seconds; null when `measured` is 0."),
			"p95_seconds": num("`p95` in whole seconds; null when `measured` is 0."),
			"waiting":     num("Artifacts of the window a cluster asked the registry for that no cluster has pulled from it yet."),
			"oldest_waiting": str("The pushed-at (RFC 3339) of the oldest waiting artifact; null when none waits. The lag of that artifact is at " +
				"least the time since, which `p95` does not count until it arrives."),
			"artifacts": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The artifacts of the window the registry was asked for, newest pushed first (at most 50).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"repository":     str("The artifact's path below the registries, e.g. `apps/web`."),
					"digest":         str("Its manifest digest."),
					"pushed_at":      str("When it was pushed (RFC 3339), as `pushed_at_from` tells."),
					"pushed_at_from": str("`Annotation` (the manifest's `org.opencontainers.image.created`) or `FirstServed` (the earliest successful pull of the digest the hub observed)."),
					"first_pulled":   str("The first successful pull from this registry by any cluster (RFC 3339); null while it waits."),
					"lag":            str("`first_pulled` less `pushed_at`, e.g. `45s`; null while it waits."),
					"lag_seconds":    num("`lag` in whole seconds; null while it waits."),
				}},
			},
		},
	}
}

func (d *ociReplicationDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ociReplicationModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	if d.env == nil || d.env.Client == nil {
		detail := "The provider has no hub connection."
		if d.env != nil && d.env.ClientErr != nil {
			detail = d.env.ClientErr.Error()
		}
		resp.Diagnostics.AddError("Hub not configured", detail)
		return
	}
	ws, reg := m.Workspace.ValueString(), m.Registry.ValueString()
	if _, err := d.env.Client.Get(ctx, namespaceKind, "", ws); apierrors.IsNotFound(err) {
		resp.Diagnostics.AddAttributeError(path.Root("workspace"), "Workspace not found",
			fmt.Sprintf("Namespace %q does not exist on the hub, so it is no workspace. Check the name (and the provider's hub connection).", ws))
		return
	}
	reps, served, err := replications(ctx, d.env.Client.Live(), ws, &resp.Diagnostics)
	switch {
	case err != nil:
		resp.Diagnostics.AddError("Cannot read the controller's view", fmt.Sprintf("Listing the OCIReplications of workspace %s failed: %v.", ws, err))
		return
	case !served:
		resp.Diagnostics.AddError("fleet-controller's CRDs are not installed",
			fmt.Sprintf("The hub does not serve OCIReplications (%s), where fleet-controller hub reports each registry's replication lag. "+
				"Install or upgrade fleet-controller on the hub: its Helm chart (charts/fleet-controller) installs the CRDs of %s.",
				ociReplicationKind.GroupVersionResource, v1alpha1.GroupVersion.Group))
		return
	}
	st, ok := reps[reg]
	if !ok {
		st = v1alpha1.OCIReplicationStatus{Registry: reg}
	}
	replicationModel(&m, st, ok)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// replicationModel fills m from a registry's status; has is false when there is no
// OCIReplication for it (no data).
func replicationModel(m *ociReplicationModel, st v1alpha1.OCIReplicationStatus, has bool) {
	m.Window = types.StringNull()
	if has {
		m.Window = types.StringValue(st.Window.Duration.String())
	}
	m.Measured, m.Waiting = types.Int64Value(int64(st.Measured)), types.Int64Value(int64(st.Waiting))
	m.P50, m.P50Seconds = durationValue(st.P50)
	m.P95, m.P95Seconds = durationValue(st.P95)
	m.OldestWaiting = rfc3339(st.OldestWaiting)
	m.Artifacts = []replicatedArtifactM{}
	for _, a := range st.Artifacts {
		lag, secs := durationValue(a.Lag)
		m.Artifacts = append(m.Artifacts, replicatedArtifactM{
			Repository: types.StringValue(a.Repository), Digest: types.StringValue(a.Digest),
			PushedAt: rfc3339(&a.PushedAt), PushedAtFrom: types.StringValue(a.PushedAtFrom),
			FirstPulled: rfc3339(a.FirstPulled), Lag: lag, LagSeconds: secs,
		})
	}
}

// durationValue is d as a duration string and whole seconds, or nulls.
func durationValue(d *metav1.Duration) (types.String, types.Int64) {
	if d == nil {
		return types.StringNull(), types.Int64Null()
	}
	return types.StringValue(d.Duration.String()), types.Int64Value(int64(d.Duration / time.Second))
}

// replications reads the OCIReplications of a workspace, by registry; served is false when the
// hub does not serve the kind. One that cannot be read is left out with a warning.
// They are decoded once per list of them (l's memo): every route of a plan asks. Callers must not
// modify the result.
func replications(ctx context.Context, l hub.Lister, ws string, diags *diag.Diagnostics) (map[string]v1alpha1.OCIReplicationStatus, bool, error) {
	type decoded struct {
		byRegistry map[string]v1alpha1.OCIReplicationStatus
		served     bool
		warnings   diag.Diagnostics
	}
	v, err := l.Memo("replications/"+ws, func() (any, error) {
		items, served, err := listServed(ctx, l, ociReplicationKind, ws)
		if err != nil || !served {
			return decoded{served: served}, err
		}
		d := decoded{byRegistry: map[string]v1alpha1.OCIReplicationStatus{}, served: true}
		for i := range items {
			var st v1alpha1.OCIReplicationStatus
			if readStatus(&items[i], &st, &d.warnings) {
				d.byRegistry[items[i].GetName()] = st
			}
		}
		return d, nil
	})
	d, _ := v.(decoded)
	diags.Append(d.warnings...)
	return d.byRegistry, d.served, err
}
