# Import an existing OCIStorageRoute by its identity: workspace and name
# (Terraform 1.12 or OpenTofu 1.12 and later).
import {
  to       = fleet_oci_route.eu_clusters
  identity = { workspace = "fleet-default", name = "eu-clusters" }
}
