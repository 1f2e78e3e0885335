package controller

import (
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// A workspace's clusters mostly share their chains (one per route, unless a registry's
// reference names a cluster label), and a reconcile compares every cluster's work with its
// desired one. So a reconcile builds the desired work of each distinct chain document once, as a
// template without a namespace, and compares each cluster's cached work with it (labels, digest,
// delete option, manifest configs: none depends on the namespace); only a cluster whose work is
// written gets a work of its own (clusterWork). Building a work per cluster on every reconcile,
// unchanged clusters included, was most of a reconcile's garbage at 10k clusters.

// chainPlanner plans the chain works of one reconcile of a workspace.
type chainPlanner struct {
	workspace string
	byDoc     map[string]*chainTemplate // by chain document
}

// chainTemplate is the desired work of one chain document, Namespace unset, and whether every
// cluster's copy of it is within the work budget.
type chainTemplate struct {
	work *workv1.ManifestWork
	fits bool
	err  error // the chain does not encode
}

// clusterNameMax is the longest cluster (namespace) name, with the JSON around it: a template
// this far under the budget is under it in every cluster's namespace.
const clusterNameMax = 253 + len(`,"namespace":""`)

// What chainWorkHook is called for.
const (
	hookPlan     = "plan"     // a reconcile plans the workspace's works
	hookTemplate = "template" // it builds the desired work of a chain
	hookCopy     = "copy"     // it copies one for a cluster
)

// chainWorkHook, when set (tests), is called with the workspace on every hookPlan, hookTemplate
// and hookCopy.
var chainWorkHook func(event, workspace string)

func newChainPlanner(workspace string) *chainPlanner {
	if chainWorkHook != nil {
		chainWorkHook(hookPlan, workspace)
	}
	return &chainPlanner{workspace: workspace, byDoc: map[string]*chainTemplate{}}
}

// plan returns the desired work of chain for cluster, to compare with (its Namespace may be
// unset: clusterWork gives the cluster its own before it is written), or why it is over the
// work budget.
func (c *chainPlanner) plan(cluster string, chain ocichain.Chain) (*workv1.ManifestWork, error) {
	doc, err := chain.Marshal()
	if err != nil {
		return nil, err
	}
	t := c.byDoc[string(doc)]
	if t == nil {
		t = &chainTemplate{}
		t.work, t.err = chainWork(c.workspace, "", chain)
		if t.err == nil {
			n, err := work.Size(t.work)
			t.fits, t.err = err == nil && n+clusterNameMax <= work.Budget, err
		}
		if chainWorkHook != nil {
			chainWorkHook(hookTemplate, c.workspace)
		}
		c.byDoc[string(doc)] = t
	}
	if t.err != nil {
		return nil, t.err
	}
	if t.fits {
		return t.work, nil
	}
	// Near or over the budget: the cluster's own work, checked as it would be written.
	w := clusterWork(t.work, cluster)
	if err := work.Check(w, chainParts(chain)...); err != nil {
		return nil, err
	}
	return w, nil
}

// clusterWork is a cluster's own copy of the desired work w, which may be a template shared by
// clusters: what is written is this copy (a write decodes the hub's answer into the object).
func clusterWork(w *workv1.ManifestWork, cluster string) *workv1.ManifestWork {
	if w.Namespace == cluster {
		return w
	}
	out := w.DeepCopy()
	out.Namespace = cluster
	if chainWorkHook != nil {
		chainWorkHook(hookCopy, out.Labels[hub.WorkspaceLabel])
	}
	return out
}
