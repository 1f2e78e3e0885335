package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
)

// checkClusterBound warns, at attribute at, when the plan's workspace may not use cluster, which what (a phrase
// naming the object, e.g. `FleetApp ws/web installs on cluster "us-01"`) names: no
// ManagedClusterSet bound to the workspace holds it, so the hub does for it what does (e.g.
// "delivers no release to it") and reports NotBound. A warning, by the soundness rule: a
// ManagedClusterSetBinding of this plan, or of another configuration, may bind one of its sets.
// The decision is inventory.Access, the reconcilers' own, on the workspace's inventory that the
// preload lists once per plan. It reports whether the cluster is bound (or could not be
// checked), so that callers skip the checks that follow only when it is not.
func checkClusterBound[M any](ctx context.Context, c hubresource.PlanCheck[M], what string, at path.Path, cluster, does string, diags *diag.Diagnostics) bool {
	inv := checkedWorkspace(ctx, c, "binding of cluster "+cluster, diags)
	if inv == nil {
		return true
	}
	ca, ok := inv.Access(cluster)
	if !ok || ca.Allowed() {
		return true
	}
	diags.AddAttributeWarning(at, "Cluster not bound to the workspace",
		fmt.Sprintf("%s, but %s. Until such a binding exists the hub %s and reports it NotBound; if a ManagedClusterSetBinding of this plan (or another configuration) binds one of those sets, this resolves itself.",
			what, ca.NotBound(), does))
	return false
}
