# Import an existing FleetChart by its identity: workspace and name
# (Terraform 1.12 or OpenTofu 1.12 and later).
import {
  to       = fleet_chart.hello
  identity = { workspace = "fleet-default", name = "hello" }
}
