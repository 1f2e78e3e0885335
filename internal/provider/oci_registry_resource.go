package provider

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// Fleet's OCI storage Secret: its type, and the keys Fleet reads (Fleet-compatible, so a Rancher
// Fleet can use a source registry as a GitRepo's ociRegistrySecret).
const (
	OCIRegistrySecretType = registrysecret.Type
	// OCIRegistryRoleLabel carries the registry's role, source or mirror.
	OCIRegistryRoleLabel = registrysecret.RoleLabel

	roleSource = registrysecret.RoleSource
	roleMirror = registrysecret.RoleMirror
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
	AgentUsesPushCreds     types.Bool   `tfsdk:"agent_uses_push_credentials"`
	InsecureSkipTLS        types.Bool   `tfsdk:"insecure_skip_tls"`
	BasicHTTP              types.Bool   `tfsdk:"basic_http"`
	CACerts                types.String `tfsdk:"ca_certs"`
}

// ociRegistryKeys maps Fleet's Secret keys to the model's plain (non-secret) string attributes.
var ociRegistryKeys = []struct {
	key  string
	attr func(*ociRegistryModel) *types.String
}{
	{registrysecret.KeyReference, func(m *ociRegistryModel) *types.String { return &m.Reference }},
	{registrysecret.KeyUsername, func(m *ociRegistryModel) *types.String { return &m.Username }},
	{registrysecret.KeyAgentUsername, func(m *ociRegistryModel) *types.String { return &m.AgentUsername }},
	{registrysecret.KeyCACerts, func(m *ociRegistryModel) *types.String { return &m.CACerts }},
}

// credential is a write-only password and the version that says when to send it.
type credential struct {
	key, attr, versionAttr, userAttr string
	value, version, user             func(*ociRegistryModel) attr.Value
}

var ociRegistryCredentials = []credential{
	{registrysecret.KeyPassword, "password_wo", "password_wo_version", "username",
		func(m *ociRegistryModel) attr.Value { return m.PasswordWO },
		func(m *ociRegistryModel) attr.Value { return m.PasswordWOVersion },
		func(m *ociRegistryModel) attr.Value { return m.Username }},
	{registrysecret.KeyAgentPassword, "agent_password_wo", "agent_password_wo_version", "agent_username",
		func(m *ociRegistryModel) attr.Value { return m.AgentPasswordWO },
		func(m *ociRegistryModel) attr.Value { return m.AgentPasswordWOVersion },
		func(m *ociRegistryModel) attr.Value { return m.AgentUsername }},
}

// sent decides a credential key's value on the hub: the configured value when its version is
// new, else the hub's current value; none once the configuration removed the value and its
// version. ok is false when the key is to be absent.
func (c credential) sent(req hubresource.ExpandRequest[ociRegistryModel], current map[string]string) (string, bool) {
	version := c.version(req.Plan)
	hubValue, onHub := current[c.key]
	if version.IsNull() {
		if req.Prior != nil && !c.version(req.Prior).IsNull() {
			return "", false // the configuration removed it
		}
		return hubValue, onHub // never set by this configuration: left as it is
	}
	if req.Prior == nil || !version.Equal(c.version(req.Prior)) || !onHub {
		v := c.value(req.Config).(types.String)
		return v.ValueString(), !v.IsNull()
	}
	return hubValue, true
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
		"Each has a version: set both together, and change the version to send a changed password; the password on the hub " +
		"changes only when its version does. Removing both removes the password from the hub.\n\n" +
		"Pass passwords in `ephemeral = true` variables (Terraform >= 1.10, OpenTofu >= 1.11), not `sensitive = true` ones: " +
		"a saved plan (`plan -out`) holds the values of sensitive variables in the clear, while ephemeral values are never " +
		"written to a plan file or to state.",
	Attributes: map[string]schema.Attribute{
		"role": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: "`source` (where content is pushed; one per workspace) or `mirror` (only pulled from).",
			Validators:          []validator.String{stringvalidator.OneOf(roleSource, roleMirror)},
		},
		"reference": schema.StringAttribute{
			Required: true,
			MarkdownDescription: "Registry and optional namespace as `host[:port][/path]`, without scheme, e.g. `harbor.example.com/fleet`. " +
				"A `mirror`'s reference may name cluster labels, so that one registry serves every site that runs its own: " +
				"`zot.{{ .labels.site }}.stores.internal:5000/fleet` is `zot.berlin.stores.internal:5000/fleet` for a cluster labelled `site = berlin`. " +
				"`{{ .labels.<key> }}` is the only syntax; a label fills part of one DNS label of the host, under a fixed domain of at least two labels " +
				"(`stores.internal`), or part of one path component, never the port. A cluster without the label, or whose value would change the " +
				"reference's shape (a `.`, `/`, `:` or `@`), or whose label a cluster join of another workspace set, gets no entry for this registry, " +
				"and its ClusterOCIStorage and the route report `ReferencesResolved` False naming the cluster, registry and label. " +
				"See the OCI routing guide.",
			Validators: []validator.String{referenceValidator{}},
		},
		"username": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "User for pushing. It stays on the hub: clusters pull with `agent_username`, or without credentials when it is not set, unless `agent_uses_push_credentials` is `true`.",
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
			MarkdownDescription: "Read-only user the cluster agents pull with. Without it agents pull without credentials (or with `username`, when `agent_uses_push_credentials` is `true`).",
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
		"agent_uses_push_credentials": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(false),
			MarkdownDescription: "Deliver `username` and `password_wo` to the clusters this registry is routed to when it has no agent credentials: " +
				"Rancher Fleet's behaviour, which gives every such cluster the right to push. Defaults to `false`: push credentials stay on the hub, " +
				"and the registry's routes report `AgentCredentials` False (`NoAgentCredentials`). Prefer a read-only `agent_username`.",
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
			MarkdownDescription: "PEM bundle of the CA certificates that signed the registry's certificate. Routes deliver it to their clusters in one ManifestWork per cluster, which stays under 450 KiB: the plan warns from 256 KiB on, and when the bundles of a route's registries together reach 256 KiB (naming the route).",
			Validators:          []validator.String{pemValidator{}},
		},
	},
	Owned:     []string{"data"},
	Validate:  validateOCIRegistry,
	Expand:    expandOCIRegistry,
	Flatten:   flattenOCIRegistry,
	CheckPlan: checkOCIRegistryPlan,
})

func validateOCIRegistry(_ context.Context, m *ociRegistryModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if ref := m.Reference; !ref.IsNull() && !ref.IsUnknown() && routing.Templated(ref.ValueString()) && m.Role.ValueString() == roleSource {
		diags.AddAttributeError(path.Root("reference"), "Source reference names labels",
			fmt.Sprintf("reference %q names cluster labels, but role is %q: content is pushed to the source, which is one registry, so its reference is one host. "+
				"Give the source a plain reference and make the per-site registry a mirror (role = %q).", ref.ValueString(), roleSource, roleMirror))
	}
	if ca := m.CACerts; !ca.IsNull() && !ca.IsUnknown() && len(ca.ValueString()) > work.PlanWarning {
		diags.AddAttributeWarning(path.Root("ca_certs"), "Large CA bundle",
			fmt.Sprintf("ca_certs is %s. Every route's chain that lists this registry carries the bundle to each of its clusters in one ManifestWork, which the "+
				"controller does not write over %s (OCM refuses works over %s; the route then reports WorkTooLarge): keep only the CAs that sign the registry's certificate.",
				work.KiB(len(ca.ValueString())), work.KiB(work.Budget), work.KiB(work.Limit)))
	}
	for _, c := range ociRegistryCredentials {
		value, version, user := c.value(m), c.version(m), c.user(m)
		if !value.IsNull() && !value.IsUnknown() && user.IsNull() {
			diags.AddAttributeError(path.Root(c.userAttr), "Missing "+c.userAttr,
				fmt.Sprintf("%s is set but %s is not: registries authenticate with both. Set %s, or remove %s.", c.attr, c.userAttr, c.userAttr, c.attr))
		}
		switch {
		case !value.IsNull() && version.IsNull():
			diags.AddAttributeError(path.Root(c.versionAttr), "Missing "+c.versionAttr,
				fmt.Sprintf("%s is write-only, so Terraform cannot see when it changes: set %s = 1 with it, and change the number whenever the password changes.", c.attr, c.versionAttr))
		case value.IsNull() && !version.IsNull() && !version.IsUnknown():
			diags.AddAttributeError(path.Root(c.attr), "Missing "+c.attr,
				fmt.Sprintf("%s is set but %s is not. To remove the password from the hub, remove both; otherwise set %s.", c.versionAttr, c.attr, c.attr))
		}
	}
	return diags
}

func expandOCIRegistry(_ context.Context, req hubresource.ExpandRequest[ociRegistryModel]) (*unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	plan := req.Plan
	reg := registrysecret.Registry{
		Reference: plan.Reference.ValueString(), Username: plan.Username.ValueString(), AgentUsername: plan.AgentUsername.ValueString(),
		CACerts: plan.CACerts.ValueString(), BasicHTTP: plan.BasicHTTP.ValueBool(), InsecureSkipTLS: plan.InsecureSkipTLS.ValueBool(),
		AgentUsesPushCredentials: plan.AgentUsesPushCreds.ValueBool(),
	}
	data := reg.Data()
	var current map[string]string
	if req.Current != nil {
		var err error
		if current, err = registrysecret.Data(req.Current); err != nil {
			current = map[string]string{} // unreadable: configured values replace it
		}
	}
	for _, c := range ociRegistryCredentials {
		if v, ok := c.sent(req, current); ok {
			data[c.key] = v
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"type": OCIRegistrySecretType,
		"data": registrysecret.Encode(data),
	}}
	obj.SetLabels(map[string]string{OCIRegistryRoleLabel: plan.Role.ValueString()})
	return obj, diags
}

func flattenOCIRegistry(_ context.Context, obj *unstructured.Unstructured, m *ociRegistryModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != OCIRegistrySecretType {
		diags.AddError("Not an OCI registry",
			fmt.Sprintf("Secret %s/%s has type %q, not %q: it is not an OCI registry and cannot be managed as fleet_oci_registry.",
				obj.GetNamespace(), obj.GetName(), t, OCIRegistrySecretType))
		return diags
	}
	data, err := registrysecret.Data(obj)
	if err != nil {
		diags.AddError("Corrupt Secret data", err.Error()+".")
		return diags
	}
	for _, k := range ociRegistryKeys {
		if v, ok := data[k.key]; ok {
			*k.attr(m) = types.StringValue(v)
		} else {
			*k.attr(m) = types.StringNull()
		}
	}
	reg := registrysecret.FromData("", data)
	m.BasicHTTP = types.BoolValue(reg.BasicHTTP)
	m.InsecureSkipTLS = types.BoolValue(reg.InsecureSkipTLS)
	m.AgentUsesPushCreds = types.BoolValue(reg.AgentUsesPushCredentials)
	if role, ok := obj.GetLabels()[OCIRegistryRoleLabel]; ok {
		m.Role = types.StringValue(role)
	} else {
		m.Role = types.StringNull()
	}
	return diags
}

// warnNoAgentCredentials warns, when a plan creates a registry or changes its credentials, that a
// registry with push credentials only is pulled from without credentials. Here, not in Validate,
// which the CLIs run twice a plan.
func warnNoAgentCredentials(c hubresource.PlanCheck[ociRegistryModel], diags *diag.Diagnostics) {
	m := c.Plan
	if m == nil || m.Username.IsNull() || !m.AgentUsername.IsNull() || m.AgentUsesPushCreds.IsUnknown() || m.AgentUsesPushCreds.ValueBool() {
		return
	}
	if p := c.Prior; p != nil && !c.Replace && p.Username.Equal(m.Username) && p.AgentUsername.Equal(m.AgentUsername) && p.AgentUsesPushCreds.Equal(m.AgentUsesPushCreds) {
		return
	}
	diags.AddAttributeWarning(path.Root("agent_username"), "Clusters pull without credentials",
		fmt.Sprintf("Registry %q has push credentials (username) but no agent credentials: the push credentials stay on the hub, and clusters "+
			"pull from it without credentials. Set agent_username and agent_password_wo (a read-only account), or set "+
			"agent_uses_push_credentials = true to deliver the push credentials to its clusters, as Rancher Fleet does.", m.Name.ValueString()))
}

// checkOCIRegistryPlan judges one registry's change against the hub as it was when the plan
// began: a second source registry is an error when no Terraform configuration manages the other
// one, a warning when one does; destroying a registry that routes name is a warning naming them.
func checkOCIRegistryPlan(ctx context.Context, c hubresource.PlanCheck[ociRegistryModel]) diag.Diagnostics {
	var diags diag.Diagnostics
	warnNoAgentCredentials(c, &diags)
	inv := checkedWorkspace(ctx, c, "registry", &diags)
	if inv == nil {
		return diags
	}
	ws := c.Workspace
	if c.Plan == nil {
		name := c.Prior.Name.ValueString()
		var users []string
		for _, r := range inv.Routes {
			if slices.Contains(r.Registries, name) {
				users = append(users, strconv.Quote(r.Name))
			}
		}
		if len(users) > 0 {
			diags.AddWarning("Registry in use", fmt.Sprintf("Destroying registry %q of workspace %s: %s %s %s it. Unless this plan changes %s too, "+
				"%s clusters lose it from their chain.", name, ws, plural(len(users), "route", "routes"), strings.Join(users, ", "), plural(len(users), "names", "name"),
				plural(len(users), "that route", "those routes"), plural(len(users), "its", "their")))
		}
		return diags
	}
	name := c.Plan.Name.ValueString()
	warnUnresolvedReference(c, inv, &diags)
	if ca := c.Plan.CACerts; !ca.IsUnknown() {
		// The routes that list this registry, with its planned bundle and the others' on the hub.
		for _, r := range inv.Routes {
			if !slices.Contains(r.Registries, name) {
				continue
			}
			var parts []work.Part
			for _, reg := range r.Registries {
				size := inv.Registries[reg].CABytes
				if reg == name {
					size = len(ca.ValueString())
				}
				parts = append(parts, work.Part{What: strconv.Quote(reg), Size: size})
			}
			if msg, ok := chainCAWarning(r.Name, parts); ok {
				diags.AddAttributeWarning(path.Root("ca_certs"), chainCASummary, msg)
			}
		}
	}
	wasSource := c.Prior != nil && !c.Replace && c.Prior.Role.ValueString() == roleSource
	if c.Plan.Role.ValueString() != roleSource || wasSource {
		return diags
	}
	priorName := ""
	if c.Prior != nil {
		priorName = c.Prior.Name.ValueString()
	}
	for _, other := range slices.Sorted(maps.Keys(inv.Registries)) {
		reg := inv.Registries[other]
		if reg.Role != roleSource || other == name || other == priorName {
			continue
		}
		if owner := c.Env.OwnedElsewhere(reg.Owner); owner != "" {
			diags.AddAttributeError(path.Root("role"), "Second source registry",
				fmt.Sprintf("Workspace %s has the source registry %q on the hub, and the configuration with owner %q manages it, so this plan cannot make it a mirror; "+
					"a workspace has exactly one source, where content is pushed. Set role = \"mirror\" for %q, or agree with that owner which registry is the source. Nothing was written to the hub.",
					ws, other, owner, name))
		} else if reg.Managed {
			diags.AddAttributeWarning(path.Root("role"), "Second source registry",
				fmt.Sprintf("Workspace %s has the source registry %q on the hub, managed by Terraform; a workspace has exactly one source, where content is pushed. "+
					"If this plan makes %q a mirror or destroys it, %q is the only source; otherwise the workspace has two sources after apply.", ws, other, other, name))
		} else {
			diags.AddAttributeError(path.Root("role"), "Second source registry",
				fmt.Sprintf("Workspace %s already has the source registry %q, which no Terraform configuration manages; a workspace has exactly one source, where content is pushed. "+
					"Set role = \"mirror\" for %q, or make %q a mirror on the hub first.", ws, other, name, other))
		}
	}
	return diags
}

// referenceValidator checks host[:port][/path], which may name cluster labels (routing.ParseReference).
type referenceValidator struct{}

func (referenceValidator) Description(context.Context) string {
	return "must be host[:port][/path] without scheme, optionally naming cluster labels as {{ .labels.<key> }}"
}
func (v referenceValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (referenceValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := routing.ParseReference(req.ConfigValue.ValueString()); err != nil {
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
