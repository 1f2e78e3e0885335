package provider

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// maxUnresolvedShown bounds the clusters a warning about a label-templated reference names.
const maxUnresolvedShown = 3

// warnUnresolvedReference warns, when a plan creates a registry whose reference names cluster
// labels or changes such a reference, about the clusters its routes (as on the hub) send to it
// for which the reference does not resolve: they get no entry for the registry. A warning, not
// an error: the same plan may label the clusters (a fleet_cluster_join) or change the routes.
func warnUnresolvedReference(c hubresource.PlanCheck[ociRegistryModel], inv *inventory.Workspace, diags *diag.Diagnostics) {
	m := c.Plan
	if m.Reference.IsUnknown() || !routing.Templated(m.Reference.ValueString()) {
		return
	}
	if p := c.Prior; p != nil && !c.Replace && p.Reference.Equal(m.Reference) {
		return
	}
	ref, err := routing.ParseReference(m.Reference.ValueString())
	if err != nil {
		return // the validator reports it
	}
	_, rep, err := inv.Resolve()
	if err != nil {
		return
	}
	name := m.Name.ValueString()
	refs := map[string]*routing.Reference{name: ref}
	var unresolved []string
	sent := 0
	for _, res := range rep.Clusters {
		if !slices.Contains(res.Registries, name) {
			continue
		}
		sent++
		cl, _ := inv.Cluster(res.Cluster)
		if _, un := routing.ResolveChain(cl, []string{name}, refs); len(un) > 0 {
			unresolved = append(unresolved, un[0].String())
		}
	}
	if len(unresolved) == 0 {
		return
	}
	shown := unresolved[:min(len(unresolved), maxUnresolvedShown)]
	more := ""
	if len(unresolved) > len(shown) {
		more = fmt.Sprintf("; and %d more", len(unresolved)-len(shown))
	}
	diags.AddAttributeWarning(path.Root("reference"), "Reference does not resolve for some clusters",
		fmt.Sprintf("Registry %q's reference %s names cluster labels that do not resolve for %d of the %d clusters of workspace %s whose routes list it: %s%s. "+
			"Those clusters get no entry for the registry and pull from the rest of their chain (ReferencesResolved False). Label them, unless this plan does.",
			name, m.Reference.String(), len(unresolved), sent, c.Workspace, strings.Join(shown, "; "), more))
}
