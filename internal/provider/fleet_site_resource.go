package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

var (
	// fleetSiteKind is the FleetSite of api/v1alpha1.
	fleetSiteKind = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("fleetsites"), Kind: "FleetSite"}
	// fleetClusterJoinKind is the FleetClusterJoin of api/v1alpha1.
	fleetClusterJoinKind = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("fleetclusterjoins"), Kind: "FleetClusterJoin"}
	// fleetChartKind is the FleetChart of api/v1alpha1.
	fleetChartKind = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("fleetcharts"), Kind: "FleetChart"}
	// fleetAppKind is the FleetApp of api/v1alpha1.
	fleetAppKind = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("fleetapps"), Kind: "FleetApp"}
	// fleetAppRouteKind is the FleetAppRoute of api/v1alpha1.
	fleetAppRouteKind = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("fleetapproutes"), Kind: "FleetAppRoute"}
)

// sitesInUse holds the provider instances (their *hubresource.Env) that configured a fleet_site
// or fleet_cluster_join resource: only those preload the lists the site and join checks read, so
// that a configuration without sites or joins sends no request for them.
var sitesInUse sync.Map

// preloadSites reads what the site and join checks read, so that the apply-time re-plan sees
// the hub as it was before this process wrote anything (hubresource.Env.Preload). The framework
// configures a resource before each of its operations, so env is marked before the first plan,
// write or delete of a site or join in the process.
func preloadSites(ctx context.Context, env *hubresource.Env, l hub.Lister, ws string) {
	if _, ok := sitesInUse.Load(env); !ok {
		return
	}
	_, _ = l.List(ctx, fleetSiteKind, ws, "")
	_, _ = l.List(ctx, fleetClusterJoinKind, ws, "")
	_, _ = l.List(ctx, siteClusterKind, "", "")
}

type fleetSiteModel struct {
	hubresource.Meta
	DisplayName    types.String `tfsdk:"display_name"`
	Ingress        types.List   `tfsdk:"ingress"`
	HubGateway     types.Object `tfsdk:"hub_gateway"`
	Jumphost       types.Object `tfsdk:"jumphost"`
	JoinedClusters types.Int64  `tfsdk:"joined_clusters"`
	EdgeConfigMap  types.String `tfsdk:"edge_config_map"`
}

type (
	siteIngress struct {
		ID      string     `tfsdk:"id"`
		Method  string     `tfsdk:"method"`
		Address string     `tfsdk:"address"`
		Ports   *sitePorts `tfsdk:"ports"`
	}
	sitePorts struct {
		HTTP  *int64 `tfsdk:"http"`
		HTTPS *int64 `tfsdk:"https"`
	}
	siteGateway struct {
		Enabled bool    `tfsdk:"enabled"`
		Domain  *string `tfsdk:"domain"`
	}
	siteSecretRef struct {
		Name string `tfsdk:"name"`
		Key  string `tfsdk:"key"`
	}
	siteJumphost struct {
		Host                 string         `tfsdk:"host"`
		Port                 *int64         `tfsdk:"port"`
		User                 *string        `tfsdk:"user"`
		CredentialsSecretRef *siteSecretRef `tfsdk:"credentials_secret_ref"`
	}
)

var (
	sitePortsTypes    = map[string]attr.Type{"http": types.Int64Type, "https": types.Int64Type}
	siteIngressTypes  = map[string]attr.Type{"id": types.StringType, "method": types.StringType, "address": types.StringType, "ports": types.ObjectType{AttrTypes: sitePortsTypes}}
	siteGatewayTypes  = map[string]attr.Type{"enabled": types.BoolType, "domain": types.StringType}
	siteSecretTypes   = map[string]attr.Type{"name": types.StringType, "key": types.StringType}
	siteJumphostTypes = map[string]attr.Type{"host": types.StringType, "port": types.Int64Type, "user": types.StringType, "credentials_secret_ref": types.ObjectType{AttrTypes: siteSecretTypes}}
)

var (
	portValidators = []validator.Int64{int64validator.Between(1, 65535)}
	hostRE         = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9.:]*[A-Za-z0-9])?$`)
	domainRE       = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

const (
	methodPortForward  = string(v1alpha1.IngressPortForward)
	methodReverseProxy = string(v1alpha1.IngressReverseProxy)
)

// preloadingResource is the engine's resource for a kind whose checks read lists a preload
// reads, marking its provider instance in inUse when configured.
type preloadingResource[M any, P interface {
	*M
	hubresource.Model
}] struct {
	*hubresource.Resource[M, P]
	inUse *sync.Map
}

func (r preloadingResource[M, P]) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if env, ok := req.ProviderData.(*hubresource.Env); ok && env != nil {
		r.inUse.Store(env, true)
	}
	r.Resource.Configure(ctx, req, resp)
}

// withPreload wraps a resource constructor of the engine in preloadingResource.
func withPreload[M any, P interface {
	*M
	hubresource.Model
}](inUse *sync.Map, newResource func() resource.Resource) func() resource.Resource {
	return func() resource.Resource {
		return preloadingResource[M, P]{newResource().(*hubresource.Resource[M, P]), inUse}
	}
}

// withSitePreload wraps a site or join resource: its provider instance preloads preloadSites.
func withSitePreload[M any, P interface {
	*M
	hubresource.Model
}](newResource func() resource.Resource) func() resource.Resource {
	return withPreload[M, P](&sitesInUse, newResource)
}

var newFleetSiteResource = withSitePreload[fleetSiteModel, *fleetSiteModel](hubresource.New[fleetSiteModel](hubresource.Kind[fleetSiteModel]{
	TypeName: "site",
	Object:   fleetSiteKind,
	Description: "A site of the fleet: a `FleetSite` (`fleet.umkim.io/v1alpha1`) in the workspace — a logical location with named " +
		"ingress entries from the WAN, an optional hub gateway and an optional jumphost. Clusters join a site with " +
		"`fleet_cluster_join`.\n\n" +
		"Each `ingress` entry is one way in: `port_forward` (the site's WAN router forwards ports of `address` to the NodePorts " +
		"of **one** spoke's Traefik, given in `ports`; one cluster per entry) or `reverse_proxy` (an external reverse proxy at " +
		"`address` terminates TLS and forwards by host name; many clusters may share it). A site with no ingress entry and no " +
		"enabled `hub_gateway` has no fleet-managed WAN path (an air-gapped site): the plan of a `fleet_app_route` that would need one warns.\n\n" +
		"`fleet-controller hub` (its `sites` reconciler) reports `joined_clusters` (the Ready joins bound to the site) and " +
		"publishes the site's ingress data in the ConfigMap `edge_config_map` (`fleet-site-<name>-edge`) in the workspace.\n\n" +
		"Plan-time checks: entry ids must be unique, a `port_forward` entry must name a port, an enabled hub gateway needs a " +
		"`domain` (errors, from the configuration alone); removing or changing an entry that joins on the hub " +
		"are bound to, are warnings that name the joins (a join of the same plan may be moving off the entry).",
	Attributes: map[string]schema.Attribute{
		"display_name": schema.StringAttribute{Optional: true, MarkdownDescription: "The site's name for people.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 253)}},
		"ingress": schema.ListNestedAttribute{
			Optional:            true,
			MarkdownDescription: "The site's ways in from the WAN, each with an `id` unique in the site that a `fleet_cluster_join`'s `ingress_id` names.",
			Validators:          []validator.List{listvalidator.SizeBetween(1, 32)},
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"id": schema.StringAttribute{Required: true, MarkdownDescription: "The entry's id within the site (a DNS label).",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelRE, dnsLabelMsg)}},
				"method": schema.StringAttribute{Required: true,
					MarkdownDescription: "`port_forward` (WAN port-forwards to one spoke's Traefik NodePorts: one cluster per entry) or `reverse_proxy` (an external reverse proxy terminates TLS: clusters may share the entry).",
					Validators:          []validator.String{stringvalidator.OneOf(methodPortForward, methodReverseProxy)}},
				"address": schema.StringAttribute{Required: true, MarkdownDescription: "The entry's public IP address or host name.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(hostRE, "must be an IP address or a host name")}},
				"ports": schema.SingleNestedAttribute{Optional: true,
					MarkdownDescription: "The spoke's Traefik NodePorts the entry forwards to; required for `port_forward` (at least one).",
					Attributes: map[string]schema.Attribute{
						"http":  schema.Int64Attribute{Optional: true, MarkdownDescription: "NodePort of Traefik's HTTP entry point.", Validators: portValidators},
						"https": schema.Int64Attribute{Optional: true, MarkdownDescription: "NodePort of Traefik's HTTPS entry point.", Validators: portValidators},
					}},
			}},
		},
		"hub_gateway": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: "Publishes the site's apps through the hub's gateway.",
			Attributes: map[string]schema.Attribute{
				"enabled": schema.BoolAttribute{Required: true, MarkdownDescription: "Turns the hub gateway on for the site."},
				"domain": schema.StringAttribute{Optional: true, MarkdownDescription: "DNS domain the hub gateway serves the site's apps under; required when enabled.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(domainRE, "must be a lowercase DNS name")}},
			},
		},
		"jumphost": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: "An SSH bastion into the site. Its credentials are never in the configuration or state: `credentials_secret_ref` names a Secret key in the workspace.",
			Attributes: map[string]schema.Attribute{
				"host": schema.StringAttribute{Required: true, MarkdownDescription: "The jumphost's address or host name.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 253)}},
				"port": schema.Int64Attribute{Optional: true, MarkdownDescription: "SSH port; unset means 22.", Validators: portValidators},
				"user": schema.StringAttribute{Optional: true, MarkdownDescription: "SSH user.", Validators: []validator.String{stringvalidator.LengthBetween(1, 64)}},
				"credentials_secret_ref": schema.SingleNestedAttribute{Optional: true,
					MarkdownDescription: "The Secret (in the workspace) and key that hold the SSH private key or password.",
					Attributes: map[string]schema.Attribute{
						"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the Secret.",
							Validators: []validator.String{stringvalidator.LengthBetween(1, 253)}},
						"key": schema.StringAttribute{Required: true, MarkdownDescription: "Key within the Secret.",
							Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(regexp.MustCompile(`^[-._a-zA-Z0-9]+$`), "must be a Secret key")}},
					}},
			},
		},
		"joined_clusters": schema.Int64Attribute{Computed: true,
			MarkdownDescription: "How many `FleetClusterJoin`s of the workspace bind a cluster to the site and are Ready, as `fleet-controller hub` reports; null until reported."},
		"edge_config_map": schema.StringAttribute{Computed: true,
			MarkdownDescription: "Name of the ConfigMap in the workspace that carries the site's ingress data, once `fleet-controller hub` wrote it."},
	},
	Owned:     []string{"spec"},
	Validate:  validateFleetSite,
	Expand:    expandFleetSite,
	Flatten:   flattenFleetSite,
	CheckPlan: checkFleetSitePlan,
}))

// siteIngressOf reads the configured entries; ok is false when any is unknown.
func siteIngressOf(ctx context.Context, m *fleetSiteModel, diags *diag.Diagnostics) (entries []siteIngress, ok bool) {
	if m.Ingress.IsUnknown() {
		return nil, false
	}
	if m.Ingress.IsNull() {
		return nil, true
	}
	for _, e := range m.Ingress.Elements() {
		if !allKnownDeep(e) {
			return nil, false
		}
	}
	diags.Append(m.Ingress.ElementsAs(ctx, &entries, false)...)
	return entries, !diags.HasError()
}

// allKnownDeep tells whether v and everything in it is known.
func allKnownDeep(v attr.Value) bool {
	if v.IsUnknown() {
		return false
	}
	if o, ok := v.(types.Object); ok && !o.IsNull() {
		for _, a := range o.Attributes() {
			if !allKnownDeep(a) {
				return false
			}
		}
	}
	return true
}

// validateFleetSite checks what the configuration alone decides: unique entry ids, ports on a
// port_forward entry, a domain for an enabled hub gateway.
func validateFleetSite(ctx context.Context, m *fleetSiteModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.Ingress.IsNull() && !m.Ingress.IsUnknown() {
		seen := map[string]int{}
		for i, e := range m.Ingress.Elements() {
			o, ok := e.(types.Object)
			if !ok || o.IsNull() || o.IsUnknown() {
				continue
			}
			a := o.Attributes()
			id, _ := a["id"].(types.String)
			method, _ := a["method"].(types.String)
			ports, _ := a["ports"].(types.Object)
			p := path.Root("ingress").AtListIndex(i)
			if !id.IsUnknown() && !id.IsNull() {
				if j, dup := seen[id.ValueString()]; dup {
					diags.AddAttributeError(p.AtName("id"), "Duplicate ingress id",
						fmt.Sprintf("ingress[%d] and ingress[%d] are both %q: each entry of a site needs its own id, which joins name.", j, i, id.ValueString()))
				}
				seen[id.ValueString()] = i
			}
			if method.IsUnknown() || method.ValueString() != methodPortForward || ports.IsUnknown() {
				continue
			}
			hasPort := false
			if !ports.IsNull() {
				for _, v := range ports.Attributes() {
					hasPort = hasPort || !v.IsNull()
				}
			}
			if !hasPort {
				diags.AddAttributeError(p.AtName("ports"), "port_forward entry without ports",
					fmt.Sprintf("ingress[%d] (%s) is a port_forward entry: set ports.http or ports.https, the spoke's Traefik NodePorts the WAN router forwards to.", i, id.ValueString()))
			}
		}
	}
	if g := m.HubGateway; !g.IsNull() && !g.IsUnknown() {
		enabled, _ := g.Attributes()["enabled"].(types.Bool)
		domain, _ := g.Attributes()["domain"].(types.String)
		if !enabled.IsUnknown() && enabled.ValueBool() && domain.IsNull() {
			diags.AddAttributeError(path.Root("hub_gateway").AtName("domain"), "Hub gateway without a domain",
				"hub_gateway.enabled is true: set hub_gateway.domain, the DNS domain the hub gateway serves the site's apps under.")
		}
	}
	return diags
}

func expandFleetSite(ctx context.Context, req hubresource.ExpandRequest[fleetSiteModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	m := req.Plan
	spec := map[string]any{}
	if !m.DisplayName.IsNull() {
		spec["displayName"] = m.DisplayName.ValueString()
	}
	entries, _ := siteIngressOf(ctx, m, &diags)
	if !m.Ingress.IsNull() {
		var list []any
		for _, e := range entries {
			entry := map[string]any{"id": e.ID, "method": e.Method, "address": e.Address}
			if e.Ports != nil {
				ports := map[string]any{}
				if e.Ports.HTTP != nil {
					ports["http"] = *e.Ports.HTTP
				}
				if e.Ports.HTTPS != nil {
					ports["https"] = *e.Ports.HTTPS
				}
				entry["ports"] = ports
			}
			list = append(list, entry)
		}
		spec["edge"] = map[string]any{"ingress": list}
	}
	if !m.HubGateway.IsNull() {
		var g siteGateway
		diags.Append(m.HubGateway.As(ctx, &g, basetypes.ObjectAsOptions{})...)
		gw := map[string]any{"enabled": g.Enabled}
		if g.Domain != nil {
			gw["domain"] = *g.Domain
		}
		spec["hubGateway"] = gw
	}
	if !m.Jumphost.IsNull() {
		var j siteJumphost
		diags.Append(m.Jumphost.As(ctx, &j, basetypes.ObjectAsOptions{})...)
		jh := map[string]any{"host": j.Host}
		if j.Port != nil {
			jh["port"] = *j.Port
		}
		if j.User != nil {
			jh["user"] = *j.User
		}
		if j.CredentialsSecretRef != nil {
			jh["credentialsSecretRef"] = map[string]any{"name": j.CredentialsSecretRef.Name, "key": j.CredentialsSecretRef.Key}
		}
		spec["jumphost"] = jh
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, diags
}

// flattenFleetSite reads the object's spec and status. A field the object does not carry is
// null, so that an out-of-band change shows as drift.
func flattenFleetSite(ctx context.Context, obj *unstructured.Unstructured, m *fleetSiteModel) diag.Diagnostics {
	var diags diag.Diagnostics
	var s v1alpha1.FleetSite
	if !decodeHub(obj, &s, &diags) {
		return diags
	}
	m.DisplayName = stringOrNull(s.Spec.DisplayName)
	if _, ok, _ := unstructured.NestedSlice(obj.Object, "spec", "edge", "ingress"); !ok {
		m.Ingress = types.ListNull(types.ObjectType{AttrTypes: siteIngressTypes})
	} else {
		var entries []siteIngress
		for _, e := range s.Spec.Edge.Ingress {
			v := siteIngress{ID: e.ID, Method: string(e.Method), Address: e.Address}
			if e.Ports != nil {
				v.Ports = &sitePorts{HTTP: optPort(e.Ports.HTTP), HTTPS: optPort(e.Ports.HTTPS)}
			}
			entries = append(entries, v)
		}
		l, d := types.ListValueFrom(ctx, types.ObjectType{AttrTypes: siteIngressTypes}, entries)
		diags.Append(d...)
		m.Ingress = l
	}
	m.HubGateway = types.ObjectNull(siteGatewayTypes)
	if g := s.Spec.HubGateway; g != nil {
		m.HubGateway = objectFrom(ctx, siteGatewayTypes, siteGateway{Enabled: g.Enabled, Domain: optString(g.Domain)}, &diags)
	}
	m.Jumphost = types.ObjectNull(siteJumphostTypes)
	if j := s.Spec.Jumphost; j != nil {
		v := siteJumphost{Host: j.Host, Port: optPort(j.Port), User: optString(j.User)}
		if r := j.CredentialsSecretRef; r != nil {
			v.CredentialsSecretRef = &siteSecretRef{Name: r.Name, Key: r.Key}
		}
		m.Jumphost = objectFrom(ctx, siteJumphostTypes, v, &diags)
	}
	m.JoinedClusters = types.Int64Null()
	if s.Status.ObservedGeneration > 0 {
		m.JoinedClusters = types.Int64Value(int64(s.Status.JoinedClusters))
	}
	m.EdgeConfigMap = stringOrNull(s.Status.EdgeConfigMap)
	return diags
}

func optPort(p int32) *int64 {
	if p == 0 {
		return nil
	}
	v := int64(p)
	return &v
}

// checkFleetSitePlan warns of entries removed, or turned into port_forward entries, that joins on
// the hub are bound to: warnings, since a join of this plan may be moving off the entry. A site
// without a WAN path is no warning of its own (an air-gapped site is meant to have none): the plan
// of an app route whose site cannot serve it says so.
func checkFleetSitePlan(ctx context.Context, c hubresource.PlanCheck[fleetSiteModel]) diag.Diagnostics {
	var diags diag.Diagnostics
	if c.Plan == nil {
		return diags
	}
	p := c.Plan
	id := c.Workspace + "/" + p.Name.ValueString()
	entries, known := siteIngressOf(ctx, p, &diags)
	if !known || p.HubGateway.IsUnknown() {
		return diags
	}
	if c.Prior == nil || c.Replace {
		return diags
	}
	joins, err := c.Hub.List(ctx, fleetClusterJoinKind, c.Workspace, "")
	if err != nil {
		diags.AddWarning("Joins not checked", fmt.Sprintf("Could not list the FleetClusterJoins of workspace %s: %v.", c.Workspace, c.Env.CheckErr(ctx, err)))
		return diags
	}
	planned := map[string]siteIngress{}
	for _, e := range entries {
		planned[e.ID] = e
	}
	bound := map[string][]string{}
	for i := range joins {
		site, _, _ := unstructured.NestedString(joins[i].Object, "spec", "site")
		entry, _, _ := unstructured.NestedString(joins[i].Object, "spec", "edge", "ingressId")
		if site == p.Name.ValueString() && entry != "" {
			bound[entry] = append(bound[entry], joins[i].GetName())
		}
	}
	for _, entry := range sortedKeys(bound) {
		names := bound[entry]
		slices.Sort(names)
		e, ok := planned[entry]
		switch {
		case !ok:
			diags.AddAttributeWarning(path.Root("ingress"), "Ingress entry removed while joins use it",
				fmt.Sprintf("FleetSite %s no longer has ingress entry %q, which FleetClusterJoins %s on the hub are bound to: after apply they are not Ready (IngressNotFound) "+
					"unless this plan moves them to another entry or destroys them.", id, entry, strings.Join(names, ", ")))
		case e.Method == methodPortForward && len(names) > 1:
			diags.AddAttributeWarning(path.Root("ingress"), "port_forward entry shared by joins",
				fmt.Sprintf("Ingress entry %q of FleetSite %s is port_forward, which serves one cluster, and FleetClusterJoins %s on the hub are bound to it: "+
					"only the one created first is Ready, the others are not (IngressTaken), unless this plan moves them to another entry.", entry, id, strings.Join(names, ", ")))
		}
	}
	return diags
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
