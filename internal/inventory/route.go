package inventory

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// RouteFrom reads an OCIStorageRoute for the routing library. It reads field by field, so that one
// bad value (a replicationWait of "1d" set with kubectl) is an error naming that field while the
// rest of the route is still filled in. An empty list or map reads as nil, as the provider's plan
// model builds it, so that the hub's route (every list written out, RouteSpec) and the plan's
// (empty lists left out) compare equal with a plain comparison.
func RouteFrom(u *unstructured.Unstructured) (routing.Route, error) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	r := routing.Route{Name: u.GetName()}
	var errs []error
	bad := func(field string, err error) { errs = append(errs, fmt.Errorf("spec.%s: %v", field, err)) }

	switch p := spec["priority"].(type) {
	case int64:
		r.Priority = p
	case float64:
		r.Priority = int64(p)
	case nil:
	default:
		bad("priority", fmt.Errorf("not a number: %v", p))
	}
	r.Default, _ = spec["default"].(bool)
	r.ClusterNames = stringList(spec["clusterNames"])
	r.ClusterGroups = stringList(spec["clusterGroups"])
	r.Registries = stringList(spec["registries"])
	if w, ok := spec["replicationWait"].(string); ok {
		d, err := time.ParseDuration(w)
		if err != nil {
			bad("replicationWait", fmt.Errorf("%q is not a duration such as 90s or 10m", w))
		}
		r.ReplicationWait = d
	}
	sels, _ := spec["clusterSelectors"].([]any)
	for _, s := range sels {
		m, _ := s.(map[string]any)
		sel := routing.Selector{}
		if ml, _ := m["matchLabels"].(map[string]any); len(ml) > 0 {
			sel.MatchLabels = map[string]string{}
			for k, v := range ml {
				sel.MatchLabels[k], _ = v.(string)
			}
		}
		exprs, _ := m["matchExpressions"].([]any)
		for _, e := range exprs {
			em, _ := e.(map[string]any)
			key, _ := em["key"].(string)
			op, _ := em["operator"].(string)
			sel.MatchExpressions = append(sel.MatchExpressions, routing.Requirement{Key: key, Operator: routing.Operator(op), Values: stringList(em["values"])})
		}
		r.ClusterSelectors = append(r.ClusterSelectors, sel)
	}
	if len(errs) > 0 {
		return r, fmt.Errorf("%v", joinErrs(errs))
	}
	return r, nil
}

func joinErrs(errs []error) string {
	s := errs[0].Error()
	for _, e := range errs[1:] {
		s += "; " + e.Error()
	}
	return s
}

// stringList reads a list of strings; nil when it is empty.
func stringList(v any) []string {
	items, _ := v.([]any)
	if len(items) == 0 {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, _ := it.(string)
		out = append(out, s)
	}
	return out
}

// RouteSpec is an OCIStorageRoute's spec for r, every field written out — empty lists and false
// included — so that a server-side apply owns them all and removes what another field manager
// added. replicationWait is written as spelled (the hub keeps the spelling, so import reads it
// back as written).
func RouteSpec(r routing.Route, replicationWait string) map[string]any {
	selectors := []any{}
	for _, s := range r.ClusterSelectors {
		labels := map[string]any{}
		for k, v := range s.MatchLabels {
			labels[k] = v
		}
		exprs := []any{}
		for _, e := range s.MatchExpressions {
			exprs = append(exprs, map[string]any{"key": e.Key, "operator": string(e.Operator), "values": anys(e.Values)})
		}
		selectors = append(selectors, map[string]any{"matchLabels": labels, "matchExpressions": exprs})
	}
	return map[string]any{
		"priority":         r.Priority,
		"default":          r.Default,
		"clusterNames":     anys(r.ClusterNames),
		"clusterGroups":    anys(r.ClusterGroups),
		"clusterSelectors": selectors,
		"registries":       anys(r.Registries),
		"replicationWait":  replicationWait,
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
