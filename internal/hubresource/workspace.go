package hubresource

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// namespaceKind is the hub's Namespace: a workspace is one.
var namespaceKind = hub.Kind{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}

// checkWorkspace tells whether the workspace a new object goes to exists on the hub. A missing
// one is a plan error on `workspace` naming it and what to do (apply would fail with a bare
// `namespaces "…" not found` after the plan was approved); it returns false then, and the other
// checks are skipped. Where the provider's credentials may not read namespaces, or the hub does
// not answer, nothing is said: the write's own error remains. One read per workspace and plan.
func (r *Resource[M, P]) checkWorkspace(ctx context.Context, l hub.Lister, ws, name string, diags *diag.Diagnostics) bool {
	missing, err := l.Memo("hubresource/workspace-missing/"+ws, func() (any, error) {
		_, err := r.env.Client.Get(ctx, namespaceKind, "", ws)
		switch {
		case err == nil:
			return false, nil
		case apierrors.IsNotFound(err):
			return true, nil
		default:
			return false, nil // forbidden, or no answer: not known to be missing, and not asked again
		}
	})
	if err != nil || !missing.(bool) {
		return true
	}
	diags.AddAttributeError(path.Root("workspace"), "Workspace does not exist",
		fmt.Sprintf("The %s %q goes to workspace %q, which is not a namespace on the hub, so apply could not create it. "+
			"Set workspace (or the provider's workspace) to an existing workspace, or create the namespace first "+
			"(kubectl create namespace %s, with its ManagedClusterSetBindings for the clusters it may use).",
			r.typeName(), name, ws, ws))
	return false
}
