package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// A route's verify block: the signatures its clusters require (puller.Verify), checked at plan
// time by the rules the agent applies.

type verifyModel struct {
	Provider          types.String `tfsdk:"provider"`
	PublicKeys        types.List   `tfsdk:"public_keys"`
	Certificates      types.List   `tfsdk:"certificates"`
	TrustedIdentities types.List   `tfsdk:"trusted_identities"`
}

var verifyType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"provider": types.StringType, "public_keys": types.ListType{ElemType: types.StringType},
	"certificates": types.ListType{ElemType: types.StringType}, "trusted_identities": types.ListType{ElemType: types.StringType},
}}

var verifyAttribute = schema.SingleNestedAttribute{
	Optional: true,
	MarkdownDescription: "Require signatures: the route's clusters verify every artifact at each registry of the chain before fetching any of its " +
		"content. A registry that has the artifact without a trusted signature (a mirror that replicated the artifact but not its signature) " +
		"fails as `Unverified` and the agent moves on to the next registry; an artifact signed nowhere fails the pull. Keys and certificates " +
		"are checked at plan time. See the agent pull guide.",
	Attributes: map[string]schema.Attribute{
		"provider": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: "`cosign` (key-based cosign signatures, found as OCI 1.1 referrers or under the `sha256-<digest>.sig` tag) or `notation` (notation signatures, found as referrers).",
			Validators:          []validator.String{stringvalidator.OneOf(puller.VerifyCosign, puller.VerifyNotation)},
		},
		"public_keys": schema.ListAttribute{
			Optional: true, ElementType: types.StringType,
			MarkdownDescription: "cosign: public keys, PEM (ECDSA, RSA or Ed25519, as `cosign generate-key-pair` writes `cosign.pub`), at most 16; a signature by any of them is enough.",
		},
		"certificates": schema.ListAttribute{
			Optional: true, ElementType: types.StringType,
			MarkdownDescription: "notation: the trust store, root CA certificates in PEM, at most 16; a signature's certificate chain must lead to one of them.",
		},
		"trusted_identities": schema.ListAttribute{
			Optional: true, ElementType: types.StringType,
			MarkdownDescription: "notation: the trust policy's trusted identities, such as `x509.subject: C=US, ST=WA, O=Example, CN=release` (C, ST and O at least); none trusts any signer the certificates vouch for.",
		},
	},
}

// maxVerifyItems bounds each list of a verify block, as the CRD does.
const maxVerifyItems = 16

// verifyOf reads the verify block: nil when it is null; known is false when a value is still
// unknown.
func verifyOf(ctx context.Context, obj types.Object) (v *puller.Verify, known bool, diags diag.Diagnostics) {
	if obj.IsNull() {
		return nil, true, nil
	}
	if obj.IsUnknown() || !allKnown(obj) {
		return nil, false, nil
	}
	var m verifyModel
	diags.Append(obj.As(ctx, &m, basetypes.ObjectAsOptions{})...)
	v = &puller.Verify{Provider: m.Provider.ValueString()}
	diags.Append(listInto(ctx, m.PublicKeys, &v.PublicKeys)...)
	diags.Append(listInto(ctx, m.Certificates, &v.Certificates)...)
	diags.Append(listInto(ctx, m.TrustedIdentities, &v.TrustedIdentities)...)
	return v, !diags.HasError(), diags
}

func listInto(ctx context.Context, l types.List, into *[]string) diag.Diagnostics {
	if l.IsNull() {
		return nil
	}
	return l.ElementsAs(ctx, into, false)
}

// validateRouteVerify reports the problems of the route's verify block on the attribute they
// concern; nothing while a value is unknown.
func validateRouteVerify(ctx context.Context, m *ociRouteModel) diag.Diagnostics {
	v, known, diags := verifyOf(ctx, m.Verify)
	if v == nil || !known {
		return diags
	}
	for attrName, l := range map[string][]string{"public_keys": v.PublicKeys, "certificates": v.Certificates, "trusted_identities": v.TrustedIdentities} {
		if len(l) > maxVerifyItems {
			diags.AddAttributeError(path.Root("verify").AtName(attrName), "Invalid verify", fmt.Sprintf("verify.%s has %d elements; at most %d.", attrName, len(l), maxVerifyItems))
		}
	}
	for _, p := range v.Problems() {
		at := path.Root("verify").AtName(p.Attr)
		if p.Index >= 0 {
			at = at.AtListIndex(p.Index)
		}
		diags.AddAttributeError(at, "Invalid verify", fmt.Sprintf("verify.%s %s.", p.Field(), p.Message))
	}
	return diags
}

// verifySpec is the CRD's spec.verify for v: empty lists are left out (the CRD refuses a
// cosign block with certificates, even empty ones).
func verifySpec(v *puller.Verify) map[string]any {
	spec := map[string]any{"provider": v.Provider}
	for k, l := range map[string][]string{"publicKeys": v.PublicKeys, "certificates": v.Certificates, "trustedIdentities": v.TrustedIdentities} {
		if len(l) > 0 {
			spec[k] = toAny(l)
		}
	}
	return spec
}

// flattenRouteVerify reads spec.verify back into the model, keeping an empty list of the
// configuration empty rather than null.
func flattenRouteVerify(ctx context.Context, obj *unstructured.Unstructured, m *ociRouteModel) diag.Diagnostics {
	raw, ok, _ := unstructured.NestedMap(obj.Object, "spec", "verify")
	if !ok {
		m.Verify = types.ObjectNull(verifyType.AttrTypes)
		return nil
	}
	prior := verifyModel{PublicKeys: types.ListNull(types.StringType), Certificates: types.ListNull(types.StringType), TrustedIdentities: types.ListNull(types.StringType)}
	var diags diag.Diagnostics
	if !m.Verify.IsNull() && !m.Verify.IsUnknown() {
		diags.Append(m.Verify.As(ctx, &prior, basetypes.ObjectAsOptions{})...)
	}
	provider, _ := raw["provider"].(string)
	list := func(p types.List, key string) attr.Value {
		return keepEmpty(p, stringList(raw[key]), func(v []attr.Value) attr.Value { return types.ListValueMust(types.StringType, v) }, types.ListNull(types.StringType))
	}
	m.Verify = types.ObjectValueMust(verifyType.AttrTypes, map[string]attr.Value{
		"provider":           types.StringValue(provider),
		"public_keys":        list(prior.PublicKeys, "publicKeys"),
		"certificates":       list(prior.Certificates, "certificates"),
		"trusted_identities": list(prior.TrustedIdentities, "trustedIdentities"),
	})
	return diags
}

func stringList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, _ := it.(string)
		out = append(out, s)
	}
	return out
}

// checkRouteVerify warns when the plan makes the route start, change or stop verifying
// signatures, naming the clusters the route has after this change: from then on each pulls
// only artifacts signed as verify says, and skips registries without the signature.
func checkRouteVerify(ctx context.Context, c hubresource.PlanCheck[ociRouteModel], route routing.Route, known bool, won *routeWon, diags *diag.Diagnostics) {
	planned, vKnown, _ := verifyOf(ctx, c.Plan.Verify)
	var prior *puller.Verify
	if c.Prior != nil {
		prior, _, _ = verifyOf(ctx, c.Prior.Verify)
	}
	if !vKnown || (planned == nil && prior == nil) || (planned != nil && prior != nil && verifyEqual(*planned, *prior)) {
		return
	}
	clusters := "its clusters"
	if known {
		if names, err := won.Clusters(); err == nil {
			clusters = fmt.Sprintf("its %d cluster(s)", len(names))
			if len(names) > 0 {
				clusters += " (" + listAtMost(names, 20) + ")"
			}
		}
	}
	if planned == nil {
		diags.AddAttributeWarning(path.Root("verify"), "Route stops verifying signatures",
			fmt.Sprintf("Route %q no longer verifies signatures: %s pull artifacts whether signed or not, from the first registry that has them.", route.Name, clusters))
		return
	}
	what := fmt.Sprintf("cosign signatures by %d public key(s)", len(planned.PublicKeys))
	if planned.Provider == puller.VerifyNotation {
		what = fmt.Sprintf("notation signatures by certificates of %d trusted CA(s)", len(planned.Certificates))
		if len(planned.TrustedIdentities) > 0 {
			what += " with identities " + strings.Join(planned.TrustedIdentities, "; ")
		}
	}
	diags.AddAttributeWarning(path.Root("verify"), "Route verifies signatures",
		fmt.Sprintf("Route %q requires %s: %s verify every artifact at each registry of the chain (%s) before using it. A registry without a trusted "+
			"signature is skipped (Unverified) — replicate signatures to mirrors with the artifacts — and an artifact signed nowhere fails to pull; "+
			"artifacts already in a cluster's cache are verified again on their next pull.", route.Name, what, clusters, strings.Join(route.Registries, ", ")))
}

func verifyEqual(a, b puller.Verify) bool {
	return a.Provider == b.Provider && slices.Equal(a.PublicKeys, b.PublicKeys) && slices.Equal(a.Certificates, b.Certificates) &&
		slices.Equal(a.TrustedIdentities, b.TrustedIdentities)
}
