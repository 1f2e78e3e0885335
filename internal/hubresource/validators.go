package hubresource

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"
)

// dnsSubdomain checks a Kubernetes object name.
type dnsSubdomain struct{}

func (dnsSubdomain) Description(context.Context) string {
	return "must be a DNS subdomain name: lowercase letters, digits, '-' and '.', at most 253 characters"
}
func (v dnsSubdomain) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (dnsSubdomain) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	checkName(req, resp, validation.IsDNS1123Subdomain)
}

// dnsLabel checks a Kubernetes namespace name.
type dnsLabel struct{}

func (dnsLabel) Description(context.Context) string {
	return "must be a DNS label: lowercase letters, digits and '-', at most 63 characters"
}
func (v dnsLabel) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (dnsLabel) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	checkName(req, resp, validation.IsDNS1123Label)
}

func checkName(req validator.StringRequest, resp *validator.StringResponse, check func(string) []string) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if errs := check(req.ConfigValue.ValueString()); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid name",
			fmt.Sprintf("%q is not a valid Kubernetes name: %s.", req.ConfigValue.ValueString(), strings.Join(errs, "; ")))
	}
}
