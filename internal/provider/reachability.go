package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// clusterReach is one registry's reachability from one cluster, as its agent reported it (the
// ClusterOCIStorage's status.reachability).
type clusterReach struct {
	Cluster, State string
	ProbedAt       time.Time // zero when not reported
}

// reachOf returns each cluster's report of registry, sorted by cluster, from the statuses of a
// workspace's ClusterOCIStorages (by cluster); chained lists the clusters whose chain names
// registry, reported or not.
func reachOf(statuses map[string]v1alpha1.ClusterOCIStorageStatus, registry string) (reports []clusterReach, chained []string) {
	for cluster, st := range statuses {
		if slices.Contains(st.Chain, registry) {
			chained = append(chained, cluster)
		}
		for _, r := range st.Reachability {
			if r.Registry == registry {
				cr := clusterReach{Cluster: cluster, State: r.State}
				if r.ProbedAt != nil {
					cr.ProbedAt = r.ProbedAt.Time
				}
				reports = append(reports, cr)
			}
		}
	}
	slices.SortFunc(reports, func(a, b clusterReach) int { return strings.Compare(a.Cluster, b.Cluster) })
	slices.Sort(chained)
	return reports, chained
}

// probeStatuses reads the status of every ClusterOCIStorage of a workspace, by cluster, for
// reachability; nil when the hub does not serve them or they cannot be read: nothing reported.
// They are decoded once per list of them (l's memo): every route of a plan asks. Callers must not
// modify the result.
func probeStatuses(ctx context.Context, l hub.Lister, ws string) map[string]v1alpha1.ClusterOCIStorageStatus {
	v, _ := l.Memo("probe-statuses/"+ws, func() (any, error) {
		items, served, err := listServed(ctx, l, clusterStorageKind, ws)
		if !served || err != nil {
			return map[string]v1alpha1.ClusterOCIStorageStatus(nil), err // a failure is not remembered
		}
		out := map[string]v1alpha1.ClusterOCIStorageStatus{}
		for i := range items {
			var st v1alpha1.ClusterOCIStorageStatus
			var ignored diag.Diagnostics
			if readStatus(&items[i], &st, &ignored) && meta.FindStatusCondition(st.Conditions, v1alpha1.ReadyCondition) != nil {
				out[items[i].GetName()] = st
			}
		}
		return out, nil
	})
	out, _ := v.(map[string]v1alpha1.ClusterOCIStorageStatus)
	return out
}

// reachByCluster is reachOf(statuses, registry) by cluster, made once per plan (l's memo): every
// route whose first registry it is asks. Callers must not modify it.
func reachByCluster(l hub.Lister, ws, registry string, statuses map[string]v1alpha1.ClusterOCIStorageStatus) map[string]clusterReach {
	v, _ := l.Memo("reach-by-cluster/"+ws+"/"+registry, func() (any, error) {
		reports, _ := reachOf(statuses, registry)
		out := make(map[string]clusterReach, len(reports))
		for _, r := range reports {
			out[r.Cluster] = r
		}
		return out, nil
	})
	out, _ := v.(map[string]clusterReach)
	return out
}

// unreachableSummary is the summary of the plan's warning about a route's first registry.
const unreachableSummary = "First registry unreachable"

// checkFirstRegistryReachable warns when the first registry of route is not reachable from some
// of the clusters the route wins once the change applies, as their agents reported it (only
// reported data: a cluster that has not reported counts for nothing). It is a warning: which
// clusters a route wins depends on other routes of the same plan, and the registry's state is the
// network's, not the configuration's.
func checkFirstRegistryReachable(ctx context.Context, c hubresource.PlanCheck[ociRouteModel], route routing.Route, won *routeWon, diags *diag.Diagnostics) {
	if len(route.Registries) == 0 {
		return
	}
	statuses := probeStatuses(ctx, c.Hub, c.Workspace)
	if len(statuses) == 0 {
		return
	}
	wins, err := won.Clusters()
	if err != nil || len(wins) == 0 {
		return
	}
	first := route.Registries[0]
	reach := reachByCluster(c.Hub, c.Workspace, first, statuses)
	var failing []clusterReach
	for _, cluster := range wins { // sorted, as the reports were
		if r, ok := reach[cluster]; ok && r.State != v1alpha1.Reachable {
			failing = append(failing, r)
		}
	}
	if len(failing) == 0 {
		return
	}
	msg := fmt.Sprintf("%s is %s of %d clusters of route %s (%s)", first, describeStates(failing), len(wins), route.Name, probedAgo(failing, time.Now()))
	names := make([]string, len(failing))
	for i, f := range failing {
		names[i] = f.Cluster
	}
	if len(route.Registries) > 1 {
		msg += fmt.Sprintf("; they pull from %s", route.Registries[1])
	} else {
		msg += "; the route has no other registry, so their pulls fail"
	}
	msg += fmt.Sprintf(". Clusters: %s. Reported by their agents' connectivity probes; fix the registry or the clusters' network, "+
		"or put a registry they reach first.", listAtMost(names, 20))
	diags.AddAttributeWarning(path.Root("registries").AtListIndex(0), unreachableSummary, msg)
}

// describeStates says how clusters fail, e.g. "Unreachable from 3" or "Unreachable from 2 and
// Unauthorized from 1".
func describeStates(failing []clusterReach) string {
	counts := map[string]int{}
	var order []string
	for _, f := range failing {
		if counts[f.State] == 0 {
			order = append(order, f.State)
		}
		counts[f.State]++
	}
	slices.Sort(order)
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%s from %d", s, counts[s])
	}
	return strings.Join(parts, " and ")
}

// probedAgo says how old the oldest of the reports is, e.g. "probed 2m ago".
func probedAgo(reports []clusterReach, now time.Time) string {
	var oldest time.Time
	for _, r := range reports {
		if !r.ProbedAt.IsZero() && (oldest.IsZero() || r.ProbedAt.Before(oldest)) {
			oldest = r.ProbedAt
		}
	}
	if oldest.IsZero() {
		return "probe time not reported"
	}
	return "probed " + ago(now.Sub(oldest)) + " ago"
}

// ago is d for people: seconds under a minute, else minutes, else hours.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}
