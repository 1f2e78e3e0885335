# The storage cluster of site store-0203, as the hub reports it, whoever requested it.
data "fleet_storage_site_deployment" "store_0203" {
  name = "store-0203"
}

output "store_0203_storage" {
  value = {
    phase      = data.fleet_storage_site_deployment.store_0203.phase
    cluster_id = data.fleet_storage_site_deployment.store_0203.storage_cluster.uuid
    pool_name  = data.fleet_storage_site_deployment.store_0203.storage_cluster.pool
    nodes      = [for n in data.fleet_storage_site_deployment.store_0203.storage_cluster.nodes : n.hostname]
  }
}
