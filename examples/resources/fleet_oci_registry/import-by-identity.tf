# Import an existing OCI storage Secret by its identity: workspace and name
# (Terraform 1.12 or OpenTofu 1.12 and later).
import {
  to       = fleet_oci_registry.harbor_central
  identity = { workspace = "fleet-default", name = "harbor-central" }
}
