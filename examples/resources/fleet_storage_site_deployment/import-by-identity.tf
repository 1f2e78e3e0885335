# Import an existing StorageSiteDeployment by its identity: workspace and name
# (Terraform 1.12 or OpenTofu 1.12 and later).
import {
  to       = fleet_storage_site_deployment.store_0203
  identity = { workspace = "fleet-default", name = "store-0203" }
}
