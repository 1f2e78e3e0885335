package provider

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
)

var _ datasource.DataSourceWithConfigure = &ociPullStatusDataSource{}

func newOCIPullStatusDataSource() datasource.DataSource {
	return &ociPullStatusDataSource{hubDataSource{typeName: "oci_pull_status"}}
}

// ociPullStatusDataSource shows what the workload clusters of a workspace report about the OCI
// artifacts they were asked to pull: the pull works (internal/pullwork) in the clusters'
// namespaces, with each cluster's route and chain from its ClusterOCIStorage.
type ociPullStatusDataSource struct{ hubDataSource }

type ociPullStatusModel struct {
	Workspace            types.String    `tfsdk:"workspace"`
	Cluster              types.String    `tfsdk:"cluster"`
	Artifact             types.String    `tfsdk:"artifact"`
	Pulls                []pullStatusRow `tfsdk:"pulls"`
	Counts               *pullCounts     `tfsdk:"counts"`
	Clusters             types.Int64     `tfsdk:"clusters"`
	ClustersWithoutPulls []string        `tfsdk:"clusters_without_pulls"`
	WaitFor              types.String    `tfsdk:"wait_for_controller"`
}

type pullStatusRow struct {
	Cluster     types.String `tfsdk:"cluster"`
	Artifact    types.String `tfsdk:"artifact"`
	Name        types.String `tfsdk:"name"`
	Work        types.String `tfsdk:"work"`
	Route       types.String `tfsdk:"route"`
	Chain       []string     `tfsdk:"chain"`
	State       types.String `tfsdk:"state"`
	Reason      types.String `tfsdk:"reason"`
	Registry    types.String `tfsdk:"registry"`
	Digest      types.String `tfsdk:"digest"`
	Attempts    types.Int64  `tfsdk:"attempts"`
	NextRetry   types.String `tfsdk:"next_retry"`
	LastSuccess types.String `tfsdk:"last_success"`
	Verified    types.String `tfsdk:"verified"`
	Message     types.String `tfsdk:"message"`
	Failovers   []failover   `tfsdk:"failovers"`
	Size        types.Int64  `tfsdk:"size"`
	PushedAt    types.String `tfsdk:"pushed_at"`
}

type failover struct {
	Registry string `tfsdk:"registry"`
	Reason   string `tfsdk:"reason"`
}

type pullCounts struct {
	Pulled             types.Int64 `tfsdk:"pulled"`
	WaitingForArtifact types.Int64 `tfsdk:"waiting_for_artifact"`
	Failed             types.Int64 `tfsdk:"failed"`
	Unknown            types.Int64 `tfsdk:"unknown"`
}

var namespaceKind = hub.Kind{GroupVersionResource: k8sschema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}

func (d *ociPullStatusDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Whether the workload clusters of a workspace have pulled the OCI artifacts they were asked to pull — the answer to " +
			"\"is version X of artifact Y on cluster Z yet, and if not, why not?\".\n\n" +
			"A pull is an `OCIPull` object that a ManifestWork of the workspace (a pull work, or a `fleet_app`'s work pulling its chart) puts " +
			"on a workload cluster. The `fleet-controller agent` there pulls the artifact through the cluster's registry chain into its cache, " +
			"Open Cluster Management's status feedback brings the pull's status back into the ManifestWork on the hub, and `fleet-controller hub` " +
			"lists it in the cluster's ClusterOCIStorage in the workspace (at most 100 a cluster), where this data source reads it: one entry of " +
			"`pulls` per cluster and artifact asked for, with the route and chain the cluster pulls through (the same values as " +
			"`fleet_oci_chain` shows with `resolved_by = \"controller\"`).\n\n" +
			"A status is shown only when it answers what is asked now: when a pull's spec changed and the cluster has not reported on the " +
			"new one yet, or the cluster's agents are down, the pull's `state` is `Unknown` — never `Failed` — and its other status fields " +
			"are null. The data source needs `fleet-controller`'s CRDs on the hub (they come with its Helm chart) and reads only the " +
			"workspace's namespace: the chart's `fleet-tenant` ClusterRole, bound in the workspace, is enough.",
		Attributes: map[string]schema.Attribute{
			"workspace":           schema.StringAttribute{Required: true, MarkdownDescription: "Workspace (hub namespace) whose pulls to show."},
			"wait_for_controller": waitForControllerAttr("the workspace's routes (OCIStorageRoutes), whose route and chain each pull shows,"),
			"cluster": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Show only the pulls of this cluster (the ManagedCluster's name, which is also its namespace on the hub). " +
					"Unset: every cluster of the workspace."},
			"artifact": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Show only the pulls of this artifact: a repository below the registries (e.g. `apps/web`), which matches every " +
					"tag and digest of it, or exactly `repository:tag` or `repository@digest`. Unset: every artifact."},
			"pulls": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The pulls asked of the clusters, sorted by cluster, then artifact. Empty when none matches `cluster` and " +
					"`artifact`. A cluster of the workspace that was asked to pull nothing has no entry here; it is listed in `clusters_without_pulls`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"cluster":  schema.StringAttribute{Computed: true, MarkdownDescription: "The cluster asked to pull."},
					"artifact": schema.StringAttribute{Computed: true, MarkdownDescription: "What is asked for, below the registries: `repository:tag`, or `repository@digest` when the pull names a digest."},
					"name":     schema.StringAttribute{Computed: true, MarkdownDescription: "The OCIPull's name on the cluster (in namespace `fleet-system`)."},
					"work":     schema.StringAttribute{Computed: true, MarkdownDescription: "The ManifestWork that carries the pull, as `<cluster namespace>/<name>`: where to look on the hub (`kubectl get manifestwork -n <cluster> <name> -o yaml`)."},
					"route": schema.StringAttribute{Computed: true,
						MarkdownDescription: "The route the cluster pulls through, from its ClusterOCIStorage; null when `fleet-controller hub` has not " +
							"reported on the cluster (it is not running, has not handled it yet, or the cluster is not in the workspace) or no route matches the cluster."},
					"chain": schema.ListAttribute{Computed: true, ElementType: types.StringType,
						MarkdownDescription: "The registries the cluster tries, in order, as delivered to it (from its ClusterOCIStorage); empty when `route` is null."},
					"state": schema.StringAttribute{Computed: true,
						MarkdownDescription: "`Pulling` (the agent is downloading it from `registry`), `Pulled` (the artifact is in the agent's cache), `WaitingForArtifact` (a registry of the chain lacks it and " +
							"the agent waits for replication before it tries the next one), `Failed` (every registry of the chain failed; the agent " +
							"starts over after a back-off from its `--retry-failed` period, a minute by default, doubling per failure up to `--retry-failed-max`; `next_retry` says when) or `Unknown`: no status has come back for what is asked now — the work is not applied yet, " +
							"the agent has not handled the pull, or the pull changed since the cluster last reported."},
					"reason": schema.StringAttribute{Computed: true,
						MarkdownDescription: "Why the pull is in its state, as the agent classifies the last attempt, e.g. `NotFound` or `Unauthorized`; null when `state` is `Unknown` or the agent gave none."},
					"registry": schema.StringAttribute{Computed: true,
						MarkdownDescription: "The registry of the chain that served the artifact (`Pulled`), or that the agent is waiting for or tried last; null when `state` is `Unknown`."},
					"digest": schema.StringAttribute{Computed: true,
						MarkdownDescription: "The manifest digest the agent resolved and pulled, e.g. `sha256:…`; null when it has none or `state` is `Unknown`."},
					"attempts": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "How many attempts the agent made at registries for this pull; null when `state` is `Unknown`."},
					"next_retry": schema.StringAttribute{Computed: true,
						MarkdownDescription: "When the agent next asks `registry` for the artifact (RFC 3339) while `state` is `WaitingForArtifact`, or starts the pull over while it is `Failed`; null in the other states."},
					"last_success": schema.StringAttribute{Computed: true,
						MarkdownDescription: "When the agent last pulled the artifact successfully (RFC 3339); null when it never has or `state` is `Unknown`."},
					"verified": schema.StringAttribute{Computed: true,
						MarkdownDescription: "Who signed the artifact pulled, when the route verifies signatures (its `verify` block): `cosign key SHA256:<fingerprint>` or `notation x509.subject <subject> (certificate SHA256:<fingerprint>)`; null otherwise or when `state` is `Unknown`."},
					"message": schema.StringAttribute{Computed: true,
						MarkdownDescription: "The agent's message about the last attempt, what to read when `state` is not `Pulled`; null when `state` is `Unknown` or the agent gave none."},
					"size": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "The pulled artifact's size in bytes (its manifests, configs and layers, as the agent's cache holds them); null unless `state` is `Pulled`."},
					"pushed_at": schema.StringAttribute{Computed: true,
						MarkdownDescription: "When the artifact was made (RFC 3339), from its manifest's `org.opencontainers.image.created` annotation; null when the manifest has none " +
							"or `state` is not `Pulled`. `fleet_oci_replication` then counts from the first successful pull of the digest the hub observed."},
					"failovers": schema.ListNestedAttribute{Computed: true,
						MarkdownDescription: "The registries of the chain this pull gave up on, in order, and why (`reason`: `Unauthorized`, `TLS`, `Unreachable`, `NotFound` after the replication wait, `IntegrityMismatch`, or `Unverified` when the route verifies signatures and the registry has none it trusts): " +
							"why a later registry served, or why the pull failed. Empty when the first registry served or `state` is `Unknown`. " +
							"It comes back only from work agents that run with OCM's `RawFeedbackJsonString` feature gate.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"registry": schema.StringAttribute{Computed: true, MarkdownDescription: "The registry's name in the chain."},
							"reason":   schema.StringAttribute{Computed: true, MarkdownDescription: "The class of its failure."},
						}},
					},
				}},
			},
			"counts": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "How many of `pulls` are in each state.",
				Attributes: map[string]schema.Attribute{
					"pulled":               schema.Int64Attribute{Computed: true, MarkdownDescription: "Pulls in state `Pulled`."},
					"waiting_for_artifact": schema.Int64Attribute{Computed: true, MarkdownDescription: "Pulls in state `WaitingForArtifact`."},
					"failed":               schema.Int64Attribute{Computed: true, MarkdownDescription: "Pulls in state `Failed`."},
					"unknown":              schema.Int64Attribute{Computed: true, MarkdownDescription: "Pulls in state `Unknown`, or `Pulling`."},
				},
			},
			"clusters": schema.Int64Attribute{Computed: true, MarkdownDescription: "How many clusters `pulls` covers."},
			"clusters_without_pulls": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Clusters of the workspace (those `fleet-controller hub` keeps a ClusterOCIStorage for) that match `cluster` " +
					"but were asked for no pull that matches `artifact`, sorted: with `artifact` set, the clusters that were not asked for it. " +
					"Empty when the controller has reported on no cluster of the workspace."},
		},
	}
}

func (d *ociPullStatusDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m ociPullStatusModel
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
	ws, cluster, artifact := m.Workspace.ValueString(), m.Cluster.ValueString(), m.Artifact.ValueString()
	// A workspace that does not exist would show no pulls, as if none were asked for: say so.
	// Without the right to read namespaces the lists below still tell what they can.
	if _, err := d.env.Client.Get(ctx, namespaceKind, "", ws); apierrors.IsNotFound(err) {
		resp.Diagnostics.AddAttributeError(path.Root("workspace"), "Workspace not found",
			fmt.Sprintf("Namespace %q does not exist on the hub, so it is no workspace. Check the name (and the provider's hub connection).", ws))
		return
	}
	d.awaitController(ctx, inventory.RouteKind, ws, "", m.WaitFor, &resp.Diagnostics, clusterStorageKind)
	pulls, storages := loadPulls(ctx, d.env.Client.Live(), ws, cluster, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	rows, counts, clusters, idle := pullStatusRows(pulls, storages, cluster, artifact)
	if cluster != "" && len(rows) == 0 && len(idle) == 0 {
		warnClusterUnknown(ctx, d.env, ws, cluster, &resp.Diagnostics)
	}
	m.Pulls, m.Counts, m.Clusters, m.ClustersWithoutPulls = rows, &counts, types.Int64Value(int64(clusters)), idle
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// warnClusterUnknown warns that cluster, of which the workspace shows nothing, is not one the
// workspace may use, saying why: no ManagedCluster of that name, or none of its sets bound. A
// cluster the workspace may use that fleet-controller hub has not reported on yet (or that no
// controller serves) is no warning: it has no pulls, and the data source says so.
func warnClusterUnknown(ctx context.Context, env *hubresource.Env, ws, cluster string, diags *diag.Diagnostics) {
	inv, err := inventory.Load(ctx, env.Client.Live(), ws, env.Client.FieldManager())
	why := "it is not a member of a ManagedClusterSet bound to the workspace, or fleet-controller hub has not handled it yet"
	if err == nil {
		ca, ok := inv.Access(cluster)
		switch {
		case ok && ca.Allowed():
			return
		case ok:
			why = ca.NotBound()
		default:
			why = "no ManagedCluster of that name is on the hub"
		}
	}
	diags.AddAttributeWarning(path.Root("cluster"), "Cluster unknown to the workspace",
		fmt.Sprintf("Cluster %q has neither pulls nor a ClusterOCIStorage in workspace %s: %s. Check the cluster's name, or bind one of its sets to the workspace.", cluster, ws, why))
}

// loadPulls reads the pulls of a workspace, of cluster only when it is set, and the route and
// chain of each cluster, from the ClusterOCIStorages `fleet-controller hub` keeps in the
// workspace: a tenant reads only its own namespace. What the hub does not serve is an error
// that says what to install.
func loadPulls(ctx context.Context, l hub.Lister, ws, cluster string, diags *diag.Diagnostics) ([]pullwork.Pull, map[string]v1alpha1.ClusterOCIStorageStatus) {
	items, served, err := listServed(ctx, l, clusterStorageKind, ws)
	if err != nil {
		diags.AddError("Cannot read the controller's view", fmt.Sprintf("Listing the ClusterOCIStorages of workspace %s failed: %v.", ws, err))
		return nil, nil
	} else if !served {
		diags.AddError("fleet-controller's CRDs are not installed",
			fmt.Sprintf("The hub does not serve ClusterOCIStorages (%s), where fleet-controller hub reports each cluster's route, chain and pulls. "+
				"Install fleet-controller on the hub: its Helm chart (charts/fleet-controller) installs the CRDs of %s, "+
				"or apply them alone with `kubectl apply -f config/crd/bases`.", clusterStorageKind.GroupVersionResource, v1alpha1.GroupVersion.Group))
		return nil, nil
	}
	storages := map[string]v1alpha1.ClusterOCIStorageStatus{}
	var pulls []pullwork.Pull
	for i := range items {
		name := items[i].GetName()
		var st v1alpha1.ClusterOCIStorageStatus
		if (cluster != "" && name != cluster) || !readStatus(&items[i], &st, diags) {
			continue
		}
		if meta.FindStatusCondition(st.Conditions, v1alpha1.ReadyCondition) != nil {
			storages[name] = st
		}
		for _, cp := range st.Pulls {
			pulls = append(pulls, pullwork.FromListed(name, cp))
		}
		if st.PullsOmitted > 0 {
			diags.AddWarning("Pulls left out", fmt.Sprintf("Cluster %s has %d more pulls in workspace %s than its ClusterOCIStorage lists (%d); "+
				"they are not shown. Filter by artifact, or see the cluster's ManifestWorks.", name, st.PullsOmitted, ws, len(st.Pulls)))
		}
	}
	return pulls, storages
}

// pullStatusRows maps pulls to the data source's rows, sorted by cluster, artifact, then name
// and work, keeping those of cluster and artifact (each "" for all), and counts them by state.
// clusters is how many clusters the rows cover; idle are the clusters with a ClusterOCIStorage
// (storages) that match cluster and have no row.
func pullStatusRows(pulls []pullwork.Pull, storages map[string]v1alpha1.ClusterOCIStorageStatus, cluster, artifact string) (rows []pullStatusRow, counts pullCounts, clusters int, idle []string) {
	var n [4]int64
	seen := map[string]bool{}
	kept := []pullwork.Pull{}
	for _, p := range pulls {
		if (cluster == "" || p.Cluster == cluster) && matchesArtifact(p.Spec, artifact) {
			kept = append(kept, p)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, b := kept[i], kept[j]
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Artifact(), b.Artifact()), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Work, b.Work)) < 0
	})
	rows = []pullStatusRow{}
	for _, p := range kept {
		st, fresh := p.Status, p.State() != pullwork.Unknown
		r := pullStatusRow{
			Cluster: types.StringValue(p.Cluster), Artifact: types.StringValue(p.Artifact()), Name: types.StringValue(p.Name),
			Work: types.StringValue(p.Cluster + "/" + p.Work), State: types.StringValue(p.State()),
			Route: types.StringNull(), Chain: []string{},
			Reason: types.StringNull(), Registry: types.StringNull(), Digest: types.StringNull(), Attempts: types.Int64Null(),
			NextRetry: types.StringNull(), LastSuccess: types.StringNull(), Verified: types.StringNull(), Message: types.StringNull(), Failovers: []failover{},
			Size: types.Int64Null(), PushedAt: types.StringNull(),
		}
		if s, ok := storages[p.Cluster]; ok {
			r.Route, r.Chain = optionalString(s.Route), nonNil(slices.Clone(s.Chain))
		}
		if fresh {
			r.Reason, r.Registry, r.Digest, r.Message = optionalString(st.Reason), optionalString(st.Registry), optionalString(st.Digest), optionalString(st.Message)
			r.Attempts = types.Int64Value(int64(st.Attempts))
			r.NextRetry, r.LastSuccess = rfc3339(st.NextRetry), rfc3339(st.LastSuccess)
			if st.Size > 0 {
				r.Size = types.Int64Value(st.Size)
			}
			r.PushedAt = rfc3339(st.PushedAt)
			r.Verified = optionalString(st.Verified)
			for _, f := range st.Failovers {
				r.Failovers = append(r.Failovers, failover{Registry: f.Registry, Reason: f.Reason})
			}
		}
		switch p.State() {
		case string(v1alpha1.OCIPullPulled):
			n[0]++
		case string(v1alpha1.OCIPullWaitingForArtifact):
			n[1]++
		case string(v1alpha1.OCIPullFailed):
			n[2]++
		default:
			n[3]++
		}
		seen[p.Cluster] = true
		rows = append(rows, r)
	}
	counts = pullCounts{Pulled: types.Int64Value(n[0]), WaitingForArtifact: types.Int64Value(n[1]), Failed: types.Int64Value(n[2]), Unknown: types.Int64Value(n[3])}
	idle = []string{}
	for c := range storages {
		if (cluster == "" || c == cluster) && !seen[c] {
			idle = append(idle, c)
		}
	}
	slices.Sort(idle)
	return rows, counts, len(seen), idle
}

// matchesArtifact tells whether a pull's spec is the artifact filter's: "" matches every pull, a
// repository every tag and digest of it, repository:tag and repository@digest exactly.
func matchesArtifact(s v1alpha1.OCIPullSpec, artifact string) bool {
	return artifact == "" || artifact == s.Repository ||
		s.Tag != "" && artifact == s.Repository+":"+s.Tag ||
		s.Digest != "" && artifact == s.Repository+"@"+s.Digest
}

// rfc3339 is t in RFC 3339 (UTC), or null.
func rfc3339(t *metav1.Time) types.String {
	if t == nil || t.IsZero() {
		return types.StringNull()
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}
