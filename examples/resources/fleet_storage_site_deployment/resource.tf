# Storage for the site store-0203 (a store cluster of the demo fleet): discover its NVMe
# workers, size the draft, and approve it once its nodes have been reviewed. Needs a controller on the hub that carries the request to
# the site: `fleet-controller hub` (storage-site reconciler) or the simplyblock operator.
resource "fleet_storage_site_deployment" "store_0203" {
  name    = "store-0203"
  cluster = "store-0203" # the OCM ManagedCluster

  # Name the workers, or select them by label (node_selector): the site takes one or the other.
  discover = {
    workers = ["worker-1", "worker-2", "worker-3"]
  }

  sizing = {
    name                = "store-0203"
    vcpu_count          = 4
    min_huge_pages_size = "8G"
    max_subsystem_count = 64
    stripe = {
      data_chunks   = 2
      parity_chunks = 1
    }
  }

  # First apply: the draft, for review (draft.node_sets, and the output below). Then approve:
  # approved = true and wait_for = "online". Approval is one-way: setting it back to false fails
  # the plan.
  approved = false
  wait_for = "drafted"

  timeouts {
    create = "30m"
    update = "30m"
  }
}

# The nodes the site's discovery found, for review before approving.
output "store_0203_draft_nodes" {
  value = fleet_storage_site_deployment.store_0203.draft.node_refs
}

# What a simplyblock StorageClass on the site names (known once the cluster is Online).
output "store_0203_storage" {
  value = {
    cluster_id = fleet_storage_site_deployment.store_0203.storage_cluster.uuid
    pool_name  = fleet_storage_site_deployment.store_0203.storage_cluster.pool
  }
}
