// Package fleetrules holds the rules of the fleet's objects that the hub's reconcilers and the
// provider's plan checks must answer alike: which join counts for a cluster, which join holds a
// port_forward ingress entry, the ids of a site's entries. Like internal/routing it is pure: typed
// objects in, an answer out, no client and no I/O, so that a plan warns about exactly what the
// controller does.
package fleetrules

import (
	"cmp"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// Key is a join's namespace/name, as the cluster's fleet.umkim.io/joined-by annotation spells it.
func Key(j *v1alpha1.FleetClusterJoin) string { return j.Namespace + "/" + j.Name }

// older orders joins by creation time, then by namespace, then by name: a total order that every
// reader of the hub computes alike.
func older(a, b *v1alpha1.FleetClusterJoin) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// JoinOf is the join that counts for cluster, of joins: the candidates a caller may see (live
// joins of the workspaces the cluster is bound to; others are skipped here anyway when they name
// another cluster or are being deleted). owner is the cluster's fleet.umkim.io/joined-by
// annotation, "" when it has none. nil when no candidate names the cluster.
//
// The rule: the join the annotation names, when it is a candidate; otherwise the oldest candidate
// (creation time, then namespace/name). It is the one right in transitions because the annotation
// is what the hub really did: the cluster carries that join's labels, whatever their statuses say.
// "A Joined join first" reads a status that lags the labels (a join that just lost the cluster
// still says Joined, one that just took it not yet); "the oldest" alone is wrong whenever an older
// join arrives late (it was not bound, or its workspace gained a binding later) while a younger
// one holds the cluster. The oldest decides only who takes a cluster nobody holds (its owner gone,
// or no longer a candidate), so that the reconciler grants it to the same join a plan predicts.
func JoinOf(cluster, owner string, joins []v1alpha1.FleetClusterJoin) *v1alpha1.FleetClusterJoin {
	var best *v1alpha1.FleetClusterJoin
	for i := range joins {
		j := &joins[i]
		if j.Spec.Cluster != cluster || !j.DeletionTimestamp.IsZero() {
			continue
		}
		if owner != "" && Key(j) == owner {
			return j
		}
		if best == nil || older(j, best) < 0 {
			best = j
		}
	}
	return best
}

// EntryHolder is the join that holds ingress entry id of site: of the live joins of joins bound to
// it, the oldest (creation time, then namespace/name); nil when none is. A port_forward entry
// serves one cluster, so every other join bound to it is not Ready (IngressTaken).
func EntryHolder(joins []v1alpha1.FleetClusterJoin, site, id string) *v1alpha1.FleetClusterJoin {
	var holder *v1alpha1.FleetClusterJoin
	for i := range joins {
		j := &joins[i]
		if j.Spec.Site != site || j.IngressID() != id || !j.DeletionTimestamp.IsZero() {
			continue
		}
		if holder == nil || older(j, holder) < 0 {
			holder = j
		}
	}
	return holder
}

// EntryIDs are the ids of site's ingress entries in spec order, or "none", for messages that say
// what the site has.
func EntryIDs(site *v1alpha1.FleetSite) []string {
	var ids []string
	for _, e := range site.Spec.Edge.Ingress {
		ids = append(ids, e.ID)
	}
	if len(ids) == 0 {
		return []string{"none"}
	}
	return ids
}
