// Package provider is the fleet Terraform/OpenTofu provider: its configuration, resources, data
// sources and functions.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
)

var (
	_ provider.Provider              = &fleetProvider{}
	_ provider.ProviderWithFunctions = &fleetProvider{}
)

// Address is the provider's registry address.
const Address = "registry.terraform.io/umkim/fleet"

// DefaultWorkspace is Fleet's default workspace namespace.
const DefaultWorkspace = "fleet-default"

// DefaultFieldManager is the server-side apply field manager of the provider's writes.
const DefaultFieldManager = "terraform-provider-fleet"

// maxRequestTimeout bounds request_timeout: an hour is far beyond any answer a hub gives.
const maxRequestTimeout = time.Hour

// New returns the provider factory for providerserver.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &fleetProvider{version: version} }
}

type fleetProvider struct{ version string }

type providerModel struct {
	ConfigPath           types.String `tfsdk:"config_path"`
	ConfigContext        types.String `tfsdk:"config_context"`
	Host                 types.String `tfsdk:"host"`
	Token                types.String `tfsdk:"token"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	ClientCertificate    types.String `tfsdk:"client_certificate"`
	ClientKey            types.String `tfsdk:"client_key"`
	Insecure             types.Bool   `tfsdk:"insecure"`
	Exec                 []execModel  `tfsdk:"exec"`
	Workspace            types.String `tfsdk:"workspace"`
	FieldManager         types.String `tfsdk:"field_manager"`
	RequestTimeout       types.String `tfsdk:"request_timeout"`
	Owner                types.String `tfsdk:"owner"`
}

// ownerRE is what the provider's owner setting may be.
var ownerRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$`)

// defaultRequestTimeout bounds each hub request and each resource's plan-time checks.
const defaultRequestTimeout = 30 * time.Second

type execModel struct {
	APIVersion types.String            `tfsdk:"api_version"`
	Command    types.String            `tfsdk:"command"`
	Args       []types.String          `tfsdk:"args"`
	Env        map[string]types.String `tfsdk:"env"`
}

func (p *fleetProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "fleet"
	resp.Version = p.version
}

func (p *fleetProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Declares the fleet configuration of an Open Cluster Management hub — OCI registries, " +
			"registry routes, sites, cluster joins, charts and apps — and checks at plan time what a change " +
			"does to the clusters it manages.\n\nThe connection settings work like the kubernetes provider's: a " +
			"kubeconfig file (`config_path`, `config_context`), explicit `host` and credentials, or an `exec` " +
			"credential plugin. Explicit settings override the kubeconfig's.",
		Attributes: map[string]schema.Attribute{
			"config_path": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path to a kubeconfig file for the hub. Defaults to the `KUBE_CONFIG_PATH` environment variable.",
			},
			"config_context": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Context of the kubeconfig to use. Defaults to its current context, or `KUBE_CTX`.",
			},
			"host": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Address of the hub's API server, e.g. `https://hub.example.com:6443`. Defaults to `KUBE_HOST`.",
			},
			"token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Bearer token for the API server. Defaults to `KUBE_TOKEN`.",
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM-encoded CA bundle that signed the API server's certificate. Defaults to `KUBE_CLUSTER_CA_CERT_DATA`.",
			},
			"client_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM-encoded client certificate for TLS authentication. Defaults to `KUBE_CLIENT_CERT_DATA`.",
			},
			"client_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "PEM-encoded private key of `client_certificate`. Defaults to `KUBE_CLIENT_KEY_DATA`.",
			},
			"insecure": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verification of the API server's certificate. For test hubs only. Defaults to `KUBE_INSECURE`.",
			},
			"workspace": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Default workspace (hub namespace) of resources that set none. Defaults to `FLEET_WORKSPACE`, then `" + DefaultWorkspace + "`.",
			},
			"request_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long one hub request, and the plan-time checks of one resource, may take, e.g. `10s`. A hub that does " +
					"not answer in time fails the request; at plan, the checks are skipped with a warning. At most `1h`. Defaults to `30s`.",
				Validators: []validator.String{durationValidator{max: maxRequestTimeout}},
			},
			"owner": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The owner of this configuration, e.g. `team-a/infra`: written on every object it creates or updates " +
					"(annotation `" + hub.ConfigurationOwnerAnnotation + "`, and label `" + hub.ConfigurationOwnerLabel + "` as a label value), so that " +
					"configurations sharing a workspace know each other's objects. With it, a conflict with an object of another owner — the same " +
					"route priority, a second source registry, a port_forward entry or site a join needs, an app route's host, a name already " +
					"taken — is a plan error naming that owner, since no resource of this plan can change the other object; without it such " +
					"conflicts with objects Terraform manages are warnings. Importing an object of another owner warns. Up to 253 characters: " +
					"letters, digits and `-_./`, starting and ending with a letter or digit. See the multi-tenant guide.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(ownerRE,
					"must be letters, digits and -_./, starting and ending with a letter or digit, e.g. team-a/infra")},
			},
			"field_manager": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Server-side apply field manager of the provider's writes. Defaults to `" + DefaultFieldManager + "`.",
			},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.ListNestedBlock{
				MarkdownDescription: "A credential plugin to run for a token or client certificate, as in kubeconfig's `exec`.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{Required: true, MarkdownDescription: "API version of the ExecCredential, e.g. `client.authentication.k8s.io/v1`."},
					"command":     schema.StringAttribute{Required: true, MarkdownDescription: "Command to run."},
					"args":        schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Arguments of the command."},
					"env":         schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Environment variables of the command."},
				}},
			},
		},
	}
}

func (p *fleetProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	env := &hubresource.Env{
		Workspace:        stringOr(m.Workspace, "FLEET_WORKSPACE", DefaultWorkspace),
		WorkspaceUnknown: m.Workspace.IsUnknown(),
		CheckTimeout:     defaultRequestTimeout,
		Owner:            m.Owner.ValueString(),
	}
	if !m.RequestTimeout.IsNull() && !m.RequestTimeout.IsUnknown() {
		env.CheckTimeout, _ = time.ParseDuration(m.RequestTimeout.ValueString()) // checked by durationValidator
	}
	resp.ResourceData, resp.DataSourceData = env, env

	if unknownConnection(m) {
		// Connection settings come from resources not yet created: checks wait for apply.
		env.ClientErr = errUnknownSettings
		return
	}
	settings := hub.Settings{
		ConfigPath:           stringOr(m.ConfigPath, "KUBE_CONFIG_PATH", ""),
		ConfigContext:        stringOr(m.ConfigContext, "KUBE_CTX", ""),
		Host:                 stringOr(m.Host, "KUBE_HOST", ""),
		Token:                stringOr(m.Token, "KUBE_TOKEN", ""),
		ClusterCACertificate: stringOr(m.ClusterCACertificate, "KUBE_CLUSTER_CA_CERT_DATA", ""),
		ClientCertificate:    stringOr(m.ClientCertificate, "KUBE_CLIENT_CERT_DATA", ""),
		ClientKey:            stringOr(m.ClientKey, "KUBE_CLIENT_KEY_DATA", ""),
		Insecure:             m.Insecure.ValueBool() || (m.Insecure.IsNull() && os.Getenv("KUBE_INSECURE") == "true"),
		UserAgent:            "terraform-provider-fleet/" + p.version,
	}
	if len(m.Exec) > 0 {
		e := m.Exec[0]
		settings.Exec = &hub.ExecSettings{APIVersion: e.APIVersion.ValueString(), Command: e.Command.ValueString(), Env: map[string]string{}}
		for _, a := range e.Args {
			settings.Exec.Args = append(settings.Exec.Args, a.ValueString())
		}
		for k, v := range e.Env {
			settings.Exec.Env[k] = v.ValueString()
		}
	}
	cfg, err := settings.RESTConfig()
	if err != nil {
		hint := "check config_path (or KUBE_CONFIG_PATH), config_context and the explicit settings"
		if errors.Is(err, hub.ErrNotConfigured) {
			hint = "set config_path (or KUBE_CONFIG_PATH) to a kubeconfig, or host with credentials"
		}
		resp.Diagnostics.AddError("Invalid hub connection settings", fmt.Sprintf("%v: %s.", err, hint))
		return
	}
	cfg.Timeout = env.CheckTimeout
	client, err := hub.NewClient(cfg, stringOr(m.FieldManager, "", DefaultFieldManager))
	if err != nil {
		resp.Diagnostics.AddError("Cannot create the hub client", err.Error())
		return
	}
	env.Client = client
	env.Preload = func(ctx context.Context, l hub.Lister, ws string) {
		_, _ = inventory.Load(ctx, l, ws, client.FieldManager()) // a failure is reported by the checks that need it
		preloadSites(ctx, env, l, ws)
		preloadApps(ctx, env, l, ws)
		_ = probeStatuses(ctx, l, ws) // the clusters' reachability, for the first-registry warning
	}
	tflog.Debug(ctx, "hub client configured", map[string]any{"host": cfg.Host, "workspace": env.Workspace})
}

func (p *fleetProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		newOCIRegistryResource,
		newOCIRouteResource,
		newStorageSiteDeploymentResource,
		newFleetSiteResource,
		newClusterJoinResource,
		newChartResource,
		newAppResource,
		newAppRouteResource,
	}
}

func (p *fleetProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		newOCIChainDataSource,
		newOCIPullStatusDataSource,
		newOCIReplicationDataSource,
		newOCIRegistryReachabilityDataSource,
		newOCIRoutingDataSource,
		newStorageSiteDeploymentDataSource,
	}
}

func (p *fleetProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{
		newResolveRouteFunction,
	}
}

// stringOr returns the configured value, else the environment variable (if named), else def.
func stringOr(v types.String, envVar, def string) string {
	if !v.IsNull() && !v.IsUnknown() {
		return v.ValueString()
	}
	if envVar != "" {
		if s := os.Getenv(envVar); s != "" {
			return s
		}
	}
	return def
}

var errUnknownSettings = errors.New("the provider's connection settings are not known until apply")

func unknownConnection(m providerModel) bool {
	for _, v := range []types.String{m.ConfigPath, m.ConfigContext, m.Host, m.Token, m.ClusterCACertificate, m.ClientCertificate, m.ClientKey} {
		if v.IsUnknown() {
			return true
		}
	}
	return m.Insecure.IsUnknown() || len(m.Exec) > 0 && m.Exec[0].Command.IsUnknown()
}
