package controller

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// sampleSize bounds status.matchedClusterSample.
const sampleSize = 10

// routeFacts is everything a route's status is computed from, gathered by the reconciler.
type routeFacts struct {
	Problems []string // spec problems, each "<CRD path>: <message>"; the route is invalid when any
	// Registries the chain names that are not usable: missing, or unreadable Secrets.
	Missing, Unreadable []string
	Conflict            *routing.Conflict // the priority or default conflict the route is part of
	Shadow              *routing.Shadow   // set when earlier routes win every cluster it selects
	Matched             []string          // clusters that resolve to the route, sorted
	Push                []string          // registries of its chain delivered with push credentials (opted in)
	Withheld            []string          // registries of its chain with push credentials only, delivered without
	Kept                int               // matched clusters that keep their last good chain
	TooLarge            []string          // matched clusters whose chain work is over the budget
	TooLargeErr         error             // why, for one of them (the chain is the same for all)
	Failed              []string          // matched clusters whose delivery failed this time
	// Pending are the matched clusters that have not applied the route's chain (or do not report),
	// sorted, with why for the first; Silent those of them that do not report.
	Pending    []string
	PendingWhy string
	Silent     []*notReporting
	// Unresolved are the registries whose reference does not resolve for a matched cluster, by
	// cluster in order.
	Unresolved []routing.Unresolved
	NoChain    int // matched clusters for which no registry of the chain resolves
}

// routeSummary declares what a route's Ready is derived from, in the order a person fixes
// them. Shadowed and AgentCredentials inform and do not count; nor does Delivered: a route is
// Ready when it is in effect on the hub (valid, resolved, without conflict, its chains written
// for every cluster it wins), and Delivered says whether those clusters have applied it.
var routeSummary = kube.Summary{
	{Type: v1alpha1.SpecValidCondition, Polarity: kube.NormalTrue},
	{Type: v1alpha1.RegistriesResolvedCondition, Polarity: kube.NormalTrue},
	{Type: v1alpha1.PriorityConflictCondition, Polarity: kube.AbnormalTrue},
	{Type: v1alpha1.WrittenCondition, Polarity: kube.NormalTrue},
}

// storageSummary declares what a ClusterOCIStorage's Ready is derived from: its chain written,
// then applied on the cluster.
var storageSummary = kube.Summary{
	{Type: v1alpha1.WrittenCondition, Polarity: kube.NormalTrue},
	{Type: v1alpha1.DeliveredCondition, Polarity: kube.NormalTrue},
}

// routeStatus computes a route's status from its facts, keeping the transition times of the
// conditions that did not change.
func routeStatus(route *v1alpha1.OCIStorageRoute, f routeFacts) v1alpha1.OCIStorageRouteStatus {
	st := *route.Status.DeepCopy()
	gen := route.Generation
	st.ObservedGeneration = gen
	st.MatchedClusters = int32(len(f.Matched))
	st.MatchedClusterSample = nil
	if len(f.Matched) > 0 {
		st.MatchedClusterSample = append([]string(nil), f.Matched[:min(sampleSize, len(f.Matched))]...)
	}
	if len(f.Problems) > 0 {
		keepConditions(&st.Conditions, v1alpha1.SpecValidCondition, v1alpha1.ReadyCondition)
		msg := "the route is left out of routing: " + strings.Join(f.Problems, "; ")
		setCondition(&st.Conditions, gen, v1alpha1.SpecValidCondition, false, v1alpha1.ReasonInvalidSpec, msg)
		setCondition(&st.Conditions, gen, v1alpha1.ReadyCondition, false, v1alpha1.ReasonInvalidSpec, msg)
		return st
	}
	setCondition(&st.Conditions, gen, v1alpha1.SpecValidCondition, true, v1alpha1.ReasonValid, "the spec is valid")
	setRegistriesResolvedCondition(&st.Conditions, gen, f)
	setPriorityConflictCondition(&st.Conditions, gen, f.Conflict)
	setShadowedCondition(&st.Conditions, gen, f.Shadow)
	setAgentCredentialsCondition(&st.Conditions, gen, f.Push, f.Withheld)
	setRouteReferencesCondition(&st.Conditions, gen, f)
	setWrittenCondition(&st.Conditions, gen, f)
	setRouteDeliveredCondition(&st.Conditions, gen, f)
	matched := len(f.Matched)
	routeSummary.Ready(&st.Conditions, gen, v1alpha1.ReasonReady,
		fmt.Sprintf("%d %s resolve%s to this route", matched, plural(matched, "cluster", "clusters"), plural(matched, "s", "")))
	return st
}

func setRegistriesResolvedCondition(conds *[]metav1.Condition, gen int64, f routeFacts) {
	switch {
	case len(f.Missing) > 0:
		setCondition(conds, gen, v1alpha1.RegistriesResolvedCondition, false, v1alpha1.ReasonRegistryNotFound,
			fmt.Sprintf("spec.registries names %s, which %s not a registry Secret in this namespace; create it (fleet_oci_registry) or remove it from the chain",
				quoted(f.Missing), plural(len(f.Missing), "is", "are")))
	case len(f.Unreadable) > 0:
		setCondition(conds, gen, v1alpha1.RegistriesResolvedCondition, false, v1alpha1.ReasonRegistryInvalid,
			fmt.Sprintf("the registry Secret %s cannot be read; fix %s data", quoted(f.Unreadable), plural(len(f.Unreadable), "its", "their")))
	default:
		setCondition(conds, gen, v1alpha1.RegistriesResolvedCondition, true, v1alpha1.ReasonRegistriesResolved, "every registry of the chain exists")
	}
}

func setPriorityConflictCondition(conds *[]metav1.Condition, gen int64, c *routing.Conflict) {
	switch {
	case c == nil:
		setCondition(conds, gen, v1alpha1.PriorityConflictCondition, false, v1alpha1.ReasonNoConflict, "no other route shares its priority")
	case c.Field == "default":
		setCondition(conds, gen, v1alpha1.PriorityConflictCondition, true, v1alpha1.ReasonExtraDefault, c.String())
	default:
		setCondition(conds, gen, v1alpha1.PriorityConflictCondition, true, v1alpha1.ReasonSharedPriority, c.String())
	}
}

func setShadowedCondition(conds *[]metav1.Condition, gen int64, s *routing.Shadow) {
	if s == nil {
		setCondition(conds, gen, v1alpha1.ShadowedCondition, false, v1alpha1.ReasonNotShadowed, "the route wins the clusters it selects, or selects none")
		return
	}
	winners := map[string]bool{}
	var names []string
	for _, cl := range s.Claims {
		if !winners[cl.Route] {
			winners[cl.Route] = true
			names = append(names, cl.Route)
		}
	}
	setCondition(conds, gen, v1alpha1.ShadowedCondition, true, v1alpha1.ReasonShadowedByEarlier,
		fmt.Sprintf("the route selects %d %s, but earlier %s %s match%s all of them first; lower its priority or narrow the others",
			len(s.Claims), plural(len(s.Claims), "cluster", "clusters"), plural(len(names), "route", "routes"), quoted(names), plural(len(names), "es", "")))
}

func setAgentCredentialsCondition(conds *[]metav1.Condition, gen int64, push, withheld []string) {
	switch {
	case len(push) > 0:
		setCondition(conds, gen, v1alpha1.AgentCredentialsCondition, false, v1alpha1.ReasonPushCredentials,
			fmt.Sprintf("%s %s no agent credentials and %s in to Fleet's fallback (agentUsesPushCredentials), so %s push credentials are delivered to the route's clusters; "+
				"set agentUsername and agentPassword (agent_username, agent_password_wo) on %s to keep them on the hub",
				plural(len(push), "registry", "registries")+" "+quoted(push), plural(len(push), "has", "have"), plural(len(push), "opts", "opt"),
				plural(len(push), "its", "their"), plural(len(push), "it", "them")))
	case len(withheld) > 0:
		setCondition(conds, gen, v1alpha1.AgentCredentialsCondition, false, v1alpha1.ReasonNoAgentCredentials,
			fmt.Sprintf("%s %s push credentials only, which stay on the hub, so the route's clusters pull from %s without credentials; "+
				"set agentUsername and agentPassword (agent_username, agent_password_wo) on %s, or opt in to delivering the push credentials "+
				"(agentUsesPushCredentials, agent_uses_push_credentials = true)",
				plural(len(withheld), "registry", "registries")+" "+quoted(withheld), plural(len(withheld), "has", "have"),
				plural(len(withheld), "it", "them"), plural(len(withheld), "it", "them")))
	default:
		setCondition(conds, gen, v1alpha1.AgentCredentialsCondition, true, v1alpha1.ReasonAgentCredentials, "clusters receive agent (read-only) credentials only")
	}
}

func setWrittenCondition(conds *[]metav1.Condition, gen int64, f routeFacts) {
	switch {
	case len(f.Failed) > 0:
		setCondition(conds, gen, v1alpha1.WrittenCondition, false, v1alpha1.ReasonDeliveryFailed,
			fmt.Sprintf("the chain could not be written for %d of %d clusters, e.g. %q; retrying", len(f.Failed), len(f.Matched), f.Failed[0]))
	case len(f.TooLarge) > 0:
		setCondition(conds, gen, v1alpha1.WrittenCondition, false, v1alpha1.ReasonWorkTooLarge,
			fmt.Sprintf("the chain is not delivered to %d of %d clusters, which keep the chain delivered before: %v", len(f.TooLarge), len(f.Matched), f.TooLargeErr))
	case f.NoChain > 0:
		setCondition(conds, gen, v1alpha1.WrittenCondition, false, v1alpha1.ReasonNoUsableRegistry,
			fmt.Sprintf("%d of %d clusters get no chain: the reference of no registry of it resolves for them (see ReferencesResolved)", f.NoChain, len(f.Matched)))
	case f.Kept > 0:
		setCondition(conds, gen, v1alpha1.WrittenCondition, false, v1alpha1.ReasonLastGoodChainKept,
			fmt.Sprintf("%d of %d clusters keep the chain delivered before, because this chain names a registry that cannot be used", f.Kept, len(f.Matched)))
	case len(f.Matched) == 0:
		setCondition(conds, gen, v1alpha1.WrittenCondition, true, v1alpha1.ReasonNoClusters, "no cluster resolves to this route")
	default:
		setCondition(conds, gen, v1alpha1.WrittenCondition, true, v1alpha1.ReasonWritten,
			fmt.Sprintf("the chain is written to the ManifestWork of each of its %d %s on the hub", len(f.Matched), plural(len(f.Matched), "cluster", "clusters")))
	}
}

// setRouteDeliveredCondition says whether every cluster the route wins has applied its chain.
func setRouteDeliveredCondition(conds *[]metav1.Condition, gen int64, f routeFacts) {
	n := len(f.Matched)
	switch {
	case n == 0:
		setCondition(conds, gen, v1alpha1.DeliveredCondition, true, v1alpha1.ReasonNoClusters, "no cluster resolves to this route")
	case len(f.Silent) > 0:
		setCondition(conds, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonClusterNotReporting,
			fmt.Sprintf("%d of %d clusters do not report, so the route's chain is not known to be applied there: %s", len(f.Silent), n, f.Silent[0].Message()))
	case len(f.Pending) > 0:
		setCondition(conds, gen, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonWorkPending,
			fmt.Sprintf("%d of %d clusters have not applied the route's chain yet, e.g. %q: %s", len(f.Pending), n, f.Pending[0], f.PendingWhy))
	default:
		setCondition(conds, gen, v1alpha1.DeliveredCondition, true, v1alpha1.ReasonWorkApplied,
			fmt.Sprintf("the chain is applied on %d %s", n, plural(n, "cluster", "clusters")))
	}
}

// chainDelivery is whether a cluster has applied the chain work the hub holds for it.
type chainDelivery struct {
	Applied bool
	Why     string        // why not, when not
	Silent  *notReporting // the cluster does not report: nothing it shows is current
}

// clusterStatus computes a ClusterOCIStorage's status from the cluster's resolution now, its
// replication wait (in Go's form, e.g. 10m0s), its ManifestWork ("<namespace>/<name>"), the
// registry that stops its new chain from being delivered (kept, "" when none), why its work is
// over the work budget (nil when not), the error of writing its work and whether the cluster
// applied the work. It shows what is delivered; the agent's fields are kept. The result shares
// what it keeps of obs but its conditions: deep-copy it before writing it.
func clusterStatus(obs v1alpha1.ClusterOCIStorageStatus, res routing.Resolution, wait, work, kept string, tooLarge, failed error, d chainDelivery,
	unresolved []routing.Unresolved) v1alpha1.ClusterOCIStorageStatus {
	st := obs
	st.Conditions = slices.Clone(obs.Conditions) // set in place below; nothing else is changed in place
	switch {
	case !res.Matched():
		st.Route, st.MatchedBy, st.Chain, st.ReplicationWait, st.Work = "", "", nil, "", ""
		kube.Keep(&st.Conditions, v1alpha1.ReadyCondition)
		setCondition(&st.Conditions, 0, v1alpha1.ReadyCondition, false, v1alpha1.ReasonNoRoute,
			"no route of the workspace matches this cluster; add it to a route or create a default route")
		return st
	case kept != "":
		msg := fmt.Sprintf("route %q names registry %q, which cannot be used; ", res.Route, kept)
		if st.Work == "" {
			msg += "no chain was delivered before, so the cluster has none"
		} else {
			msg += fmt.Sprintf("the chain delivered before (%s) stays in place", strings.Join(st.Chain, ", "))
		}
		setCondition(&st.Conditions, 0, v1alpha1.WrittenCondition, false, v1alpha1.ReasonLastGoodChainKept, msg)
	case tooLarge != nil:
		setCondition(&st.Conditions, 0, v1alpha1.WrittenCondition, false, v1alpha1.ReasonWorkTooLarge,
			fmt.Sprintf("the chain of route %q is not delivered: %v", res.Route, tooLarge))
	case len(res.Registries) == 0 && len(unresolved) > 0:
		st.Route, st.MatchedBy, st.Chain, st.ReplicationWait, st.Work = res.Route, res.MatchedBy.Path().CRD(), nil, wait, ""
		setCondition(&st.Conditions, 0, v1alpha1.WrittenCondition, false, v1alpha1.ReasonNoUsableRegistry,
			fmt.Sprintf("no registry of route %q resolves for the cluster, so it gets no chain (see ReferencesResolved)", res.Route))
	case failed != nil:
		setCondition(&st.Conditions, 0, v1alpha1.WrittenCondition, false, v1alpha1.ReasonDeliveryFailed,
			fmt.Sprintf("the chain of route %q could not be written to ManifestWork %s: %v; retrying", res.Route, work, failed))
	default:
		st.Route, st.MatchedBy, st.ReplicationWait, st.Work = res.Route, res.MatchedBy.Path().CRD(), wait, work
		st.Chain = append([]string(nil), res.Registries...)
		setCondition(&st.Conditions, 0, v1alpha1.WrittenCondition, true, v1alpha1.ReasonWritten,
			fmt.Sprintf("the chain of route %q is written to ManifestWork %s on the hub", res.Route, work))
	}
	setReferencesCondition(&st.Conditions, 0, unresolved, 0)
	// Delivered is about the work the hub holds for the cluster, whose chain the status shows.
	switch {
	case d.Silent != nil:
		kube.Set(&st.Conditions, 0, v1alpha1.DeliveredCondition, metav1.ConditionUnknown, v1alpha1.ReasonClusterNotReporting, d.Silent.Message())
	case st.Work == "":
		setCondition(&st.Conditions, 0, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonWorkPending, "no chain is written for the cluster")
	case d.Applied:
		setCondition(&st.Conditions, 0, v1alpha1.DeliveredCondition, true, v1alpha1.ReasonWorkApplied,
			fmt.Sprintf("ManifestWork %s is applied on the cluster", st.Work))
	default:
		setCondition(&st.Conditions, 0, v1alpha1.DeliveredCondition, false, v1alpha1.ReasonWorkPending,
			fmt.Sprintf("waiting for the cluster's work agent to apply ManifestWork %s%s", st.Work, suffix(d.Why)))
	}
	storageSummary.Ready(&st.Conditions, 0, v1alpha1.ReasonDelivered,
		fmt.Sprintf("the chain of route %q is delivered in ManifestWork %s", st.Route, st.Work))
	return st
}

// setReferencesCondition says whether the references of a chain's registries resolve for the
// clusters: False, with the reason and message of the first that does not, when some do not.
// clusters is how many clusters a route's chain serves, 0 for one cluster's ClusterOCIStorage;
// unresolved are in cluster order.
func setReferencesCondition(conds *[]metav1.Condition, gen int64, unresolved []routing.Unresolved, clusters int) {
	if len(unresolved) == 0 {
		setCondition(conds, gen, v1alpha1.ReferencesResolvedCondition, true, v1alpha1.ReasonReferencesResolved,
			"the reference of every registry of the chain resolves")
		return
	}
	first := unresolved[0]
	msg := first.String()
	if clusters > 0 {
		n := 0
		for i, u := range unresolved {
			if i == 0 || u.Cluster != unresolved[i-1].Cluster {
				n++
			}
		}
		msg = fmt.Sprintf("%d of %d clusters get no entry for a registry whose reference names a label, e.g. %s", n, clusters, msg)
	}
	setCondition(conds, gen, v1alpha1.ReferencesResolvedCondition, false, first.Err.Reason,
		msg+"; label the cluster, or route it to a chain without that registry")
}

// setRouteReferencesCondition is setReferencesCondition for a route and its matched clusters.
func setRouteReferencesCondition(conds *[]metav1.Condition, gen int64, f routeFacts) {
	setReferencesCondition(conds, gen, f.Unresolved, len(f.Matched))
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
