package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/storagerules"
)

var (
	// storageSiteDeploymentKind is the simplyblock operator's hub kind (api/storage/v1alpha2).
	storageSiteDeploymentKind = hub.Kind{GroupVersionResource: v1alpha2.GroupVersion.WithResource("storagesitedeployments"), Kind: "StorageSiteDeployment"}
	// siteClusterKind is the OCM ManagedCluster a deployment names.
	siteClusterKind = hub.Kind{GroupVersionResource: clusterv1.SchemeGroupVersion.WithResource("managedclusters"), Kind: "ManagedCluster"}
)

// The values of wait_for.
const (
	waitForDrafted = "drafted"
	waitForOnline  = "online"
)

// ssdFields are the attributes the resource and the data source share.
type ssdFields struct {
	Cluster        types.String `tfsdk:"cluster"`
	SiteNamespace  types.String `tfsdk:"site_namespace"`
	DraftName      types.String `tfsdk:"draft_name"`
	Discover       types.Object `tfsdk:"discover"`
	Sizing         types.Object `tfsdk:"sizing"`
	Approved       types.Bool   `tfsdk:"approved"`
	Phase          types.String `tfsdk:"phase"`
	Message        types.String `tfsdk:"message"`
	Draft          types.Object `tfsdk:"draft"`
	StorageCluster types.Object `tfsdk:"storage_cluster"`
}

type storageSiteDeploymentModel struct {
	hubresource.Meta
	ssdFields
	WaitFor      types.String `tfsdk:"wait_for"`
	ForceDestroy types.Bool   `tfsdk:"force_destroy"`
}

// Object values, built with types.ObjectValueFrom: a nil pointer or slice is null.
type (
	ssdDiscover struct {
		EnableControlPlaneNodes *bool             `tfsdk:"enable_control_plane_nodes"`
		Workers                 []string          `tfsdk:"workers"`
		NodeSelector            map[string]string `tfsdk:"node_selector"`
	}
	ssdStripe struct {
		DataChunks   *int64 `tfsdk:"data_chunks"`
		ParityChunks *int64 `tfsdk:"parity_chunks"`
	}
	ssdSizing struct {
		Name                *string    `tfsdk:"name"`
		VCPUCount           *int64     `tfsdk:"vcpu_count"`
		MinHugePagesSize    *string    `tfsdk:"min_huge_pages_size"`
		MaxSubsystemCount   *int64     `tfsdk:"max_subsystem_count"`
		EnableDriveFormat   *bool      `tfsdk:"enable_drive_format"`
		EnableJournalDevice *bool      `tfsdk:"enable_journal_device"`
		Stripe              *ssdStripe `tfsdk:"stripe"`
	}
	ssdDevices struct {
		NVMe []string `tfsdk:"nvme"`
	}
	ssdGroup struct {
		Name    string     `tfsdk:"name"`
		Workers []string   `tfsdk:"workers"`
		Devices ssdDevices `tfsdk:"devices"`
	}
	ssdNodeSet struct {
		Name   string     `tfsdk:"name"`
		Groups []ssdGroup `tfsdk:"groups"`
	}
	ssdDraft struct {
		Name     *string      `tfsdk:"name"`
		Phase    *string      `tfsdk:"phase"`
		Message  *string      `tfsdk:"message"`
		Approved bool         `tfsdk:"approved"`
		Cluster  *ssdSizing   `tfsdk:"cluster"`
		NodeSets []ssdNodeSet `tfsdk:"node_sets"`
		NodeRefs []string     `tfsdk:"node_refs"`
		Omitted  []string     `tfsdk:"omitted"`
	}
	ssdNode struct {
		Name     string  `tfsdk:"name"`
		Phase    *string `tfsdk:"phase"`
		Hostname *string `tfsdk:"hostname"`
	}
	ssdStorageCluster struct {
		Name  *string   `tfsdk:"name"`
		UUID  *string   `tfsdk:"uuid"`
		Phase *string   `tfsdk:"phase"`
		Pool  *string   `tfsdk:"pool"`
		Nodes []ssdNode `tfsdk:"nodes"`
	}
)

var (
	ssdStripeTypes   = map[string]attr.Type{"data_chunks": types.Int64Type, "parity_chunks": types.Int64Type}
	ssdSizingTypes   = map[string]attr.Type{"name": types.StringType, "vcpu_count": types.Int64Type, "min_huge_pages_size": types.StringType, "max_subsystem_count": types.Int64Type, "enable_drive_format": types.BoolType, "enable_journal_device": types.BoolType, "stripe": types.ObjectType{AttrTypes: ssdStripeTypes}}
	ssdDiscoverTypes = map[string]attr.Type{"enable_control_plane_nodes": types.BoolType, "workers": types.SetType{ElemType: types.StringType}, "node_selector": types.MapType{ElemType: types.StringType}}
	ssdGroupTypes    = map[string]attr.Type{"name": types.StringType, "workers": types.ListType{ElemType: types.StringType}, "devices": types.ObjectType{AttrTypes: map[string]attr.Type{"nvme": types.ListType{ElemType: types.StringType}}}}
	ssdNodeSetTypes  = map[string]attr.Type{"name": types.StringType, "groups": types.ListType{ElemType: types.ObjectType{AttrTypes: ssdGroupTypes}}}
	ssdDraftTypes    = map[string]attr.Type{"name": types.StringType, "phase": types.StringType, "message": types.StringType, "approved": types.BoolType,
		"cluster": types.ObjectType{AttrTypes: ssdSizingTypes}, "node_sets": types.ListType{ElemType: types.ObjectType{AttrTypes: ssdNodeSetTypes}}, "node_refs": types.SetType{ElemType: types.StringType},
		"omitted": types.ListType{ElemType: types.StringType}}
	ssdNodeTypes           = map[string]attr.Type{"name": types.StringType, "phase": types.StringType, "hostname": types.StringType}
	ssdStorageClusterTypes = map[string]attr.Type{"name": types.StringType, "uuid": types.StringType, "phase": types.StringType, "pool": types.StringType, "nodes": types.ListType{ElemType: types.ObjectType{AttrTypes: ssdNodeTypes}}}
)

var (
	dnsLabelRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsLabelMsg = "must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
)

// Documentation of the attributes, shared by the resource and the data source.
const (
	ssdDocCluster       = "Name of the OCM ManagedCluster (the site) whose storage is requested; the ManifestWork that carries the request lives in the cluster's hub namespace. Changing it replaces the deployment, which leaves the storage already deployed on the old site in place (orphaned)."
	ssdDocSiteNamespace = "Namespace on the site where the simplyblock operator runs and the discovery, draft and storage cluster are created. Defaults to `simplyblock`."
	ssdDocDraftName     = "Name of the draft (`ClusterDeploymentConfig`) the site's discovery writes and the sizing and approval are applied to. Defaults to `site-draft`. Changing it replaces the deployment (the old draft stays on the site)."
	ssdDocDiscover      = "Which of the site's nodes the discovery inspects. Changing it starts a new discovery run."
	ssdDocSizing        = "Sizing applied onto the site's draft once the discovery has written it. An attribute left out keeps the value the discovery wrote (see `draft.cluster`)."
	ssdDocApproved      = "Approves the site's draft, which makes the site expand it into a storage cluster. Review `draft` (phase `Drafted`) first. **Approval is one-way**: once `true` it cannot be set back to `false` (the plan fails), as the draft's own approval cannot. Defaults to `false`."
	ssdDocPhase         = "Where the deployment is, as the hub reports it: `Pending`, `Discovering`, `Drafted` (review `draft` and approve), `Deploying`, `Online` or `Failed`; null until a controller has handled it."
	ssdDocMessage       = "One sentence from the hub: what the deployment waits for, or why it failed."
	ssdDocDraft         = "The site's draft as projected back to the hub: the nodes and devices the discovery found, for review before approving. " +
		"An update plans unknown only what it can alter: the nodes stay known unless `discover` or `site_namespace` changes, the template unless `sizing` changes, the approval unless `approved` changes."
	ssdDocStorageCluster = "The storage cluster the approved draft expanded into, once the site reports it. `uuid` and `pool` are what a StorageClass names (`cluster_id`, `pool_name`); they are known at plan once reported and stay known across updates. Until `approved` is set, an update plans it null."
)

func ssdResourceAttributes() map[string]schema.Attribute {
	sizingAttrs := map[string]schema.Attribute{
		"name": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of the storage cluster the draft expands into (at most 63 characters).",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 63)}},
		"vcpu_count": schema.Int64Attribute{Optional: true, MarkdownDescription: "vCPUs each storage node reserves: at least 4, as the site's draft template requires.",
			Validators: []validator.Int64{int64validator.Between(1, 1<<31-1)}},
		"min_huge_pages_size": schema.StringAttribute{Optional: true, MarkdownDescription: "Huge-page memory each storage node needs at least, a Kubernetes quantity such as `8G` or `16Gi` (at most 32 characters, as the site's draft template requires)."},
		"max_subsystem_count": schema.Int64Attribute{Optional: true, MarkdownDescription: "Most NVMe-oF subsystems (volumes) a storage node serves: 10 to 75, as the site's draft template requires.",
			Validators: []validator.Int64{int64validator.Between(1, 1<<31-1)}},
		"enable_drive_format":   schema.BoolAttribute{Optional: true, MarkdownDescription: "Let the expansion format the drives it takes (their data is lost)."},
		"enable_journal_device": schema.BoolAttribute{Optional: true, MarkdownDescription: "Put each node's journal on a device of its own."},
		"stripe": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Erasure-coding layout of the cluster's volumes, `data_chunks`+`parity_chunks`: one of 1+0, 1+1, 2+1, 4+1, 1+2, 2+2, 4+2, the layouts the site accepts. An unset half counts as 1 (so `data_chunks = 8` alone is 8+1, refused).",
			Attributes: map[string]schema.Attribute{
				"data_chunks": schema.Int64Attribute{Optional: true, MarkdownDescription: "Data chunks per stripe (at least 1).",
					Validators: []validator.Int64{int64validator.Between(1, 1<<31-1)}},
				"parity_chunks": schema.Int64Attribute{Optional: true, MarkdownDescription: "Parity chunks per stripe: how many lost chunks a stripe survives.",
					Validators: []validator.Int64{int64validator.Between(0, 1<<31-1)}},
			}},
	}
	return map[string]schema.Attribute{
		"cluster": schema.StringAttribute{
			Required: true, MarkdownDescription: ssdDocCluster,
			Validators:    []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg)},
			PlanModifiers: []planmodifier.String{replaceOrphans{}},
		},
		"site_namespace": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("simplyblock"), MarkdownDescription: ssdDocSiteNamespace,
			Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg)},
		},
		"draft_name": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("site-draft"), MarkdownDescription: ssdDocDraftName,
			Validators:    []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`), "must be a Kubernetes object name: lowercase letters, digits, '-' and '.'")},
			PlanModifiers: []planmodifier.String{replaceOrphans{}},
		},
		"discover": schema.SingleNestedAttribute{
			Optional: true, MarkdownDescription: ssdDocDiscover,
			Attributes: map[string]schema.Attribute{
				"enable_control_plane_nodes": schema.BoolAttribute{Optional: true, MarkdownDescription: "Consider control-plane nodes too; by default only workers are."},
				"workers": schema.SetAttribute{Optional: true, ElementType: types.StringType,
					MarkdownDescription: "Names of the site's nodes to inspect (at most 128, each at most 253 characters). Empty or unset means every worker. The site takes `workers` or a non-empty `node_selector`, not both."},
				"node_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType,
					MarkdownDescription: "Only the site's nodes with these labels are inspected. Exclusive with `workers`."},
			},
		},
		"sizing": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: ssdDocSizing, Attributes: sizingAttrs},
		"approved": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(false), MarkdownDescription: ssdDocApproved,
			PlanModifiers: []planmodifier.Bool{oneWayApproval{}},
		},
		"wait_for": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Make apply wait, up to the `create`/`update` timeout (default 5 minutes), until the hub reports the deployment " +
				"`drafted` (phase `Drafted` or later: the draft names nodes, review it) or `online` (phase `Online`: `storage_cluster.uuid` and `pool` are set). " +
				"A deployment reported `Failed` fails the apply with the hub's message. Unset, apply returns as soon as the hub has the request. " +
				"Waiting needs a controller on the hub that reports the status: `fleet-controller hub` with its storage-site reconciler, or the simplyblock operator.",
			Validators: []validator.String{stringvalidator.OneOf(waitForDrafted, waitForOnline)},
		},
		"phase":   schema.StringAttribute{Computed: true, MarkdownDescription: ssdDocPhase},
		"message": schema.StringAttribute{Computed: true, MarkdownDescription: ssdDocMessage},
		"draft": schema.SingleNestedAttribute{Computed: true, MarkdownDescription: ssdDocDraft, PlanModifiers: []planmodifier.Object{keepSettledDraft{}}, Attributes: map[string]schema.Attribute{
			"name":     schema.StringAttribute{Computed: true, MarkdownDescription: "The draft's name on the site."},
			"phase":    schema.StringAttribute{Computed: true, MarkdownDescription: "The draft's phase on the site: `Draft`, `Expanding`, `Expanded` or `Failed`."},
			"message":  schema.StringAttribute{Computed: true, MarkdownDescription: "The draft's own message: its validation findings, or why it failed."},
			"approved": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the site's draft carries the approval."},
			"cluster": schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "The draft's cluster template with the requested sizing applied.",
				Attributes: computedResourceAttrs(sizingAttrs)},
			"node_sets": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The nodes and devices the discovery found, grouped as the draft groups them.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Computed: true, MarkdownDescription: "Node set name."},
					"groups": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "Groups of workers that share a device layout.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"name":    schema.StringAttribute{Computed: true, MarkdownDescription: "Group name."},
							"workers": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "The site's node names in the group."},
							"devices": schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "Devices each worker contributes.",
								Attributes: map[string]schema.Attribute{"nvme": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "NVMe devices."}}},
						}}},
				}}},
			"node_refs": schema.SetAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Names of the site's nodes the draft takes."},
			"omitted": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Parts of the site's draft that did not come back to " +
				"the hub, such as `nodeSets[0].groups[1].workers`: over the 1,024 bytes OCM's work agent reports for a list, or past the hub's bounds (8 node sets " +
				"of 16 groups). The site's draft has them: review them there before approving. Null when the draft arrived whole."},
		}},
		"storage_cluster": schema.SingleNestedAttribute{Computed: true, MarkdownDescription: ssdDocStorageCluster,
			PlanModifiers: []planmodifier.Object{keepStorageClusterID{}},
			Attributes: map[string]schema.Attribute{
				"name":  schema.StringAttribute{Computed: true, MarkdownDescription: "Name of the StorageCluster on the site."},
				"uuid":  schema.StringAttribute{Computed: true, MarkdownDescription: "The storage cluster's id: a StorageClass's `cluster_id`."},
				"phase": schema.StringAttribute{Computed: true, MarkdownDescription: "The StorageCluster's phase on the site; `Online` when it serves volumes."},
				"pool":  schema.StringAttribute{Computed: true, MarkdownDescription: "The storage pool volumes are created in: a StorageClass's `pool_name`."},
				"nodes": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The cluster's storage nodes.",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"name":     schema.StringAttribute{Computed: true, MarkdownDescription: "StorageNode name."},
						"phase":    schema.StringAttribute{Computed: true, MarkdownDescription: "StorageNode phase; `Online` when it serves."},
						"hostname": schema.StringAttribute{Computed: true, MarkdownDescription: "Host the node runs on."},
					}}},
			}},
	}
}

// computedResourceAttrs turns the sizing attributes into computed ones without validators.
func computedResourceAttrs(in map[string]schema.Attribute) map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	for k, a := range in {
		switch a := a.(type) {
		case schema.StringAttribute:
			out[k] = schema.StringAttribute{Computed: true, MarkdownDescription: a.MarkdownDescription}
		case schema.Int64Attribute:
			out[k] = schema.Int64Attribute{Computed: true, MarkdownDescription: a.MarkdownDescription}
		case schema.BoolAttribute:
			out[k] = schema.BoolAttribute{Computed: true, MarkdownDescription: a.MarkdownDescription}
		case schema.SingleNestedAttribute:
			out[k] = schema.SingleNestedAttribute{Computed: true, MarkdownDescription: a.MarkdownDescription, Attributes: computedResourceAttrs(a.Attributes)}
		}
	}
	return out
}

var newStorageSiteDeploymentResource = hubresource.New[storageSiteDeploymentModel](hubresource.Kind[storageSiteDeploymentModel]{
	TypeName: "storage_site_deployment",
	Object:   storageSiteDeploymentKind,
	Description: "Requests a managed site's simplyblock storage cluster from the hub: a `StorageSiteDeployment` " +
		"(`storage.simplyblock.io/v1alpha2`, the simplyblock operator's kind) in the workspace.\n\n" +
		"A controller on the hub — `fleet-controller hub` with its storage-site reconciler, or the simplyblock operator — carries the " +
		"request to the site (`cluster`) through OCM: the site's operator discovers the nodes (`discover`) and writes a draft, the " +
		"`sizing` is applied onto the draft, and once `approved` the site expands the draft into a storage cluster. The site's answer comes " +
		"back as `phase`, `draft` (the nodes, for review) and `storage_cluster`, whose `uuid` and `pool` a StorageClass names; with " +
		"`wait_for = \"online\"` apply waits for them, so they can be used in the same configuration.\n\n" +
		"The usual flow is two applies: create with `approved = false` (and `wait_for = \"drafted\"`), review `draft`, then set " +
		"`approved = true` (and `wait_for = \"online\"`).\n\n" +
		"Plan-time checks: un-approving fails the plan (approval is one-way); `min_huge_pages_size` must be a Kubernetes quantity; what the site's " +
		"operator refuses although the hub accepts it fails the plan too (see the storage guide): a `stripe` layout it does not support, `workers` together " +
		"with a `node_selector`, more than 128 `workers`, a sizing outside its template's bounds, a `name` over 63 characters (the hub labels the work with it); changing " +
		"`cluster` or `draft_name` replaces the deployment, with a warning that the storage already deployed stays on the site; a `cluster` " +
		"that is not a ManagedCluster on the hub, or is in no ManagedClusterSet bound to the workspace (the hub then delivers nothing, `NotBound`), " +
		"and approving while the hub does not report the deployment `Drafted`, are warnings.\n\n" +
		"**Destroying** the resource deletes the request only: the site's draft and storage cluster stay on the site (orphaned), never torn down from the hub. " +
		"Destroy waits, up to the `delete` timeout, until the site's work agent confirms that the request's ManifestWork is gone; when the site cannot " +
		"(its ManagedCluster or namespace gone, or the cluster not available for `fleet-controller hub --orphan-after`, default 2m), the deployment goes anyway " +
		"and destroy warns with what is left on the site. `force_destroy = true` stops the wait.",
	Attributes: func() map[string]schema.Attribute {
		a := ssdResourceAttributes()
		a["force_destroy"] = forceDestroyAttribute("the request's objects, its draft and its storage cluster (left on the site by every destroy) and the work agent's hold on them")
		return a
	}(),
	Owned:    []string{"spec"},
	Validate: validateStorageSiteDeployment,
	Expand:   expandStorageSiteDeployment,
	Flatten: func(ctx context.Context, obj *unstructured.Unstructured, m *storageSiteDeploymentModel) diag.Diagnostics {
		return flattenStorageSiteDeployment(ctx, obj, &m.ssdFields)
	},
	CheckPlan:    checkStorageSiteDeploymentPlan,
	Await:        awaitStorageSiteDeployment,
	ForceDestroy: func(m *storageSiteDeploymentModel) bool { return m.ForceDestroy.ValueBool() },
})

// validateStorageSiteDeployment checks what the configuration alone decides: the hub's own rules
// and those of the site's operator (storagerules), which the hub does not enforce, so that a
// request the site would refuse fails the plan instead of the deployment.
func validateStorageSiteDeployment(ctx context.Context, m *storageSiteDeploymentModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if n := m.Name; !n.IsNull() && !n.IsUnknown() {
		siteRefuses(&diags, path.Root("name"), "name", storagerules.DeploymentName(n.ValueString()))
	}
	if d := m.Discover; !d.IsNull() && !d.IsUnknown() {
		var v struct {
			EnableControlPlaneNodes types.Bool `tfsdk:"enable_control_plane_nodes"`
			Workers                 types.Set  `tfsdk:"workers"`
			NodeSelector            types.Map  `tfsdk:"node_selector"`
		}
		diags.Append(d.As(ctx, &v, basetypes.ObjectAsOptions{})...)
		if !v.Workers.IsUnknown() && !v.NodeSelector.IsUnknown() {
			var workers []string
			for _, e := range v.Workers.Elements() {
				if s, ok := e.(types.String); ok && !s.IsUnknown() {
					workers = append(workers, s.ValueString())
				}
			}
			selector := map[string]string{}
			for k := range v.NodeSelector.Elements() {
				selector[k] = ""
			}
			siteRefuses(&diags, path.Root("discover").AtName("workers"), "discover.workers", storagerules.Discover(workers, selector))
		}
	}
	if m.Sizing.IsNull() || m.Sizing.IsUnknown() {
		return diags
	}
	a := m.Sizing.Attributes()
	intOf := func(v attr.Value) *int64 {
		if i, ok := v.(types.Int64); ok && !i.IsNull() && !i.IsUnknown() {
			return i.ValueInt64Pointer()
		}
		return nil
	}
	var hugePages *string
	if q, ok := a["min_huge_pages_size"].(types.String); ok && !q.IsNull() && !q.IsUnknown() {
		hugePages = q.ValueStringPointer()
		if err := checkQuantity(q.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("sizing").AtName("min_huge_pages_size"), "Invalid sizing.min_huge_pages_size",
				fmt.Sprintf("sizing.min_huge_pages_size = %q is not a Kubernetes quantity: %v. Write a number with an optional suffix, such as \"8G\", \"16Gi\" or \"2048M\".", q.ValueString(), err))
		}
	}
	for _, f := range storagerules.Template(intOf(a["vcpu_count"]), intOf(a["max_subsystem_count"]), hugePages) {
		attrName := map[string]string{"vcpuCount": "vcpu_count", "maxSubsystemCount": "max_subsystem_count", "minHugePagesSize": "min_huge_pages_size"}[f.Field]
		siteRefuses(&diags, path.Root("sizing").AtName(attrName), "sizing."+attrName, []storagerules.Finding{f})
	}
	if st, ok := a["stripe"].(types.Object); ok && !st.IsNull() && !st.IsUnknown() {
		data, parity := st.Attributes()["data_chunks"], st.Attributes()["parity_chunks"]
		if !data.IsUnknown() && !parity.IsUnknown() {
			siteRefuses(&diags, path.Root("sizing").AtName("stripe"), "sizing.stripe", storagerules.Stripe(intOf(data), intOf(parity)))
		}
	}
	return diags
}

// siteRefuses reports what the site's operator refuses, as errors on the attribute at p (named
// attr in messages).
func siteRefuses(diags *diag.Diagnostics, p path.Path, attrName string, findings []storagerules.Finding) {
	for _, f := range findings {
		diags.AddAttributeError(p, "Invalid "+attrName,
			fmt.Sprintf("%s: %s. The site refuses this (rule of %s), so the deployment would fail there; change %s and plan again.",
				attrName, f.Reason, storagerules.Source, attrName))
	}
}

// quantityRE is the pattern of sizing.minHugePagesSize in the CRD (api/storage/v1alpha2): an
// unsigned Kubernetes quantity.
var quantityRE = regexp.MustCompile(`^(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`)

// checkQuantity accepts what both the hub (the CRD's pattern) and the site (a Kubernetes quantity)
// accept: an unsigned quantity.
func checkQuantity(s string) error {
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return fmt.Errorf("a size has no sign")
	}
	if _, err := k8sresource.ParseQuantity(s); err != nil {
		return err
	}
	if !quantityRE.MatchString(s) {
		return fmt.Errorf("quantities must match the regular expression '%s'", quantityRE)
	}
	return nil
}

func expandStorageSiteDeployment(_ context.Context, req hubresource.ExpandRequest[storageSiteDeploymentModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	m := req.Plan
	spec := map[string]any{
		"cluster":       m.Cluster.ValueString(),
		"siteNamespace": m.SiteNamespace.ValueString(),
		"draftName":     m.DraftName.ValueString(),
		"approved":      m.Approved.ValueBool(),
	}
	if d := m.Discover; !d.IsNull() && !d.IsUnknown() {
		out := map[string]any{}
		a := d.Attributes()
		if v := a["enable_control_plane_nodes"].(types.Bool); !v.IsNull() {
			out["enableControlPlaneNodes"] = v.ValueBool()
		}
		if v := a["workers"].(types.Set); !v.IsNull() {
			workers := []any{}
			for _, e := range v.Elements() {
				workers = append(workers, e.(types.String).ValueString())
			}
			out["workers"] = workers
		}
		if v := a["node_selector"].(types.Map); !v.IsNull() {
			sel := map[string]any{}
			for k, e := range v.Elements() {
				sel[k] = e.(types.String).ValueString()
			}
			out["nodeSelector"] = sel
		}
		spec["discover"] = out
	}
	if s := m.Sizing; !s.IsNull() && !s.IsUnknown() {
		spec["sizing"] = expandSizing(s)
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, diags
}

func expandSizing(s types.Object) map[string]any {
	out := map[string]any{}
	a := s.Attributes()
	for attrName, field := range map[string]string{"name": "name", "min_huge_pages_size": "minHugePagesSize"} {
		if v := a[attrName].(types.String); !v.IsNull() {
			out[field] = v.ValueString()
		}
	}
	for attrName, field := range map[string]string{"vcpu_count": "vcpuCount", "max_subsystem_count": "maxSubsystemCount"} {
		if v := a[attrName].(types.Int64); !v.IsNull() {
			out[field] = v.ValueInt64()
		}
	}
	for attrName, field := range map[string]string{"enable_drive_format": "enableDriveFormat", "enable_journal_device": "enableJournalDevice"} {
		if v := a[attrName].(types.Bool); !v.IsNull() {
			out[field] = v.ValueBool()
		}
	}
	if st := a["stripe"].(types.Object); !st.IsNull() && !st.IsUnknown() {
		stripe := map[string]any{}
		for attrName, field := range map[string]string{"data_chunks": "dataChunks", "parity_chunks": "parityChunks"} {
			if v := st.Attributes()[attrName].(types.Int64); !v.IsNull() {
				stripe[field] = v.ValueInt64()
			}
		}
		out["stripe"] = stripe
	}
	return out
}

// flattenStorageSiteDeployment reads the object's spec and status into f. A spec field the object
// does not carry is null, so that an out-of-band change shows as drift.
func flattenStorageSiteDeployment(ctx context.Context, obj *unstructured.Unstructured, f *ssdFields) diag.Diagnostics {
	var diags diag.Diagnostics
	var typed v1alpha2.StorageSiteDeployment
	if !decodeHub(obj, &typed, &diags) {
		return diags
	}
	spec := typed.Spec
	f.Cluster = types.StringValue(spec.Cluster)
	f.SiteNamespace = types.StringValue(spec.SiteNamespace)
	f.DraftName = types.StringValue(spec.DraftName)
	f.Approved = types.BoolValue(spec.Approved)

	if raw, ok, _ := unstructured.NestedMap(obj.Object, "spec", "discover"); ok {
		d := ssdDiscover{Workers: spec.Discover.Workers, NodeSelector: spec.Discover.NodeSelector}
		if v, ok := raw["enableControlPlaneNodes"].(bool); ok {
			d.EnableControlPlaneNodes = &v
		}
		f.Discover = objectFrom(ctx, ssdDiscoverTypes, d, &diags)
	} else {
		f.Discover = types.ObjectNull(ssdDiscoverTypes)
	}
	if spec.Sizing != nil {
		f.Sizing = objectFrom(ctx, ssdSizingTypes, sizingValue(spec.Sizing), &diags)
	} else {
		f.Sizing = types.ObjectNull(ssdSizingTypes)
	}

	st := typed.Status
	f.Phase = stringOrNull(string(st.Phase))
	f.Message = stringOrNull(st.Message)
	f.Draft = types.ObjectNull(ssdDraftTypes)
	if d := st.Draft; d != nil {
		v := ssdDraft{Name: optString(d.Name), Phase: optString(string(d.Phase)), Message: optString(d.Message), Approved: d.Approved, NodeRefs: d.NodeRefs,
			Omitted: d.Omitted}
		if d.Cluster != nil {
			v.Cluster = sizingValue(d.Cluster)
		}
		for _, ns := range d.NodeSets {
			set := ssdNodeSet{Name: ns.Name}
			for _, g := range ns.Groups {
				set.Groups = append(set.Groups, ssdGroup{Name: g.Name, Workers: g.Workers, Devices: ssdDevices{NVMe: g.Devices.NVMe}})
			}
			v.NodeSets = append(v.NodeSets, set)
		}
		f.Draft = objectFrom(ctx, ssdDraftTypes, v, &diags)
	}
	f.StorageCluster = types.ObjectNull(ssdStorageClusterTypes)
	if sc := st.StorageCluster; sc != nil {
		v := ssdStorageCluster{Name: optString(sc.Name), UUID: optString(sc.UUID), Phase: optString(sc.Phase), Pool: optString(sc.Pool)}
		for _, n := range sc.Nodes {
			v.Nodes = append(v.Nodes, ssdNode{Name: n.Name, Phase: optString(n.Phase), Hostname: optString(n.Hostname)})
		}
		f.StorageCluster = objectFrom(ctx, ssdStorageClusterTypes, v, &diags)
	}
	return diags
}

func sizingValue(s *v1alpha2.Sizing) *ssdSizing {
	v := &ssdSizing{Name: optString(s.Name), MinHugePagesSize: optString(s.MinHugePagesSize),
		VCPUCount: optInt(s.VCPUCount), MaxSubsystemCount: optInt(s.MaxSubsystemCount),
		EnableDriveFormat: s.EnableDriveFormat, EnableJournalDevice: s.EnableJournalDevice}
	if s.Stripe != nil {
		v.Stripe = &ssdStripe{DataChunks: optInt(s.Stripe.DataChunks), ParityChunks: optInt(s.Stripe.ParityChunks)}
	}
	return v
}

func objectFrom(ctx context.Context, attrTypes map[string]attr.Type, v any, diags *diag.Diagnostics) types.Object {
	o, d := types.ObjectValueFrom(ctx, attrTypes, v)
	diags.Append(d...)
	return o
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optInt(i *int32) *int64 {
	if i == nil {
		return nil
	}
	v := int64(*i)
	return &v
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// replaceOrphans replaces the deployment when the attribute changes, and warns that the storage
// deployed for the old value stays on the site.
type replaceOrphans struct{}

func (replaceOrphans) Description(context.Context) string {
	return "Changing the value replaces the deployment; the storage deployed for the old value stays on the site."
}
func (m replaceOrphans) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (replaceOrphans) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || req.PlanValue.Equal(req.StateValue) {
		return
	}
	resp.RequiresReplace = true
	var id, cluster types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &id)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("cluster"), &cluster)...)
	to := "a value known at apply"
	if !req.PlanValue.IsUnknown() {
		to = fmt.Sprintf("%q", req.PlanValue.ValueString())
	}
	resp.Diagnostics.AddAttributeWarning(req.Path, "StorageSiteDeployment replaced: the site's storage is orphaned",
		fmt.Sprintf("Changing %s from %q to %s replaces StorageSiteDeployment %s: the hub object is deleted and a new one created. "+
			"Deleting the request does not tear anything down on the site: the discovery, the draft and any storage cluster already deployed on site %q stay there (orphaned), "+
			"no longer managed from the hub. Remove them on the site if they are no longer wanted.",
			req.Path, req.StateValue.ValueString(), to, id.ValueString(), cluster.ValueString()))
}

// oneWayApproval fails the plan that would withdraw an approval: the hub's CEL rule and the
// site's draft both reject it, so the plan says so before anything is written.
type oneWayApproval struct{}

func (oneWayApproval) Description(context.Context) string {
	return "Approval is one-way: an approved deployment cannot be un-approved."
}
func (m oneWayApproval) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (oneWayApproval) PlanModifyBool(ctx context.Context, req planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || req.PlanValue.IsUnknown() || req.PlanValue.ValueBool() || !req.StateValue.ValueBool() {
		return
	}
	// A replacement creates a new, unapproved deployment: that is allowed. The workspace is
	// compared as configured: unset, it is the prior one (it is replaced only when configured),
	// and its planned value is unknown here, as the framework plans every computed attribute
	// without a default unknown when anything changes.
	for _, attrName := range []string{"cluster", "draft_name", "name", "workspace"} {
		var planned, prior types.String
		resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root(attrName), &planned)...)
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root(attrName), &prior)...)
		if attrName == "workspace" {
			resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(attrName), &planned)...)
			if planned.IsNull() {
				continue
			}
		}
		if !planned.Equal(prior) {
			return
		}
	}
	var id, cluster types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &id)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("cluster"), &cluster)...)
	resp.Diagnostics.AddAttributeError(req.Path, "Approval is one-way",
		fmt.Sprintf("StorageSiteDeployment %s is approved, and approval is one-way: it cannot be set back to false. "+
			"The approval was delivered to site %q, whose draft expands into a storage cluster; the hub rejects un-approving (a CEL rule on the kind), as the site's draft does. "+
			"Keep approved = true. Nothing was written to the hub.",
			id.ValueString(), cluster.ValueString()))
}

// ssdChange is what an update of a deployment changes: plan modifiers keep known what it
// cannot alter. Outside an update (a create, or the create of a replacement, which Terraform
// plans with no prior state) there is nothing to keep.
type ssdChange struct {
	update bool
	// planned and prior are the planned and prior models of an update.
	planned, prior storageSiteDeploymentModel
	// rediscover: the site's discovery runs anew (another site namespace or discover), so the
	// draft may change whole.
	rediscover bool
	sizing     bool // the sizing applied onto the draft changes
	approved   bool // the approval changes
}

func ssdChangeOf(ctx context.Context, plan tfsdk.Plan, state tfsdk.State, diags *diag.Diagnostics) ssdChange {
	var c ssdChange
	if plan.Raw.IsNull() || state.Raw.IsNull() {
		return c
	}
	if diags.Append(plan.Get(ctx, &c.planned)...); diags.HasError() {
		return c
	}
	if diags.Append(state.Get(ctx, &c.prior)...); diags.HasError() {
		return c
	}
	p, s := c.planned, c.prior
	c.update = true
	c.rediscover = !p.SiteNamespace.Equal(s.SiteNamespace) || !p.Discover.Equal(s.Discover)
	c.sizing = !p.Sizing.Equal(s.Sizing)
	c.approved = !p.Approved.Equal(s.Approved)
	return c
}

// keepSettledDraft plans, on an update, the parts of the reported draft that the update cannot
// alter as they are in state, rather than the whole draft unknown (the framework's default for a
// computed attribute when anything changes). Only what has settled is kept: the site moves on by
// itself while it works, and a value planned known must be what apply reads back.
//   - name, node_sets and node_refs: the discovery's result, unless the discovery runs anew
//     (site_namespace or discover change) or has not named nodes yet;
//   - cluster: the template with the sizing applied, unless the sizing changes or the draft does
//     not show the sizing in state yet;
//   - approved: unless the approval changes or the draft does not carry the one in state yet;
//   - phase and message: while an unapproved draft waits for review (Draft) or once it is
//     Expanded, unless the sizing or the approval changes;
//   - omitted: while every other part stays known.
type keepSettledDraft struct{}

func (keepSettledDraft) Description(context.Context) string {
	return "On an update, the parts of the draft the change cannot alter stay known at plan."
}
func (m keepSettledDraft) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (keepSettledDraft) PlanModifyObject(ctx context.Context, req planmodifier.ObjectRequest, resp *planmodifier.ObjectResponse) {
	if !req.PlanValue.IsUnknown() || req.StateValue.IsNull() || req.StateValue.IsUnknown() {
		return
	}
	c := ssdChangeOf(ctx, req.Plan, req.State, &resp.Diagnostics)
	if !c.update || c.rediscover {
		return
	}
	prior := req.StateValue.Attributes()
	planned := map[string]attr.Value{
		"name": prior["name"], "node_sets": prior["node_sets"], "node_refs": prior["node_refs"],
		"cluster": prior["cluster"], "approved": prior["approved"], "phase": prior["phase"], "message": prior["message"],
		"omitted": prior["omitted"],
	}
	unknown := func(names ...string) {
		for _, n := range append(names, "omitted") { // what did not come back may change with any part
			planned[n] = newUnknown(ssdDraftTypes[n])
		}
	}
	if refs, _ := prior["node_refs"].(types.Set); refs.IsNull() || len(refs.Elements()) == 0 {
		unknown("name", "node_sets", "node_refs")
	}
	cluster, _ := prior["cluster"].(types.Object)
	if c.sizing || !c.prior.Sizing.IsNull() && !objectCovers(c.prior.Sizing, cluster) {
		unknown("cluster")
	}
	if approved, _ := prior["approved"].(types.Bool); c.approved || !approved.Equal(c.prior.Approved) {
		unknown("approved")
	}
	phase, _ := prior["phase"].(types.String)
	waitsForReview := phase.ValueString() == "Draft" && !c.planned.Approved.ValueBool()
	if c.sizing || c.approved || !waitsForReview && phase.ValueString() != "Expanded" {
		unknown("phase", "message")
	}
	v, d := types.ObjectValue(ssdDraftTypes, planned)
	if resp.Diagnostics.Append(d...); !d.HasError() {
		resp.PlanValue = v
	}
}

// newUnknown is the unknown value of type t.
func newUnknown(t attr.Type) attr.Value {
	switch t := t.(type) {
	case types.ObjectType:
		return types.ObjectUnknown(t.AttrTypes)
	case types.ListType:
		return types.ListUnknown(t.ElemType)
	case types.SetType:
		return types.SetUnknown(t.ElemType)
	case basetypes.BoolType:
		return types.BoolUnknown()
	case basetypes.Int64Type:
		return types.Int64Unknown()
	default:
		return types.StringUnknown()
	}
}

// objectCovers tells whether got carries every value that want sets (nested objects compared
// the same way): the draft's template shows the sizing the deployment asks for.
func objectCovers(want, got types.Object) bool {
	if want.IsNull() {
		return true
	}
	if got.IsNull() || got.IsUnknown() || want.IsUnknown() {
		return false
	}
	have := got.Attributes()
	for k, w := range want.Attributes() {
		if w.IsNull() {
			continue
		}
		if wo, ok := w.(types.Object); ok {
			if g, ok := have[k].(types.Object); !ok || !objectCovers(wo, g) {
				return false
			}
			continue
		}
		if !w.Equal(have[k]) {
			return false
		}
	}
	return true
}

// keepStorageClusterID plans, on an update, the storage cluster as far as the update cannot alter
// it. Once reported, its name, uuid and pool identify the cluster, which an update of the same
// deployment does not change (a replacement plans them anew); its phase and nodes may change:
// unknown. While the deployment is not approved and stays so, there is none: null.
type keepStorageClusterID struct{}

func (keepStorageClusterID) Description(context.Context) string {
	return "Once reported, the storage cluster's name, uuid and pool stay known at plan; without approval there is none."
}
func (m keepStorageClusterID) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (keepStorageClusterID) PlanModifyObject(ctx context.Context, req planmodifier.ObjectRequest, resp *planmodifier.ObjectResponse) {
	if !req.PlanValue.IsUnknown() || req.StateValue.IsUnknown() || req.Plan.Raw.IsNull() {
		return
	}
	if req.StateValue.IsNull() {
		// No storage cluster without an approval: none reported, none to come.
		if c := ssdChangeOf(ctx, req.Plan, req.State, &resp.Diagnostics); c.update && !c.prior.Approved.ValueBool() && !c.planned.Approved.ValueBool() {
			resp.PlanValue = types.ObjectNull(ssdStorageClusterTypes)
		}
		return
	}
	prior := req.StateValue.Attributes()
	if uuid, _ := prior["uuid"].(types.String); uuid.IsNull() || uuid.ValueString() == "" {
		return
	}
	planned, d := types.ObjectValue(ssdStorageClusterTypes, map[string]attr.Value{
		"name": prior["name"], "uuid": prior["uuid"], "pool": prior["pool"],
		"phase": types.StringUnknown(), "nodes": types.ListUnknown(types.ObjectType{AttrTypes: ssdNodeTypes}),
	})
	if resp.Diagnostics.Append(d...); !d.HasError() {
		resp.PlanValue = planned
	}
}

// checkStorageSiteDeploymentPlan runs the hub-aware checks. All are warnings (DESIGN.md §4): a
// ManagedCluster is created by OCM registration or by another configuration (a kubernetes_manifest
// of this very plan, say), never by this provider, and a deployment's phase is the site's
// progress, which no plan decides; a request for a cluster that is missing, or approved early,
// waits on the hub without harm.
func checkStorageSiteDeploymentPlan(ctx context.Context, c hubresource.PlanCheck[storageSiteDeploymentModel]) diag.Diagnostics {
	var diags diag.Diagnostics
	if c.Plan == nil {
		id := c.Prior.ID.ValueString()
		diags.AddWarning("The site's storage stays", fmt.Sprintf("Destroying StorageSiteDeployment %s deletes the request on the hub only: "+
			"the discovery, the draft and any storage cluster on site %q stay there (orphaned). Remove them on the site if they are no longer wanted.", id, c.Prior.Cluster.ValueString()))
		return diags
	}
	p := c.Plan
	id := c.Workspace + "/" + p.Name.ValueString()
	replace := c.Replace || c.Prior != nil && (!p.Cluster.Equal(c.Prior.Cluster) || !p.DraftName.Equal(c.Prior.DraftName))
	isNew := c.Prior == nil || replace

	if !p.Cluster.IsUnknown() && (isNew || !p.Cluster.Equal(c.Prior.Cluster)) {
		cluster := p.Cluster.ValueString()
		items, err := c.Hub.List(ctx, siteClusterKind, "", "")
		switch {
		case err != nil:
			diags.AddWarning("Site not checked", fmt.Sprintf("Could not list the hub's ManagedClusters to check that %q is one: %v.", cluster, c.Env.CheckErr(ctx, err)))
		case !hasName(items, cluster):
			diags.AddAttributeWarning(path.Root("cluster"), "Site not on the hub",
				fmt.Sprintf("StorageSiteDeployment %s names cluster %q, which is not a ManagedCluster on the hub. The request is written but waits (phase Pending) "+
					"until a cluster of that name registers with the hub; with wait_for set, apply waits for it until the timeout. "+
					"If the name is a typo, correct it; if the cluster is being registered (or is created by another resource), this resolves itself.", id, cluster))
		default:
			checkClusterBound(ctx, c, fmt.Sprintf("StorageSiteDeployment %s deploys storage on cluster %q", id, cluster), path.Root("cluster"), cluster, "delivers no request to it", &diags)
		}
	}

	if !p.Approved.IsUnknown() && p.Approved.ValueBool() && (isNew || !c.Prior.Approved.ValueBool()) {
		phase := "not on the hub yet"
		if !isNew {
			items, err := c.Hub.List(ctx, storageSiteDeploymentKind, c.Workspace, "")
			if err != nil && !apierrors.IsNotFound(err) {
				diags.AddWarning("Approval not checked", fmt.Sprintf("Could not read StorageSiteDeployment %s to check its phase: %v.", id, c.Env.CheckErr(ctx, err)))
				return diags
			}
			phase = "no phase reported yet"
			for i := range items {
				if items[i].GetName() == p.Name.ValueString() {
					if s, _, _ := unstructured.NestedString(items[i].Object, "status", "phase"); s != "" {
						phase = "phase " + s
					}
				}
			}
		}
		if phase != "phase "+string(v1alpha2.PhaseDrafted) {
			diags.AddAttributeWarning(path.Root("approved"), "Approving a deployment that is not Drafted",
				fmt.Sprintf("StorageSiteDeployment %s is approved while the hub reports it %s, not Drafted: its draft's nodes have not been shown for review. "+
					"The approval is delivered to site %q as soon as the site's draft names nodes, and the site then expands the draft at once. "+
					"To review first, apply with approved = false and wait_for = %q, check draft, then approve.", id, phase, p.Cluster.ValueString(), waitForDrafted))
		}
	}
	return diags
}

func hasName(items []unstructured.Unstructured, name string) bool {
	for i := range items {
		if items[i].GetName() == name {
			return true
		}
	}
	return false
}

// awaitStorageSiteDeployment waits, when wait_for says so, until the hub reports the deployment
// drafted or online for its current generation.
func awaitStorageSiteDeployment(ctx context.Context, c *hub.Client, applied *unstructured.Unstructured, m *storageSiteDeploymentModel) (*unstructured.Unstructured, diag.Diagnostics) {
	want := m.WaitFor.ValueString()
	if m.WaitFor.IsNull() || want == "" {
		return nil, nil
	}
	done := map[string][]string{
		waitForDrafted: {string(v1alpha2.PhaseDrafted), string(v1alpha2.PhaseDeploying), string(v1alpha2.PhaseOnline)},
		waitForOnline:  {string(v1alpha2.PhaseOnline)},
	}[want]
	return awaitPhase(ctx, c, applied, phaseWait{kind: storageSiteDeploymentKind, want: want, done: done, failed: []string{string(v1alpha2.PhaseFailed)},
		on:       func(*unstructured.Unstructured) string { return fmt.Sprintf("site %q", m.Cluster.ValueString()) },
		reporter: "A controller must run on the hub to carry the request to the site: `fleet-controller hub` with its storage-site reconciler, or the simplyblock operator."})
}
