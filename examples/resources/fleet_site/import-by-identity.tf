# Import an existing FleetSite by its identity: workspace and name
# (Terraform 1.12 or OpenTofu 1.12 and later).
import {
  to       = fleet_site.berlin
  identity = { workspace = "fleet-default", name = "berlin" }
}
