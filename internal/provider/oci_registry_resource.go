package provider

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/registryref"
)

// Fleet's OCI storage Secret: its type, and the keys Fleet reads (Fleet-compatible, so a Rancher
// Fleet can use a source registry as a GitRepo's ociRegistrySecret).
const (
	OCIRegistrySecretType = inventory.RegistrySecretType
	// OCIRegistryRoleLabel carries the registry's role, source or mirror.
	OCIRegistryRoleLabel = inventory.RegistryRoleLabel
	managedByLabel       = "app.kubernetes.io/managed-by"

	roleSource = "source"
	roleMirror = "mirror"
)

var secretKind = inventory.SecretKind

type ociRegistryModel struct {
	hubresource.Meta
	Role                   types.String `tfsdk:"role"`
	Reference              types.String `tfsdk:"reference"`
	Username               types.String `tfsdk:"username"`
	PasswordWO             types.String `tfsdk:"password_wo"`
	PasswordWOVersion      types.Int64  `tfsdk:"password_wo_version"`
	AgentUsername          types.String `tfsdk:"agent_username"`
	AgentPasswordWO        types.String `tfsdk:"agent_password_wo"`
	AgentPasswordWOVersion types.Int64  `tfsdk:"agent_password_wo_version"`
	InsecureSkipTLS        types.Bool   `tfsdk:"insecure_skip_tls"`
	BasicHTTP              types.Bool   `tfsdk:"basic_http"`
	CACerts                types.String `tfsdk:"ca_certs"`
}

// ociRegistryKeys maps Fleet's Secret keys to the model's plain (non-secret) string attributes.
var ociRegistryKeys = []struct {
	key  string
	attr func(*ociRegistryModel) *types.String
}{
	{"reference", func(m *ociRegistryModel) *types.String { return &m.Reference }},
	{"username", func(m *ociRegistryModel) *types.String { return &m.Username }},
	{"agentUsername", func(m *ociRegistryModel) *types.String { return &m.AgentUsername }},
	{"cacerts", func(m *ociRegistryModel) *types.String { return &m.CACerts }},
}

var newOCIRegistryResource = hubresource.New[ociRegistryModel](hubresource.Kind[ociRegistryModel]{
	TypeName: "oci_registry",
	Object:   secretKind,
	Description: "An OCI registry that clusters pull Fleet bundles from: a Secret of type `" + OCIRegistrySecretType +
		"` in the workspace, with Fleet's keys, so a Rancher Fleet can use a `source` registry as a GitRepo's `ociRegistrySecret`.\n\n" +
		"Each workspace has exactly one `source` registry (where content is pushed) and any number of `mirror`s (only pulled from; " +
		"replicating to them is your job). The same host with other credentials or another namespace is simply another registry. " +
		"`fleet_oci_route` decides which clusters pull from which registries, in which order.\n\n" +
		"Passwords are write-only: they are sent to the hub but never stored in Terraform state or shown in plans. " +
		"Bump `password_wo_version` to send a changed password.",
	Attributes: map[string]schema.Attribute{
		"role": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: "`source` (where content is pushed; one per workspace) or `mirror` (only pulled from).",
			Validators:          []validator.String{stringvalidator.OneOf(roleSource, roleMirror)},
		},
		"reference": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: "Registry and optional namespace as `host[:port][/path]`, without scheme, e.g. `harbor.example.com/fleet`.",
			Validators:          []validator.String{referenceValidator{}},
		},
		"username": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "User for pushing (and for pulling when `agent_username` is not set).",
		},
		"password_wo": schema.StringAttribute{
			Optional:            true,
			WriteOnly:           true,
			Sensitive:           true,
			MarkdownDescription: "Password of `username`. Write-only: never stored in state.",
		},
		"password_wo_version": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "Change this number to send a changed `password_wo` to the hub.",
		},
		"agent_username": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Read-only user the cluster agents pull with. Without it agents use `username`.",
		},
		"agent_password_wo": schema.StringAttribute{
			Optional:            true,
			WriteOnly:           true,
			Sensitive:           true,
			MarkdownDescription: "Password of `agent_username`. Write-only: never stored in state.",
		},
		"agent_password_wo_version": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "Change this number to send a changed `agent_password_wo` to the hub.",
		},
		"insecure_skip_tls": schema.BoolAttribute{
			Optional:            true,
			Computed:            true,
			Default:             booldefault.StaticBool(false),
			MarkdownDescription: "Skip verification of the registry's TLS certificate. Prefer `ca_certs`. Defaults to `false`.",
		},
		"basic_http": schema.BoolAttribute{
			Optional:            true,
			Computed:            true,
			Default:             booldefault.StaticBool(false),
			MarkdownDescription: "Talk plain HTTP instead of HTTPS (lab registries only). Defaults to `false`.",
		},
		"ca_certs": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "PEM bundle of the CA certificates that signed the registry's certificate.",
			Validators:          []validator.String{pemValidator{}},
		},
	},
	Validate:  validateOCIRegistry,
	Expand:    expandOCIRegistry,
	Flatten:   flattenOCIRegistry,
	CheckPlan: checkOCIRegistryPlan,
})

func validateOCIRegistry(_ context.Context, m *ociRegistryModel) diag.Diagnostics {
	var diags diag.Diagnostics
	pairs := []struct {
		user                      types.String
		password                  types.String
		userAttr, passAttr, label string
	}{
		{m.Username, m.PasswordWO, "username", "password_wo", "push"},
		{m.AgentUsername, m.AgentPasswordWO, "agent_username", "agent_password_wo", "agent"},
	}
	for _, p := range pairs {
		if !p.password.IsNull() && p.user.IsNull() {
			diags.AddAttributeError(path.Root(p.userAttr), "Missing "+p.userAttr,
				fmt.Sprintf("%s is set but %s is not: registries authenticate with both. Set %s, or remove %s.", p.passAttr, p.userAttr, p.userAttr, p.passAttr))
		}
	}
	return diags
}

func expandOCIRegistry(_ context.Context, plan, config *ociRegistryModel) (*unstructured.Unstructured, diag.Diagnostics) {
	data := map[string]any{}
	put := func(key string, v types.String) {
		if !v.IsNull() && !v.IsUnknown() {
			data[key] = base64.StdEncoding.EncodeToString([]byte(v.ValueString()))
		}
	}
	for _, k := range ociRegistryKeys {
		put(k.key, *k.attr(plan))
	}
	put("password", config.PasswordWO)
	put("agentPassword", config.AgentPasswordWO)
	put("basicHTTP", types.StringValue(strconv.FormatBool(plan.BasicHTTP.ValueBool())))
	put("insecureSkipTLS", types.StringValue(strconv.FormatBool(plan.InsecureSkipTLS.ValueBool())))

	obj := &unstructured.Unstructured{Object: map[string]any{
		"type": OCIRegistrySecretType,
		"data": data,
	}}
	obj.SetLabels(map[string]string{OCIRegistryRoleLabel: plan.Role.ValueString(), managedByLabel: DefaultFieldManager})
	return obj, nil
}

func flattenOCIRegistry(_ context.Context, obj *unstructured.Unstructured, m *ociRegistryModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != OCIRegistrySecretType {
		diags.AddError("Not an OCI registry",
			fmt.Sprintf("Secret %s/%s has type %q, not %q: it is not an OCI registry and cannot be managed as fleet_oci_registry.",
				obj.GetNamespace(), obj.GetName(), t, OCIRegistrySecretType))
		return diags
	}
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	value := func(key string) (string, bool) {
		enc, ok := data[key]
		if !ok {
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			diags.AddError("Corrupt Secret data", fmt.Sprintf("key %q of Secret %s/%s is not base64.", key, obj.GetNamespace(), obj.GetName()))
		}
		return string(b), true
	}
	for _, k := range ociRegistryKeys {
		if v, ok := value(k.key); ok {
			*k.attr(m) = types.StringValue(v)
		} else {
			*k.attr(m) = types.StringNull()
		}
	}
	flag := func(key string) types.Bool {
		v, _ := value(key)
		b, _ := strconv.ParseBool(v)
		return types.BoolValue(b)
	}
	m.BasicHTTP = flag("basicHTTP")
	m.InsecureSkipTLS = flag("insecureSkipTLS")
	if role, ok := obj.GetLabels()[OCIRegistryRoleLabel]; ok {
		m.Role = types.StringValue(role)
	} else {
		m.Role = types.StringNull()
	}
	return diags
}

// checkOCIRegistryPlan enforces one source registry per workspace against what the hub has.
func checkOCIRegistryPlan(ctx context.Context, env *hubresource.Env, plan, _ *ociRegistryModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if plan.Role.ValueString() != roleSource || plan.Workspace.IsUnknown() || plan.Name.IsUnknown() {
		return diags
	}
	ws := plan.Workspace.ValueString()
	sources, err := env.Client.List(ctx, secretKind, ws, OCIRegistryRoleLabel+"="+roleSource)
	if err != nil {
		diags.AddWarning("Hub checks skipped", fmt.Sprintf("Could not list the registries of workspace %s, so a second source registry would not be noticed: %v", ws, err))
		return diags
	}
	// Roles as they will be: the hub's, updated by what this plan changes.
	roles := map[string]string{}
	for _, s := range sources {
		if t, _, _ := unstructured.NestedString(s.Object, "type"); t == OCIRegistrySecretType {
			roles[s.GetName()] = roleSource
		}
	}
	for name, m := range hubresource.Planned[ociRegistryModel](env, "oci_registry", ws) {
		roles[name] = m.Role.ValueString()
	}
	for _, other := range slices.Sorted(maps.Keys(roles)) {
		if roles[other] == roleSource && other != plan.Name.ValueString() {
			diags.AddAttributeError(path.Root("role"), "Second source registry",
				fmt.Sprintf("Workspace %s already has the source registry %q; a workspace has exactly one source, where content is pushed. "+
					"Set role = \"mirror\" for %q, or make %q a mirror first.", ws, other, plan.Name.ValueString(), other))
			break
		}
	}
	return diags
}

// referenceValidator checks host[:port][/path].
type referenceValidator struct{}

func (referenceValidator) Description(context.Context) string {
	return "must be host[:port][/path] without scheme"
}
func (v referenceValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (referenceValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := registryref.Parse(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid registry reference", err.Error()+".")
	}
}

// pemValidator checks a PEM bundle of X.509 certificates.
type pemValidator struct{}

func (pemValidator) Description(context.Context) string {
	return "must be PEM-encoded X.509 certificates"
}
func (v pemValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (pemValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := checkPEMCertificates(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid CA bundle", err.Error())
	}
}

func checkPEMCertificates(s string) error {
	rest := []byte(s)
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("PEM block %d is a %q, not a CERTIFICATE: ca_certs holds only CA certificates, never keys", n, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("PEM block %d is not a valid X.509 certificate: %v", n, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("no PEM certificate found: paste the CA certificate(s) including the -----BEGIN CERTIFICATE----- lines, e.g. with file(\"ca.pem\")")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return fmt.Errorf("text after the last PEM certificate is not PEM: remove it")
	}
	return nil
}
