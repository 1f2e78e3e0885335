package provider

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/fleetrules"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

type appRouteModel struct {
	hubresource.Meta
	App     types.String `tfsdk:"app"`
	Mode    types.String `tfsdk:"mode"`
	Host    types.String `tfsdk:"host"`
	Path    types.String `tfsdk:"path"`
	Service types.Object `tfsdk:"service"`
	TLS     types.Object `tfsdk:"tls"`
	URL     types.String `tfsdk:"url"`
	Ready   types.Bool   `tfsdk:"ready"`
	Reason  types.String `tfsdk:"reason"`
	Message types.String `tfsdk:"message"`
}

type (
	routeService struct {
		Name string `tfsdk:"name"`
		Port int64  `tfsdk:"port"`
	}
	routeTLS struct {
		SecretName *string `tfsdk:"secret_name"`
		ACMEIssuer *string `tfsdk:"acme_issuer"`
	}
)

var (
	routeServiceTypes = map[string]attr.Type{"name": types.StringType, "port": types.Int64Type}
	routeTLSTypes     = map[string]attr.Type{"secret_name": types.StringType, "acme_issuer": types.StringType}
	routeHostRE       = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	serviceNameRE     = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
)

const (
	routeModeHub  = string(v1alpha1.RouteHub)
	routeModeSite = string(v1alpha1.RouteSite)
	routeModeNone = string(v1alpha1.RouteNone)
)

var newAppRouteResource = withPreload[appRouteModel, *appRouteModel](&appsInUse, hubresource.New[appRouteModel](appRouteKind))

// appRouteKind declares fleet_app_route.
var appRouteKind = hubresource.Kind[appRouteModel]{
	TypeName: "app_route",
	Object:   fleetAppRouteKind,
	Description: "Gives a `fleet_app` a public URL: a `FleetAppRoute` (`fleet.umkim.io/v1alpha1`) in the workspace that publishes the " +
		"app's Service (`service`) under `host` and `path`. `mode` says where the URL is served: `hub` (the hub's gateway forwards to " +
		"the site; needs the site's `hub_gateway`), `site` (an Ingress on the app's cluster, reached through the site's ingress entry " +
		"the cluster is bound to by its `fleet_cluster_join`) or `none` (no URL; what an earlier mode made is removed). " +
		"`fleet-controller hub` (its app-routes reconciler) reports `url`, `ready` and a `reason`.\n\n" +
		"Plan-time checks against the hub as the plan began, following the app to its cluster's join and site. An **error** only " +
		"for what no resource of the plan can change — the app, its join and the site (or, for a host, the other route) are not " +
		"managed by Terraform — and a **warning** otherwise: `hub` mode on a site without an enabled hub gateway; `site` mode for " +
		"a cluster bound to no ingress entry of its site; a `host` another workspace's route holds, or the same `host` and `path` claimed by another route of the workspace (named); in `hub` mode, a host outside the site's `hub_gateway.domain`. A site with no " +
		"WAN path, the app's cluster in no ManagedClusterSet bound to the workspace (the route publishes nothing, `NotBound`), and an " +
		"app, join or site not on the hub yet (the check could not be made), are warnings.",
	Attributes: map[string]schema.Attribute{
		"app": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the `fleet_app` (FleetApp) in the same workspace.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(domainRE, "must be a FleetApp name")}},
		"mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(routeModeSite),
			MarkdownDescription: "Where the URL is served: `hub`, `site` (the default) or `none`.",
			Validators:          []validator.String{stringvalidator.OneOf(routeModeHub, routeModeSite, routeModeNone)}},
		"host": schema.StringAttribute{Optional: true, MarkdownDescription: "The URL's host name; required unless `mode` is `none`. In mode `hub`, the site's " +
			"`hub_gateway.domain` or a name below it, and no wildcard. A host serves one workspace at a time: that of its first route (created first), whatever the path.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(routeHostRE, "must be a lowercase DNS name, optionally starting with *.")}},
		"path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("/"),
			MarkdownDescription: "The URL's path prefix; `/` by default. A strict URL path: `/`, or `/`-separated segments of letters, digits, " +
				"`-._~$*+;=:@` and `%XX` escapes for any other character, none empty (`//`), `.` or `..`, optionally ending in `/`.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 1024)}},
		"service": schema.SingleNestedAttribute{Required: true,
			MarkdownDescription: "The Service on the app's cluster, in the app's namespace, the route sends to.",
			Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the Service.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(serviceNameRE, "must be a Service name")}},
				"port": schema.Int64Attribute{Required: true, MarkdownDescription: "Port of the Service.", Validators: []validator.Int64{int64validator.Between(1, 65535)}},
			}},
		"tls": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "TLS of the host, by exactly one of `secret_name` and `acme_issuer`; plain HTTP when unset.",
			Attributes: map[string]schema.Attribute{
				"secret_name": schema.StringAttribute{Optional: true,
					MarkdownDescription: "A `kubernetes.io/tls` Secret (its name, a DNS subdomain) with the host's certificate: in the app's namespace on the cluster (`site` mode) or the workspace on the hub (`hub` mode).",
					Validators: []validator.String{hubresource.DNSSubdomain,
						stringvalidator.ExactlyOneOf(path.MatchRelative().AtParent().AtName("acme_issuer"))}},
				"acme_issuer": schema.StringAttribute{Optional: true,
					MarkdownDescription: "A cert-manager ClusterIssuer that obtains the certificate by ACME.",
					Validators:          []validator.String{stringvalidator.LengthBetween(1, 253)}},
			}},
		"url":     schema.StringAttribute{Computed: true, MarkdownDescription: "The route's public URL, set once what serves it is written on the hub (in site mode before the cluster applied it: `ready` says whether it is served); null in mode `none` and until reported."},
		"ready":   schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the route is published as its mode says (in site mode, its Ingress applied on the cluster); null until reported."},
		"reason":  schema.StringAttribute{Computed: true, MarkdownDescription: "Reason of the Ready condition: `Published`, `WorkPending` (site mode: the route's work is written on the hub, not applied on the cluster yet), `AppNotFound`, `NotJoined`, `NoHubGateway`, `NoIngress`, `HostTaken`, `InvalidPath`, `WildcardHost`, `HostOutsideDomain`, `ConfigMapTaken`, `PublishFailed` or `Unpublished`."},
		"message": schema.StringAttribute{Computed: true, MarkdownDescription: "Message of the Ready condition: what the route waits for."},
	},
	Owned:     []string{"spec"},
	Validate:  validateAppRoute,
	Expand:    expandAppRoute,
	Flatten:   flattenAppRoute,
	CheckPlan: checkAppRoutePlan,
}

// validateAppRoute checks that host is set unless mode is none, that path is a strict URL path
// (fleetrules.CheckRoutePath, as the CRD and the controller), and that a hub-mode host is no
// wildcard.
func validateAppRoute(_ context.Context, m *appRouteModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.Mode.IsUnknown() && m.Mode.ValueString() != routeModeNone && m.Host.IsNull() {
		diags.AddAttributeError(path.Root("host"), "Route without a host",
			fmt.Sprintf("mode is %q: set host, the URL's host name (only mode = \"none\" publishes no URL).", cmp.Or(m.Mode.ValueString(), routeModeSite)))
	}
	if !m.Path.IsNull() && !m.Path.IsUnknown() {
		if err := fleetrules.CheckRoutePath(m.Path.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("path"), "Invalid route path",
				err.Error()+". Write path as / or /-separated segments of letters, digits, -._~$*+;=:@ and %XX escapes for any other character "+
					"(%20 for a space), with no empty (//), . or .. segment.")
		}
	}
	if m.Mode.ValueString() == routeModeHub && !m.Host.IsNull() && !m.Host.IsUnknown() {
		if err := fleetrules.CheckHubHostName(m.Host.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("host"), "Wildcard host in hub mode", err.Error()+".")
		}
	}
	return diags
}

func expandAppRoute(ctx context.Context, req hubresource.ExpandRequest[appRouteModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	m := req.Plan
	var svc routeService
	diags.Append(m.Service.As(ctx, &svc, basetypes.ObjectAsOptions{})...)
	spec := map[string]any{"app": m.App.ValueString(), "mode": m.Mode.ValueString(), "path": m.Path.ValueString(),
		"service": map[string]any{"name": svc.Name, "port": svc.Port}}
	if !m.Host.IsNull() {
		spec["host"] = m.Host.ValueString()
	}
	if !m.TLS.IsNull() {
		var tls routeTLS
		diags.Append(m.TLS.As(ctx, &tls, basetypes.ObjectAsOptions{})...)
		t := map[string]any{}
		if tls.SecretName != nil {
			t["secretName"] = *tls.SecretName
		}
		if tls.ACMEIssuer != nil {
			t["acmeIssuer"] = *tls.ACMEIssuer
		}
		spec["tls"] = t
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}, diags
}

// flattenAppRoute reads the route's spec and status; a field the hub does not carry is null (mode
// and path: their defaults, as the hub's schema defaults them), so that an out-of-band change
// shows as drift.
func flattenAppRoute(ctx context.Context, obj *unstructured.Unstructured, m *appRouteModel) diag.Diagnostics {
	var diags diag.Diagnostics
	var r v1alpha1.FleetAppRoute
	if !decodeHub(obj, &r, &diags) {
		return diags
	}
	m.App = types.StringValue(r.Spec.App)
	m.Mode = types.StringValue(routeModeOf(&r.Spec))
	m.Host = stringOrNull(r.Spec.Host)
	m.Path = types.StringValue(routePathOf(&r.Spec))
	m.Service = objectFrom(ctx, routeServiceTypes, routeService{Name: r.Spec.Service.Name, Port: int64(r.Spec.Service.Port)}, &diags)
	m.TLS = types.ObjectNull(routeTLSTypes)
	if t := r.Spec.TLS; t != nil {
		m.TLS = objectFrom(ctx, routeTLSTypes, routeTLS{SecretName: optString(t.SecretName), ACMEIssuer: optString(t.ACMEIssuer)}, &diags)
	}
	m.URL = stringOrNull(r.Status.URL)
	m.Ready, m.Reason, m.Message = types.BoolNull(), types.StringNull(), types.StringNull()
	if c := apimeta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition); c != nil && r.Status.ObservedGeneration > 0 {
		m.Ready, m.Reason, m.Message = types.BoolValue(c.Status == "True"), stringOrNull(c.Reason), stringOrNull(c.Message)
	}
	return diags
}

func routeModeOf(s *v1alpha1.FleetAppRouteSpec) string { return cmp.Or(string(s.Mode), routeModeSite) }

func routePathOf(s *v1alpha1.FleetAppRouteSpec) string { return cmp.Or(s.Path, "/") }

// checkAppRoutePlan checks the route against the hub as the plan began, under the rule that an
// error is only for what no other resource of the plan can change:
//
//   - the host held by another workspace's route, or host and path by another route of the
//     workspace (fleetrules.HostBlocker): an error naming it when no Terraform configuration
//     manages it, a warning when one does (this plan may change or destroy it);
//   - the mode's needs, followed from the app to its cluster's join and the join's site: mode hub
//     needs the site's hub gateway and a host under its domain, mode site the cluster bound to an
//     ingress entry of the site.
//     An error when neither the app, the join nor the site is managed by Terraform, a warning
//     otherwise; a site without a WAN path is a warning, and so is an app, join or site not on
//     the hub (this plan may create it), where the check cannot be made.
//
// Only what the change touches is checked: the host claim when new or host, path or mode
// changed; the mode's needs when new or app, mode or host changed. Unknown values skip their checks.
func checkAppRoutePlan(ctx context.Context, c hubresource.PlanCheck[appRouteModel]) diag.Diagnostics {
	var diags diag.Diagnostics
	p := c.Plan
	if p == nil || p.Mode.IsUnknown() || p.Mode.ValueString() == routeModeNone {
		return diags
	}
	id := c.Workspace + "/" + p.Name.ValueString()
	isNew := c.Prior == nil || c.Replace
	changed := func(fields ...func(*appRouteModel) attr.Value) bool {
		for _, f := range fields {
			if isNew || !f(p).Equal(f(c.Prior)) {
				return true
			}
		}
		return false
	}
	app, mode := func(m *appRouteModel) attr.Value { return m.App }, func(m *appRouteModel) attr.Value { return m.Mode }
	host, urlPath := func(m *appRouteModel) attr.Value { return m.Host }, func(m *appRouteModel) attr.Value { return m.Path }
	if !p.Host.IsUnknown() && !p.Path.IsUnknown() && changed(mode, host, urlPath) {
		checkRouteHost(ctx, c, id, &diags)
	}
	if !p.App.IsUnknown() && changed(mode, app, host) {
		checkRouteMode(ctx, c, id, &diags)
	}
	return diags
}

// checkRouteHost reports the route of the hub, in any workspace, that keeps the route from
// publishing its host and path, by fleetrules.HostBlocker (the controller's rule): an error when
// it blocks with every route Terraform manages left out (no resource of this plan can free the
// host), else a warning naming the route that blocks. The planned route is ordered as created
// when it exists on the hub and is not replaced, else after every route there.
func checkRouteHost(ctx context.Context, c hubresource.PlanCheck[appRouteModel], id string, diags *diag.Diagnostics) {
	host, urlPath := c.Plan.Host.ValueString(), c.Plan.Path.ValueString()
	routes, err := c.Hub.List(ctx, fleetAppRouteKind, "", "")
	if err != nil {
		diags.AddWarning("Host not checked", fmt.Sprintf("Could not list the hub's FleetAppRoutes to check that no other route claims %s%s: %v.", host, urlPath, c.Env.CheckErr(ctx, err)))
		return
	}
	me := v1alpha1.FleetAppRoute{ObjectMeta: metav1.ObjectMeta{Namespace: c.Workspace, Name: c.Plan.Name.ValueString(), CreationTimestamp: metav1.NewTime(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: v1alpha1.FleetAppRouteSpec{Mode: v1alpha1.RouteMode(c.Plan.Mode.ValueString()), Host: host, Path: urlPath}}
	var all, unmanaged []v1alpha1.FleetAppRoute
	for i := range routes {
		o := &routes[i]
		var r v1alpha1.FleetAppRoute
		if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r) != nil {
			continue
		}
		if o.GetNamespace()+"/"+o.GetName() == id {
			if c.Prior != nil && !c.Replace {
				me.CreationTimestamp = r.CreationTimestamp
			}
			continue
		}
		all = append(all, r)
		if !c.Env.Changeable(o) {
			unmanaged = append(unmanaged, r)
		}
	}
	summary := func(b *v1alpha1.FleetAppRoute) string {
		if b.Namespace != me.Namespace {
			return "Host belongs to another workspace"
		}
		return "Host and path already routed"
	}
	claimOf := func(b *v1alpha1.FleetAppRoute) string {
		return fmt.Sprintf("FleetAppRoute %s publishes %s%s, but %s.", id, host, urlPath, fleetrules.HostTakenMessage(&me, b))
	}
	if b := fleetrules.HostBlocker(unmanaged, &me); b != nil {
		claim := claimOf(b)
		diags.AddAttributeError(path.Root("host"), summary(b),
			fmt.Sprintf("%s Of FleetAppRoute %s/%s, %s, so no resource of this plan can free the host. Nothing was written to the hub.", claim, b.Namespace, b.Name, c.Env.Unchangeable(hub.OwnerOf(b))))
		return
	}
	if b := fleetrules.HostBlocker(all, &me); b != nil {
		claim := claimOf(b)
		diags.AddAttributeWarning(path.Root("host"), summary(b),
			fmt.Sprintf("%s FleetAppRoute %s/%s is managed by Terraform, so this plan may change or destroy it; otherwise apply writes %s, which is not Ready (HostTaken) while the other holds the host.",
				claim, b.Namespace, b.Name, id))
	}
}

// checkRouteMode follows the route's app to its cluster's join and site, and checks that the
// site can serve the route's mode.
func checkRouteMode(ctx context.Context, c hubresource.PlanCheck[appRouteModel], id string, diags *diag.Diagnostics) {
	p := c.Plan
	mode, appName := p.Mode.ValueString(), p.App.ValueString()
	notChecked := func(summary, what string) {
		diags.AddAttributeWarning(path.Root("app"), summary,
			fmt.Sprintf("FleetAppRoute %s (mode %s): %s, so whether the app's site can serve mode %s could not be checked. "+
				"If a resource of this plan creates it, this resolves itself; until then the route is not Ready.", id, mode, what, mode))
	}
	list := func(k hub.Kind) ([]unstructured.Unstructured, bool) {
		items, err := c.Hub.List(ctx, k, c.Workspace, "")
		if err != nil {
			diags.AddWarning("Route mode not checked", fmt.Sprintf("Could not list the %ss of workspace %s: %v.", k.Kind, c.Workspace, c.Env.CheckErr(ctx, err)))
		}
		return items, err == nil
	}
	apps, ok := list(fleetAppKind)
	if !ok {
		return
	}
	app := byName(apps, appName)
	if app == nil && c.Env.Planned(fleetAppKind, c.Workspace, appName) {
		return // a fleet_app of this plan creates it; the controller checks the mode (NoIngress, NoHubGateway)
	}
	if app == nil {
		notChecked("App not on the hub", fmt.Sprintf("app %q is not a FleetApp of workspace %s on the hub (AppNotFound)", appName, c.Workspace))
		return
	}
	cluster, _, _ := unstructured.NestedString(app.Object, "spec", "cluster")
	if !checkClusterBound(ctx, c, fmt.Sprintf("FleetAppRoute %s publishes app %s of cluster %q", id, appName, cluster), path.Root("app"), cluster, "publishes nothing", diags) {
		return
	}
	joins, ok := list(fleetClusterJoinKind)
	if !ok {
		return
	}
	clusters, err := c.Hub.List(ctx, siteClusterKind, "", "")
	if err != nil {
		diags.AddWarning("Route mode not checked", fmt.Sprintf("Could not list the hub's ManagedClusters: %v.", c.Env.CheckErr(ctx, err)))
		return
	}
	joinObj, elsewhere := joinOfCluster(clusters, joins, c.Workspace, cluster)
	if joinObj == nil {
		by := "no FleetClusterJoin of the workspace"
		if elsewhere != "" {
			by = fmt.Sprintf("no FleetClusterJoin of the workspace (FleetClusterJoin %s, of another workspace, holds it)", elsewhere)
		}
		notChecked("App's cluster not joined", fmt.Sprintf("cluster %q of FleetApp %s/%s is joined by %s (NotJoined)", cluster, c.Workspace, appName, by))
		return
	}
	var join v1alpha1.FleetClusterJoin
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(joinObj.Object, &join); err != nil {
		diags.AddWarning("Route mode not checked", fmt.Sprintf("FleetClusterJoin %s/%s on the hub is unreadable: %v.", c.Workspace, joinObj.GetName(), err))
		return
	}
	sites, ok := list(fleetSiteKind)
	if !ok {
		return
	}
	siteObj := byName(sites, join.Spec.Site)
	if siteObj == nil {
		notChecked("Site not on the hub", fmt.Sprintf("site %q of FleetClusterJoin %s/%s (cluster %s) is not a FleetSite of the workspace on the hub", join.Spec.Site, c.Workspace, join.Name, cluster))
		return
	}
	var site v1alpha1.FleetSite
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(siteObj.Object, &site); err != nil {
		diags.AddWarning("Route mode not checked", fmt.Sprintf("FleetSite %s/%s on the hub is unreadable: %v.", c.Workspace, site.Name, err))
		return
	}
	chain := fmt.Sprintf("app %s runs on cluster %s, which FleetClusterJoin %s/%s joins to FleetSite %s/%s", appName, cluster, c.Workspace, join.Name, c.Workspace, site.Name)
	if !site.HasWANPath() {
		diags.AddAttributeWarning(path.Root("mode"), "Site has no WAN path",
			fmt.Sprintf("FleetAppRoute %s: %s, which has no ingress entry and no enabled hub gateway: no fleet-managed WAN path reaches the app, so its URL is reachable only from inside the site.", id, chain))
	}
	var problem, needs, fix, reason string
	switch mode {
	case routeModeHub:
		host := p.Host.ValueString()
		switch gw := site.Spec.HubGateway; {
		case gw == nil || !gw.Enabled:
			problem, reason = "Site has no hub gateway", "NoHubGateway"
			needs = "mode hub is served by the hub's gateway, which needs the site's hub_gateway enabled, and it is not"
			fix = "enable the site's hub_gateway, or use mode = \"site\""
		case p.Host.IsUnknown() || p.Host.IsNull() || fleetrules.CheckHubHostName(host) != nil:
			// Unknown: checked at apply; a wildcard: ValidateConfig's error.
		case fleetrules.CheckHubHost(host, gw.Domain) != nil:
			problem, reason = "Host outside the hub gateway's domain", "HostOutsideDomain"
			needs = fmt.Sprintf("the site's hub gateway serves its domain %q and the names below it, and host %q is neither", gw.Domain, host)
			fix = fmt.Sprintf("use a host ending in .%s, or change the site's hub_gateway domain, or use mode = \"site\"", gw.Domain)
		}
	case routeModeSite:
		entry := join.IngressID()
		if _, ok := site.Entry(entry); !ok {
			problem, reason = "Cluster not bound to an ingress entry", "NoIngress"
			needs = "mode site is served through the site's ingress entry the cluster is bound to, and the join binds it to none"
			fix = "bind the join to an ingress entry of the site (ingress_id), or use mode = \"hub\""
			if entry != "" {
				needs = fmt.Sprintf("mode site is served through the site's ingress entry the cluster is bound to, and the join binds it to entry %q, which the site lacks", entry)
				fix = fmt.Sprintf("add entry %q to the site or bind the join to one the site has, or use mode = \"hub\"", entry)
			}
		}
	}
	if problem == "" {
		return
	}
	msg := fmt.Sprintf("FleetAppRoute %s: %s; %s.", id, chain, needs)
	if c.Env.Changeable(app) || c.Env.Changeable(joinObj) || c.Env.Changeable(siteObj) {
		diags.AddAttributeWarning(path.Root("mode"), problem,
			msg+fmt.Sprintf(" The app, its join or the site is managed by Terraform, so this plan may fix it (%s); otherwise the route is not Ready (%s) after apply.", fix, reason))
		return
	}
	diags.AddAttributeError(path.Root("mode"), problem,
		msg+fmt.Sprintf(" Of the app, %s; of its join, %s; of the site, %s: so no resource of this plan can change this: %s. Nothing was written to the hub.",
			c.Env.Unchangeable(hub.OwnerOf(app)), c.Env.Unchangeable(hub.OwnerOf(joinObj)), c.Env.Unchangeable(hub.OwnerOf(siteObj)), fix))
}

// byName is the item of that name, or nil.
func byName(items []unstructured.Unstructured, name string) *unstructured.Unstructured {
	for i := range items {
		if items[i].GetName() == name {
			return &items[i]
		}
	}
	return nil
}
