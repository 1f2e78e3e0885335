# The storage cluster of site store-0203, as the hub reports it, whoever requested it (here
# fleet_storage_site_deployment.store_0203; a literal name reads one another configuration made).
data "fleet_storage_site_deployment" "store_0203" {
  name = fleet_storage_site_deployment.store_0203.name
}

output "store_0203_reported" {
  value = {
    phase      = data.fleet_storage_site_deployment.store_0203.phase
    cluster_id = data.fleet_storage_site_deployment.store_0203.storage_cluster.uuid
    pool_name  = data.fleet_storage_site_deployment.store_0203.storage_cluster.pool
    nodes      = [for n in data.fleet_storage_site_deployment.store_0203.storage_cluster.nodes : n.hostname]
  }
}
