# The storage cluster of site edge-berlin, as the hub reports it, whoever requested it.
data "fleet_storage_site_deployment" "berlin" {
  name = "edge-berlin"
}

output "berlin_storage" {
  value = {
    phase      = data.fleet_storage_site_deployment.berlin.phase
    cluster_id = data.fleet_storage_site_deployment.berlin.storage_cluster.uuid
    pool_name  = data.fleet_storage_site_deployment.berlin.storage_cluster.pool
    nodes      = [for n in data.fleet_storage_site_deployment.berlin.storage_cluster.nodes : n.hostname]
  }
}
