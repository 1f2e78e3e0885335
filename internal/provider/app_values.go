package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// valuesType is the type of fleet_app's values: a JSON or YAML document of chart values. Two
// documents that parse to the same values are equal (StringSemanticEquals), so that
// jsonencode(...), yamlencode(...) and the JSON the hub returns show no diff when they agree.
type valuesType struct{ basetypes.StringType }

var (
	_ basetypes.StringTypable                    = valuesType{}
	_ basetypes.StringValuableWithSemanticEquals = valuesValue{}
)

func (valuesType) Equal(o attr.Type) bool { _, ok := o.(valuesType); return ok }

func (valuesType) String() string { return "provider.valuesType" }

func (valuesType) ValueType(context.Context) attr.Value { return valuesValue{} }

func (valuesType) ValueFromString(_ context.Context, in basetypes.StringValue) (basetypes.StringValuable, diag.Diagnostics) {
	return valuesValue{StringValue: in}, nil
}

func (t valuesType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	v, err := t.StringType.ValueFromTerraform(ctx, in)
	if err != nil {
		return nil, err
	}
	s, ok := v.(basetypes.StringValue)
	if !ok {
		return nil, fmt.Errorf("values: unexpected value %T", v)
	}
	return valuesValue{StringValue: s}, nil
}

// valuesValue is a values document; see valuesType.
type valuesValue struct{ basetypes.StringValue }

func (valuesValue) Type(context.Context) attr.Type { return valuesType{} }

func (v valuesValue) Equal(o attr.Value) bool {
	other, ok := o.(valuesValue)
	return ok && v.StringValue.Equal(other.StringValue)
}

// StringSemanticEquals tells whether both documents parse to the same values.
func (v valuesValue) StringSemanticEquals(_ context.Context, newValue basetypes.StringValuable) (bool, diag.Diagnostics) {
	other, ok := newValue.(valuesValue)
	if !ok {
		return false, nil
	}
	a, errA := parseValues(v.ValueString())
	b, errB := parseValues(other.ValueString())
	return errA == nil && errB == nil && reflect.DeepEqual(a, b), nil
}

// valuesNull is an unset values document.
func valuesNull() valuesValue { return valuesValue{basetypes.NewStringNull()} }

// parseValues reads a JSON or YAML document of chart values: a mapping, with numbers as int64 or
// float64 as the hub's objects hold them.
func parseValues(doc string) (map[string]any, error) {
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("values is neither JSON nor YAML: %w", err)
	}
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("values is neither JSON nor YAML: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("values must be a mapping of chart values (a JSON object or a YAML map, as jsonencode({...}) or yamlencode({...}) give), got %s", data)
	}
	return m, nil
}

// valuesOf is the document of values the hub holds, as JSON with sorted keys; null when none.
func valuesOf(values map[string]any) (valuesValue, error) {
	if values == nil {
		return valuesNull(), nil
	}
	data, err := json.Marshal(values)
	if err != nil {
		return valuesNull(), err
	}
	return valuesValue{basetypes.NewStringValue(string(data))}, nil
}

// keepEquivalentValues plans the state's values document when the configured one means the same
// values, so that reformatting the document (or writing it as YAML instead of JSON) plans no
// change; an unset document plans null. values is optional and computed for this: Terraform
// plans a configured value as written unless the attribute is computed.
type keepEquivalentValues struct{}

func (keepEquivalentValues) Description(context.Context) string {
	return "Keeps the state's values when the configured document means the same values."
}

func (m keepEquivalentValues) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (keepEquivalentValues) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	switch {
	case req.ConfigValue.IsNull():
		resp.PlanValue = basetypes.NewStringNull()
	case req.ConfigValue.IsUnknown() || req.StateValue.IsNull():
	default:
		if eq, _ := (valuesValue{req.StateValue}).StringSemanticEquals(ctx, valuesValue{req.ConfigValue}); eq {
			resp.PlanValue = req.StateValue
		}
	}
}
