package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/fleetrules"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

type clusterJoinModel struct {
	hubresource.Meta
	Cluster      types.String `tfsdk:"cluster"`
	Site         types.String `tfsdk:"site"`
	IngressID    types.String `tfsdk:"ingress_id"`
	Capabilities types.Set    `tfsdk:"capabilities"`
	Labels       types.List   `tfsdk:"labels"`
	Joined       types.Bool   `tfsdk:"joined"`
	Ready        types.Bool   `tfsdk:"ready"`
	Reason       types.String `tfsdk:"reason"`
	Message      types.String `tfsdk:"message"`
}

var newClusterJoinResource = withSitePreload[clusterJoinModel, *clusterJoinModel](hubresource.New[clusterJoinModel](hubresource.Kind[clusterJoinModel]{
	TypeName: "cluster_join",
	Object:   fleetClusterJoinKind,
	Description: "Joins an OCM ManagedCluster to a site: a `FleetClusterJoin` (`fleet.umkim.io/v1alpha1`) in the workspace that binds " +
		"`cluster` to `site` (a `fleet_site`) and, optionally, to one of the site's ingress entries (`ingress_id`).\n\n" +
		"`fleet-controller hub` (its `cluster-joins` reconciler) labels the ManagedCluster `fleet.site=<site>` and " +
		"`capability.fleet.umkim.io/<name>=true` for each of `capabilities`, and only those: it records the labels it set in the " +
		"cluster's `fleet.umkim.io/join-labels` annotation, so that removing a capability or the join removes exactly its labels and " +
		"leaves everyone else's; a label the cluster already has with another value is never overwritten (`LabelConflict`, naming it). " +
		"It acts only on a cluster of a ManagedClusterSet bound to the workspace (else `NotBound`, and no label). " +
		"It reports `joined` and `ready` with a `reason`: `Labelled`, `Ready`, `ClusterNotFound`, `NotBound`, `LabelConflict`, " +
		"`SiteNotFound`, `ClusterAlreadyJoined` (a cluster joins one site), `IngressNotFound`, or `IngressTaken` (a `port_forward` " +
		"entry serves one cluster: the join created first holds it).\n\n" +
		"Plan-time checks against the hub as the plan began (see the OCI routing guide on the order Terraform plans in):\n\n" +
		"- `ingress_id` must be an entry of the site. An **error** when the site is on the hub and no Terraform configuration " +
		"manages it; a **warning** when a `fleet_site` manages it (this plan may add the entry) or the site is not on the hub yet " +
		"(it may be created by this plan).\n" +
		"- A `port_forward` entry serves one cluster. When another join on the hub already holds the entry, the plan is an **error** " +
		"naming it if neither that join nor the site is managed by Terraform (no resource of this plan can free the entry), and a " +
		"**warning** otherwise (this plan may move that join off the entry, destroy it, or make the entry `reverse_proxy`): apply " +
		"then writes the join, which stays not Ready (`IngressTaken`) while the other holds the entry. Two joins of the same plan " +
		"on one entry are not seen at plan (a check never looks at its siblings); the hub reports the later one `IngressTaken`.\n" +
		"- `cluster` must be a ManagedCluster: a **warning** when it is not, as for `fleet_storage_site_deployment`: ManagedClusters " +
		"are registered by OCM or made by other configurations, never by this provider, so this plan may create it; the join waits " +
		"(`ClusterNotFound`) and applies its labels once the cluster registers.\n" +
		"- `cluster` must be in a ManagedClusterSet bound to the workspace: a **warning** naming the sets that hold it when it is not " +
		"(a ManagedClusterSetBinding of this plan or another configuration may bind one); the join labels nothing until then (`NotBound`).",
	Attributes: map[string]schema.Attribute{
		"cluster": schema.StringAttribute{Required: true,
			MarkdownDescription: "Name of the OCM ManagedCluster to join. Changing it replaces the join (the old cluster's labels are removed).",
			Validators:          []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(domainRE, "must be a ManagedCluster name")},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"site": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the `fleet_site` (FleetSite) in the same workspace.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg)}},
		"ingress_id": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Id of one of the site's `ingress` entries the cluster is reached through. A `port_forward` entry serves one cluster; `reverse_proxy` entries may be shared.",
			Validators:          []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg)}},
		"capabilities": schema.SetAttribute{Optional: true, ElementType: types.StringType,
			MarkdownDescription: "Capabilities of the cluster, each labelled `capability.fleet.umkim.io/<name>=true` on the ManagedCluster.",
			Validators: []validator.Set{setvalidator.SizeAtMost(64),
				setvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg))}},
		"labels": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "The label keys the hub's reconciler set on the ManagedCluster; null until reported."},
		"joined":  schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the cluster carries the join's labels; null until `fleet-controller hub` reports it."},
		"ready":   schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the cluster is joined and its ingress entry usable; null until reported."},
		"reason":  schema.StringAttribute{Computed: true, MarkdownDescription: "Reason of the Ready condition, e.g. `Ready`, `IngressTaken`, `ClusterNotFound`."},
		"message": schema.StringAttribute{Computed: true, MarkdownDescription: "Message of the Ready condition: what the join waits for, naming the join that holds a taken entry."},
	},
	Owned:     []string{"spec"},
	Expand:    expandClusterJoin,
	Flatten:   flattenClusterJoin,
	CheckPlan: checkClusterJoinPlan,
}))

func expandClusterJoin(_ context.Context, req hubresource.ExpandRequest[clusterJoinModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	m := req.Plan
	spec := map[string]any{"cluster": m.Cluster.ValueString(), "site": m.Site.ValueString()}
	if !m.IngressID.IsNull() {
		spec["edge"] = map[string]any{"ingressId": m.IngressID.ValueString()}
	}
	if !m.Capabilities.IsNull() {
		var caps []string
		for _, e := range m.Capabilities.Elements() {
			caps = append(caps, e.(types.String).ValueString())
		}
		sort.Strings(caps)
		spec["capabilities"] = toAny(caps)
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, diags
}

func flattenClusterJoin(_ context.Context, obj *unstructured.Unstructured, m *clusterJoinModel) diag.Diagnostics {
	var diags diag.Diagnostics
	var j v1alpha1.FleetClusterJoin
	if !decodeHub(obj, &j, &diags) {
		return diags
	}
	m.Cluster = types.StringValue(j.Spec.Cluster)
	m.Site = types.StringValue(j.Spec.Site)
	m.IngressID = stringOrNull(j.IngressID())
	m.Capabilities = keepEmpty(m.Capabilities, j.Spec.Capabilities, func(v []attr.Value) attr.Value { return types.SetValueMust(types.StringType, v) }, types.SetNull(types.StringType)).(types.Set)

	m.Labels, m.Joined, m.Ready, m.Reason, m.Message = types.ListNull(types.StringType), types.BoolNull(), types.BoolNull(), types.StringNull(), types.StringNull()
	if j.Status.ObservedGeneration == 0 {
		return diags
	}
	m.Labels = types.ListValueMust(types.StringType, strValues(j.Status.Labels))
	for _, c := range j.Status.Conditions {
		switch c.Type {
		case v1alpha1.JoinedCondition:
			m.Joined = types.BoolValue(c.Status == "True")
		case v1alpha1.ReadyCondition:
			m.Ready = types.BoolValue(c.Status == "True")
			m.Reason, m.Message = stringOrNull(c.Reason), stringOrNull(c.Message)
		}
	}
	return diags
}

// checkClusterJoinPlan checks the join against the hub as the plan began. Its decisions, under the
// rule that an error is only for what no other resource of the plan can change:
//
//   - the cluster missing is a warning: ManagedClusters are registered by OCM or created by other
//     configurations (this plan's, say), never by this provider;
//   - the site missing is a warning (a fleet_site of this plan may create it), and the entry then
//     cannot be checked; an entry missing from a site on the hub is an error only when no
//     Terraform configuration manages the site, a warning when one does (it may add the entry);
//   - a port_forward entry held by another join on the hub (created first) is an error naming it
//     only when neither that join nor the site is managed by Terraform; else a warning: this plan
//     may move or destroy that join, or make the entry reverse_proxy.
//
// Only what the change touches is checked: the cluster when new, the site and entry when new or
// changed, so that an unchanged join never blocks a plan.
func checkClusterJoinPlan(ctx context.Context, c hubresource.PlanCheck[clusterJoinModel]) diag.Diagnostics {
	var diags diag.Diagnostics
	p := c.Plan
	if p == nil {
		return diags
	}
	name := p.Name.ValueString()
	id := c.Workspace + "/" + name
	isNew := c.Prior == nil || c.Replace || !p.Cluster.Equal(c.Prior.Cluster)

	if !p.Cluster.IsUnknown() && isNew {
		cluster := p.Cluster.ValueString()
		items, err := c.Hub.List(ctx, siteClusterKind, "", "")
		switch {
		case err != nil:
			diags.AddWarning("Cluster not checked", fmt.Sprintf("Could not list the hub's ManagedClusters to check that %q is one: %v.", cluster, c.Env.CheckErr(ctx, err)))
		case !hasName(items, cluster):
			diags.AddAttributeWarning(path.Root("cluster"), "Cluster not on the hub",
				fmt.Sprintf("FleetClusterJoin %s names cluster %q, which is not a ManagedCluster on the hub. The join is written but waits (ClusterNotFound) until a cluster of that name registers; "+
					"ManagedClusters are registered by OCM or created by other configurations, not by this provider. If the name is a typo, correct it.", id, cluster))
		default:
			checkClusterBound(ctx, c, fmt.Sprintf("FleetClusterJoin %s joins cluster %q", id, cluster), path.Root("cluster"), cluster, "labels nothing on the cluster", &diags)
		}
	}

	if p.Site.IsUnknown() || p.IngressID.IsUnknown() || p.IngressID.IsNull() {
		return diags
	}
	if !isNew && p.Site.Equal(c.Prior.Site) && p.IngressID.Equal(c.Prior.IngressID) {
		return diags
	}
	site, entry := p.Site.ValueString(), p.IngressID.ValueString()
	sites, err := c.Hub.List(ctx, fleetSiteKind, c.Workspace, "")
	if err != nil {
		diags.AddWarning("Site not checked", fmt.Sprintf("Could not list the FleetSites of workspace %s: %v.", c.Workspace, c.Env.CheckErr(ctx, err)))
		return diags
	}
	var siteObj *unstructured.Unstructured
	for i := range sites {
		if sites[i].GetName() == site {
			siteObj = &sites[i]
		}
	}
	if siteObj == nil {
		if c.Env.Planned(fleetSiteKind, c.Workspace, site) {
			return diags // a fleet_site of this plan creates it; the controller checks the entry (IngressNotFound)
		}
		diags.AddAttributeWarning(path.Root("site"), "Site not on the hub",
			fmt.Sprintf("FleetClusterJoin %s names site %q, which is not a FleetSite of workspace %s on the hub, and no fleet_site of this configuration planned before the join creates it, "+
				"so ingress_id %q could not be checked. If one does, refer to it as fleet_site.<label>.name, so that Terraform creates it first; otherwise correct the name. "+
				"Until the site exists the join waits (SiteNotFound).", id, site, c.Workspace, entry))
		return diags
	}
	var s v1alpha1.FleetSite
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(siteObj.Object, &s); err != nil {
		diags.AddWarning("Site not checked", fmt.Sprintf("FleetSite %s/%s on the hub is unreadable: %v.", c.Workspace, site, err))
		return diags
	}
	siteManaged := c.Env.Changeable(siteObj)
	e, ok := s.Entry(entry)
	if !ok {
		msg := fmt.Sprintf("FleetSite %s/%s has no ingress entry %q (it has: %s).", c.Workspace, site, entry, strings.Join(fleetrules.EntryIDs(&s), ", "))
		if siteManaged {
			diags.AddAttributeWarning(path.Root("ingress_id"), "Ingress entry not on the site",
				msg+" The site is managed by Terraform: if this plan adds the entry, this resolves itself; otherwise the join is not Ready (IngressNotFound) after apply.")
		} else {
			diags.AddAttributeError(path.Root("ingress_id"), "Ingress entry not on the site",
				msg+fmt.Sprintf(" Of the site, %s, so no resource of this plan can add the entry: bind the join to one of the site's entries, or have the entry added to the site. Nothing was written to the hub.",
					c.Env.Unchangeable(hub.OwnerOf(siteObj))))
		}
		return diags
	}
	if e.Method != v1alpha1.IngressPortForward {
		return diags
	}
	joins, err := c.Hub.List(ctx, fleetClusterJoinKind, c.Workspace, "")
	if err != nil {
		diags.AddWarning("Ingress entry not checked", fmt.Sprintf("Could not list the FleetClusterJoins of workspace %s: %v.", c.Workspace, c.Env.CheckErr(ctx, err)))
		return diags
	}
	holder := portForwardHolder(joins, name, !isNew, site, entry)
	if holder == nil {
		return diags
	}
	hc, _, _ := unstructured.NestedString(holder.Object, "spec", "cluster")
	msg := fmt.Sprintf("Ingress entry %q of FleetSite %s/%s is a port_forward entry, which serves one cluster, and FleetClusterJoin %s/%s (cluster %s) on the hub holds it.",
		entry, c.Workspace, site, c.Workspace, holder.GetName(), hc)
	if c.Env.Changeable(holder) || siteManaged {
		diags.AddAttributeWarning(path.Root("ingress_id"), "port_forward entry already taken",
			msg+fmt.Sprintf(" That join or the site is managed by Terraform, so this plan may free the entry (move or destroy that join, or make the entry reverse_proxy); "+
				"otherwise apply writes FleetClusterJoin %s, which is not Ready (IngressTaken) while the other holds the entry.", id))
		return diags
	}
	diags.AddAttributeError(path.Root("ingress_id"), "port_forward entry already taken",
		msg+fmt.Sprintf(" Of that join, %s; of the site, %s: so no resource of this plan can free the entry. Bind this join to another entry (or a reverse_proxy entry, which clusters may share), "+
			"or have the other join removed. Nothing was written to the hub.", c.Env.Unchangeable(hub.OwnerOf(holder)), c.Env.Unchangeable(hub.OwnerOf(siteObj))))
	return diags
}

// portForwardHolder is the join on the hub that holds entry of site ahead of join self, by
// fleetrules.EntryHolder, the reconciler's rule; nil when that is self or none. selfOnHub says
// whether self is on the hub already (an update), where its own creation time counts wherever it
// is bound now; a new join is created after every join on the hub, so it holds nothing ahead of
// them.
func portForwardHolder(joins []unstructured.Unstructured, self string, selfOnHub bool, site, entry string) *unstructured.Unstructured {
	typed := make([]v1alpha1.FleetClusterJoin, 0, len(joins))
	for i := range joins {
		var j v1alpha1.FleetClusterJoin
		if runtime.DefaultUnstructuredConverter.FromUnstructured(joins[i].Object, &j) != nil {
			continue
		}
		if j.Name == self {
			if !selfOnHub {
				continue
			}
			j.Spec.Site, j.Spec.Edge = site, &v1alpha1.ClusterJoinEdge{IngressID: entry} // its own place in line, bound as planned
		}
		typed = append(typed, j)
	}
	h := fleetrules.EntryHolder(typed, site, entry)
	if h == nil || h.Name == self {
		return nil
	}
	return byName(joins, h.Name)
}
