// Package storagerules holds the rules the simplyblock operator's published v1alpha2 CRDs enforce
// on the site (OperatorOps.spec.discover and the draft's ClusterDeploymentConfig.spec.cluster),
// which the hub's StorageSiteDeployment does not: a request that breaks one passes the hub and
// fails on the site. The provider refuses such a request at plan with these checks, and the site
// simulator's CRDs (internal/testbed/sitesim/v1alpha2) carry the same rules as CEL and OpenAPI
// bounds; storageruletest.Cases is the one table both are tested against.
//
// Pure, like routing: no client, no I/O.
package storagerules

import (
	"fmt"
	"strings"
)

// Source says where the rules come from, for diagnostics and docs.
const Source = "the simplyblock operator's published storage.simplyblock.io/v1alpha2 CRDs"

// The bounds of the site's CRDs.
const (
	MaxWorkers          = 128 // OperatorOps.spec.discover.workers: maxItems
	MaxWorkerLength     = 253 // each worker: maxLength (a Node name)
	MinVCPUCount        = 4   // ClusterDeploymentConfig.spec.cluster.vcpuCount: minimum
	MinSubsystemCount   = 10  // ...maxSubsystemCount: minimum
	MaxSubsystemCount   = 75  // ...maxSubsystemCount: maximum
	MaxHugePagesLength  = 32  // ...minHugePagesSize: maxLength
	MaxLabelValueLength = 63  // a Kubernetes label value, which the hub derives from a deployment's name
)

// Stripes are the erasure-coding layouts [dataChunks, parityChunks] the site accepts.
var Stripes = [][2]int64{{1, 0}, {1, 1}, {2, 1}, {4, 1}, {1, 2}, {2, 2}, {4, 2}}

// Finding is one rule a request breaks: the field (in the operator's JSON names, relative to
// spec.discover or spec.sizing) and why.
type Finding struct {
	Field  string
	Reason string
}

func (f Finding) String() string { return f.Field + ": " + f.Reason }

// Stripe checks an erasure-coding layout; nil means the half is not stated, which the site reads
// as 1 (so dataChunks = 8 alone is 8+1).
func Stripe(data, parity *int64) []Finding {
	d, p := int64(1), int64(1)
	if data != nil {
		d = *data
	}
	if parity != nil {
		p = *parity
	}
	for _, s := range Stripes {
		if s == [2]int64{d, p} {
			return nil
		}
	}
	return []Finding{{"stripe", fmt.Sprintf("%d+%d (dataChunks+parityChunks, an unstated half counting as 1) is not a layout the site accepts: use one of %s", d, p, StripeList())}}
}

// StripeList is Stripes as people write them: "1+0, 1+1, ...".
func StripeList() string {
	out := make([]string, len(Stripes))
	for i, s := range Stripes {
		out[i] = fmt.Sprintf("%d+%d", s[0], s[1])
	}
	return strings.Join(out, ", ")
}

// Discover checks a discovery's node choice.
func Discover(workers []string, nodeSelector map[string]string) []Finding {
	var out []Finding
	if len(workers) > 0 && len(nodeSelector) > 0 {
		out = append(out, Finding{"workers", "workers and nodeSelector are exclusive on the site: state one or the other"})
	}
	if len(workers) > MaxWorkers {
		out = append(out, Finding{"workers", fmt.Sprintf("%d workers; the site takes at most %d", len(workers), MaxWorkers)})
	}
	for _, w := range workers {
		if len(w) > MaxWorkerLength {
			out = append(out, Finding{"workers", fmt.Sprintf("worker %.20q… is %d characters; a node name has at most %d", w, len(w), MaxWorkerLength)})
			break
		}
	}
	return out
}

// Template checks the sizing the hub applies onto the site's draft template; nil is a field the
// request leaves as the discovery wrote it.
func Template(vcpuCount, maxSubsystemCount *int64, minHugePagesSize *string) []Finding {
	var out []Finding
	if vcpuCount != nil && *vcpuCount < MinVCPUCount {
		out = append(out, Finding{"vcpuCount", fmt.Sprintf("%d; the site's template needs at least %d", *vcpuCount, MinVCPUCount)})
	}
	if n := maxSubsystemCount; n != nil && (*n < MinSubsystemCount || *n > MaxSubsystemCount) {
		out = append(out, Finding{"maxSubsystemCount", fmt.Sprintf("%d; the site's template takes %d to %d", *n, MinSubsystemCount, MaxSubsystemCount)})
	}
	if s := minHugePagesSize; s != nil && len(*s) > MaxHugePagesLength {
		out = append(out, Finding{"minHugePagesSize", fmt.Sprintf("%d characters; the site's template takes at most %d", len(*s), MaxHugePagesLength)})
	}
	return out
}

// DeploymentName checks a StorageSiteDeployment's name, which the hub carries as a label value on
// the deployment's ManifestWork.
func DeploymentName(name string) []Finding {
	if len(name) > MaxLabelValueLength {
		return []Finding{{"name", fmt.Sprintf("%d characters; the hub labels the deployment's work with its name, and a label value has at most %d", len(name), MaxLabelValueLength)}}
	}
	return nil
}
