# The quick start: registries and routes in the fleet-default workspace of the hub that
# KUBE_CONFIG_PATH points at (make demo points it at the local hub, seeded with sample clusters),
# and what the hub resolves for them.
terraform {
  required_providers {
    fleet = {
      source = "umkim/fleet"
    }
  }
}

provider "fleet" {}

# Passwords in ephemeral variables: never written to a saved plan (plan -out), which holds a
# sensitive variable's value in the clear, nor to state.
variable "push_password" {
  type      = string
  ephemeral = true
  default   = "change-me"
}

variable "pull_password" {
  description = "Read-only password the clusters' agents pull with; only agent credentials reach the clusters."
  type        = string
  ephemeral   = true
  default     = "change-me-too"
}

variable "staging_route_priority" {
  description = "Set to add a route for eu-staging-01 at this priority (make demo tries 50, which an earlier route shadows)."
  type        = number
  default     = null
}

resource "fleet_oci_registry" "central" {
  name                = "harbor-central"
  role                = "source"
  reference           = "harbor.example.com/fleet"
  username            = "fleet-push"
  password_wo         = var.push_password
  password_wo_version = 1
  # What fleet-controller hub delivers to clusters: read-only credentials, never the push ones.
  agent_username            = "fleet-pull"
  agent_password_wo         = var.pull_password
  agent_password_wo_version = 1
}

resource "fleet_oci_registry" "eu" {
  name      = "harbor-eu"
  role      = "mirror"
  reference = "harbor-eu.example.com/fleet"
}

resource "fleet_oci_registry" "stores" {
  name      = "zot-stores"
  role      = "mirror"
  reference = "zot.stores.internal:5000/fleet"
}

resource "fleet_oci_route" "eu" {
  name              = "eu-clusters"
  priority          = 10
  cluster_selectors = [{ match_labels = { region = "eu" } }]
  registries        = [fleet_oci_registry.eu.name, fleet_oci_registry.central.name]
  replication_wait  = "10m"
}

resource "fleet_oci_route" "stores" {
  name           = "air-gapped-stores"
  priority       = 20
  cluster_groups = ["airgap-stores"]
  registries     = [fleet_oci_registry.stores.name]
}

resource "fleet_oci_route" "default" {
  name       = "default"
  priority   = 1000
  default    = true
  registries = [fleet_oci_registry.central.name]
}

resource "fleet_oci_route" "staging" {
  count         = var.staging_route_priority == null ? 0 : 1
  name          = "eu-staging"
  priority      = var.staging_route_priority
  cluster_names = ["eu-staging-01"]
  registries    = [fleet_oci_registry.central.name]
}

data "fleet_oci_routing" "this" {
  depends_on = [fleet_oci_route.eu, fleet_oci_route.stores, fleet_oci_route.default, fleet_oci_route.staging]
}

data "fleet_oci_chain" "store" {
  cluster    = "store-0203"
  depends_on = [fleet_oci_route.eu, fleet_oci_route.stores, fleet_oci_route.default, fleet_oci_route.staging]
}

output "clusters_per_route" {
  value = { for r in data.fleet_oci_routing.this.routes : r.name => r.clusters }
}

output "store_0203_pulls_from" {
  value = [for r in data.fleet_oci_chain.store.registries : r.reference]
}
