# The whole workspace: which clusters each route wins, shadowed routes, unrouted clusters.
data "fleet_oci_routing" "this" {
  workspace = "fleet-default"
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
