# The whole workspace: which clusters each route wins, shadowed routes, unrouted clusters and
# conflicts between routes.
data "fleet_oci_routing" "this" {
  workspace = "fleet-default"
  # Read after this configuration's routes are applied, so that the checks judge them.
  depends_on = [fleet_oci_route.eu_clusters, fleet_oci_route.air_gapped_stores, fleet_oci_route.lab_sandbox,
  fleet_oci_route.staging, fleet_oci_route.default]
}

output "clusters_per_route" {
  value = { for r in data.fleet_oci_routing.this.routes : r.name => r.clusters }
}

check "every_cluster_routed" {
  assert {
    condition     = length(data.fleet_oci_routing.this.unmatched_clusters) == 0
    error_message = "Clusters without a registry chain: ${join(", ", data.fleet_oci_routing.this.unmatched_clusters)}"
  }
}

# Routes that share a priority, or several default routes: routing stays well-defined (ties go to
# the route whose name sorts first), but a route may not win what its configuration meant it to.
check "no_route_conflicts" {
  assert {
    condition     = length(data.fleet_oci_routing.this.conflicts) == 0
    error_message = "Routes in conflict: ${join("; ", data.fleet_oci_routing.this.conflicts)}"
  }
}

# With fleet-controller hub running, each route also says whether it works: ready is false with
# a status such as "RegistryNotFound: ..." when, say, a registry of its chain is missing. Without
# the controller ready is null, and this check passes.
check "routes_ready" {
  assert {
    condition = alltrue([for r in data.fleet_oci_routing.this.routes : r.ready != false])
    error_message = "Routes not ready: ${join("; ", [
      for r in data.fleet_oci_routing.this.routes : "${r.name}: ${r.status}" if r.ready == false
    ])}"
  }
}
