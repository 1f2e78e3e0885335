// Package storageruletest is the table of requests that the provider's checks (storagerules) and
// the site simulator's CRDs are both tested against, so that the two say the same.
package storageruletest

import (
	"encoding/json"
	"maps"
	"strings"

	"github.com/umkim/terraform-provider-fleet/internal/storagerules"
)

// Kinds of case: what the fields are written into on the site.
const (
	Discover = "discover" // OperatorOps.spec.discover
	Template = "template" // ClusterDeploymentConfig.spec.cluster
)

// Case is one request. Fields are in the operator's JSON shape, over a base that is valid
// (BaseTemplate for a template, nothing for a discovery); Refused is the field the site refuses,
// "" when it accepts the request.
type Case struct {
	Name    string
	Kind    string
	Fields  map[string]any
	Refused string
}

// BaseTemplate is a template the site accepts: the fields its CRD requires, within bounds.
func BaseTemplate() map[string]any {
	return map[string]any{"name": "sc", "vcpuCount": int64(4), "maxSubsystemCount": int64(10)}
}

// Object is the case's spec.discover or spec.cluster.
func (c Case) Object() map[string]any {
	out := map[string]any{}
	if c.Kind == Template {
		out = BaseTemplate()
	}
	maps.Copy(out, c.Fields)
	return out
}

func stripe(data, parity any) map[string]any {
	s := map[string]any{}
	if data != nil {
		s["dataChunks"] = data
	}
	if parity != nil {
		s["parityChunks"] = parity
	}
	return map[string]any{"stripe": s}
}

func workers(n, length int) []any {
	out := make([]any, n)
	for i := range out {
		name := strings.Repeat("w", length)
		out[i] = name[:length-3] + string(rune('a'+i/26%26)) + string(rune('a'+i%26)) + "x"
	}
	return out
}

// Cases are the requests, accepted and refused, at each rule's edges.
var Cases = []Case{
	{"stripe 1+0", Template, stripe(1, 0), ""},
	{"stripe 1+1", Template, stripe(1, 1), ""},
	{"stripe 2+1", Template, stripe(2, 1), ""},
	{"stripe 4+1", Template, stripe(4, 1), ""},
	{"stripe 1+2", Template, stripe(1, 2), ""},
	{"stripe 2+2", Template, stripe(2, 2), ""},
	{"stripe 4+2", Template, stripe(4, 2), ""},
	{"stripe 4 alone is 4+1", Template, stripe(4, nil), ""},
	{"stripe parity 2 alone is 1+2", Template, stripe(nil, 2), ""},
	{"stripe empty is 1+1", Template, stripe(nil, nil), ""},
	{"stripe 8 alone is 8+1", Template, stripe(8, nil), "stripe"},
	{"stripe 3+1", Template, stripe(3, 1), "stripe"},
	{"stripe 2+0", Template, stripe(2, 0), "stripe"},
	{"stripe 4+3", Template, stripe(4, 3), "stripe"},
	{"stripe parity 0 alone is 1+0", Template, stripe(nil, 0), ""},
	{"vcpuCount 4", Template, map[string]any{"vcpuCount": 4}, ""},
	{"vcpuCount 3", Template, map[string]any{"vcpuCount": 3}, "vcpuCount"},
	{"maxSubsystemCount 10", Template, map[string]any{"maxSubsystemCount": 10}, ""},
	{"maxSubsystemCount 75", Template, map[string]any{"maxSubsystemCount": 75}, ""},
	{"maxSubsystemCount 9", Template, map[string]any{"maxSubsystemCount": 9}, "maxSubsystemCount"},
	{"maxSubsystemCount 76", Template, map[string]any{"maxSubsystemCount": 76}, "maxSubsystemCount"},
	{"minHugePagesSize 32 characters", Template, map[string]any{"minHugePagesSize": strings.Repeat("1", 32)}, ""},
	{"minHugePagesSize 33 characters", Template, map[string]any{"minHugePagesSize": strings.Repeat("1", 33)}, "minHugePagesSize"},
	{"workers alone", Discover, map[string]any{"workers": []any{"w1", "w2"}}, ""},
	{"nodeSelector alone", Discover, map[string]any{"nodeSelector": map[string]any{"nvme": "true"}}, ""},
	{"workers and an empty nodeSelector", Discover, map[string]any{"workers": []any{"w1"}, "nodeSelector": map[string]any{}}, ""},
	{"workers and a nodeSelector", Discover, map[string]any{"workers": []any{"w1"}, "nodeSelector": map[string]any{"nvme": "true"}}, "workers"},
	{"128 workers", Discover, map[string]any{"workers": workers(128, 10)}, ""},
	{"129 workers", Discover, map[string]any{"workers": workers(129, 10)}, "workers"},
	{"a worker of 253 characters", Discover, map[string]any{"workers": workers(1, 253)}, ""},
	{"a worker of 254 characters", Discover, map[string]any{"workers": workers(1, 254)}, "workers"},
}

// Check runs the provider's checks on the case's fields.
func Check(c Case) []storagerules.Finding {
	var o struct {
		Workers           []string          `json:"workers"`
		NodeSelector      map[string]string `json:"nodeSelector"`
		VCPUCount         *int64            `json:"vcpuCount"`
		MaxSubsystemCount *int64            `json:"maxSubsystemCount"`
		MinHugePagesSize  *string           `json:"minHugePagesSize"`
		Stripe            *struct {
			DataChunks   *int64 `json:"dataChunks"`
			ParityChunks *int64 `json:"parityChunks"`
		} `json:"stripe"`
	}
	raw, _ := json.Marshal(c.Object())
	if err := json.Unmarshal(raw, &o); err != nil {
		panic(err)
	}
	if c.Kind == Discover {
		return storagerules.Discover(o.Workers, o.NodeSelector)
	}
	out := storagerules.Template(o.VCPUCount, o.MaxSubsystemCount, o.MinHugePagesSize)
	if o.Stripe != nil {
		out = append(out, storagerules.Stripe(o.Stripe.DataChunks, o.Stripe.ParityChunks)...)
	}
	return out
}
