package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// predictedFailoverSummary is the summary of the warning that a route's clusters will fail over.
const predictedFailoverSummary = "Clusters will fail over"

// checkPredictedFailover warns when the route's replication_wait is shorter than the observed
// p95 replication lag of its first registry (its OCIReplication on the hub): for new artifacts,
// the clusters the route wins will give up on that registry and pull from the next one. No
// figures, no warning. It reads only the hub as it was when the plan began and this route's
// planned values, so it says the same whatever order the plan checks resources in; the clusters
// named are those the route wins among the hub's routes, which other routes of the same plan
// may change (their own checks report that).
func checkPredictedFailover(ctx context.Context, c hubresource.PlanCheck[ociRouteModel], route routing.Route, won *routeWon, diags *diag.Diagnostics) {
	if len(route.Registries) == 0 || strings.HasPrefix(route.Registries[0], unknownPrefix) {
		return
	}
	first := route.Registries[0]
	var quiet diag.Diagnostics // an unreadable OCIReplication is no data
	reps, _, err := replications(ctx, c.Hub, c.Workspace, &quiet)
	st, ok := reps[first]
	if err != nil || !ok || st.P95 == nil || st.P95.Duration <= route.ReplicationWait {
		return
	}
	next := "no other registry: their pulls of them fail"
	if len(route.Registries) > 1 {
		next = fmt.Sprintf("registry %q", route.Registries[1])
	}
	clusters := "the clusters it wins"
	if names, err := won.Clusters(); err == nil {
		clusters = fmt.Sprintf("%d cluster(s) it wins (%s)", len(names), listAtMost(names, 20))
	}
	waiting := ""
	if st.Waiting > 0 {
		waiting = fmt.Sprintf("; %d artifact(s) still waiting there, the oldest pushed %s", st.Waiting, st.OldestWaiting.UTC().Format("2006-01-02T15:04:05Z"))
	}
	diags.AddAttributeWarning(path.Root("replication_wait"), predictedFailoverSummary, fmt.Sprintf(
		"Route %q waits %s (replication_wait) for registry %q, whose observed replication lag is p95 %s (p50 %s, over %d artifact(s) pushed in the last %s%s). "+
			"For new artifacts, %s will give up on %q before they arrive and pull from %s. Raise replication_wait above %s, or put a registry "+
			"that replicates sooner first (fleet_oci_replication shows the figures).",
		route.Name, route.ReplicationWait, first, st.P95.Duration, st.P50.Duration, st.Measured, st.Window.Duration, waiting,
		clusters, first, next, st.P95.Duration))
}
