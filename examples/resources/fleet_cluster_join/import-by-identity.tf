# Import an existing FleetClusterJoin by its identity: workspace and name
# (Terraform 1.12 or OpenTofu 1.12 and later).
import {
  to       = fleet_cluster_join.eu_01
  identity = { workspace = "fleet-default", name = "eu-01" }
}
