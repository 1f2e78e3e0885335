# The quick start: one source registry and one mirror in the fleet-default workspace of the hub
# that KUBE_CONFIG_PATH points at (make demo points it at the local hub).
terraform {
  required_providers {
    fleet = {
      source = "umkim/fleet"
    }
  }
}

provider "fleet" {}

variable "push_password" {
  type      = string
  sensitive = true
  default   = "change-me"
}

resource "fleet_oci_registry" "central" {
  name                = "harbor-central"
  role                = "source"
  reference           = "harbor.example.com/fleet"
  username            = "fleet-push"
  password_wo         = var.push_password
  password_wo_version = 1
}

resource "fleet_oci_registry" "edge" {
  name      = "zot-edge"
  role      = "mirror"
  reference = "zot.edge.internal:5000/fleet"
}

output "registries" {
  value = [fleet_oci_registry.central.id, fleet_oci_registry.edge.id]
}
