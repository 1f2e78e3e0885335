package hubresource

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"
)

// nameValidator checks a Kubernetes name with one of apimachinery's validators.
type nameValidator struct {
	rule  string
	check func(string) []string
}

// DNSSubdomain checks a Kubernetes object name such as a Secret's (a DNS subdomain).
var DNSSubdomain validator.String = dnsSubdomain

var (
	dnsSubdomain = nameValidator{"must be a DNS subdomain name: lowercase letters, digits, '-' and '.', at most 253 characters", validation.IsDNS1123Subdomain}
	dnsLabel     = nameValidator{"must be a DNS label: lowercase letters, digits and '-', at most 63 characters", validation.IsDNS1123Label}
)

func (v nameValidator) Description(context.Context) string             { return v.rule }
func (v nameValidator) MarkdownDescription(ctx context.Context) string { return v.rule }

func (v nameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if errs := v.check(req.ConfigValue.ValueString()); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+req.Path.String(),
			fmt.Sprintf("%q is not a valid Kubernetes name: %s.", req.ConfigValue.ValueString(), strings.Join(errs, "; ")))
	}
}

// problem says what is wrong with name for the field at path, or "" when it is valid.
func (v nameValidator) problem(field, name string) string {
	if errs := v.check(name); len(errs) > 0 {
		return fmt.Sprintf("%s: %q is not a valid Kubernetes name (%s): %s.", field, name, v.rule, strings.Join(errs, "; "))
	}
	return ""
}

// identityProblem checks an import identity's workspace and name by the schema's rules.
func identityProblem(workspace, name string) string {
	var p []string
	for _, s := range []string{dnsLabel.problem("workspace", workspace), dnsSubdomain.problem("name", name)} {
		if s != "" {
			p = append(p, s)
		}
	}
	if len(p) == 0 {
		return ""
	}
	return strings.Join(p, " ") + " Set identity = { workspace = \"<workspace>\", name = \"<name>\" } to the object's namespace and name on the hub."
}
