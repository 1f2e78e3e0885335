# The local fleet's storage story (make demo): storage for the site us-01, whose simplyblock
# operator is the test bed's simulator (three NVMe workers and a control-plane node). The first
# apply waits for the draft the site's discovery writes; review its nodes, then apply again with
# -var approved=true: the site expands the draft and the apply waits for the storage cluster,
# whose uuid and pool are what a StorageClass on the site names.
terraform {
  required_providers {
    fleet = {
      source = "umkim/fleet"
    }
  }
}

provider "fleet" {}

variable "approved" {
  description = "Approve the draft (one-way: it cannot be set back to false)."
  type        = bool
  default     = false
}

resource "fleet_storage_site_deployment" "us_01" {
  name    = "us-01"
  cluster = "us-01"

  sizing = {
    name                = "us-01-storage"
    vcpu_count          = 4
    min_huge_pages_size = "4G"
    stripe = {
      data_chunks   = 2
      parity_chunks = 1
    }
  }

  approved = var.approved
  wait_for = var.approved ? "online" : "drafted"

  timeouts {
    create = "5m"
    update = "5m"
  }
}

output "phase" {
  value = fleet_storage_site_deployment.us_01.phase
}

# The nodes the site's discovery found, for review before approving.
output "draft_nodes" {
  value = fleet_storage_site_deployment.us_01.draft.node_refs
}

# What a simplyblock StorageClass on the site names, once the storage cluster is Online.
output "storage_class_parameters" {
  value = var.approved ? {
    cluster_id = fleet_storage_site_deployment.us_01.storage_cluster.uuid
    pool_name  = fleet_storage_site_deployment.us_01.storage_cluster.pool
  } : null
}
