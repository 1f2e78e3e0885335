# The local fleet's pull story (make demo): two real registries on 127.0.0.1, the source the
# platform team pushes to and an EU mirror that replication fills, and a route that sends
# cluster eu-01 to the mirror first and to the source second, waiting up to replication_wait
# (ten minutes) for an artifact to reach the mirror. The variables come from the running fleet:
#   eval "$(go run ./hack/demohub tfvars)"
# and fleet_oci_pull_status shows what eu-01's agent reports back through the hub.
# With cosign_public_key set (go run ./hack/demohub keygen .fleet writes .fleet/cosign.pub), the
# route requires artifacts signed by that key: a registry without the signature is skipped as
# Unverified. A replication_wait below the mirror's observed replication lag (fleet_oci_replication)
# gets the plan warning "Clusters will fail over".
terraform {
  required_providers {
    fleet = {
      source = "umkim/fleet"
    }
  }
}

provider "fleet" {}

variable "source_address" {
  description = "host:port of the source registry."
  type        = string
}

variable "mirror_address" {
  description = "host:port of the EU mirror."
  type        = string
}

# Passwords in ephemeral variables: never written to a saved plan (plan -out), which holds a
# sensitive variable's value in the clear, nor to state.
variable "source_push_password" {
  type      = string
  ephemeral = true
}

variable "source_pull_password" {
  type      = string
  ephemeral = true
}

variable "mirror_push_password" {
  type      = string
  ephemeral = true
}

variable "mirror_pull_password" {
  type      = string
  ephemeral = true
}

variable "replication_wait" {
  description = "How long eu-01 waits for an artifact to reach the mirror before it pulls from the source."
  type        = string
  default     = "10m"
}

variable "cosign_public_key" {
  description = "A cosign public key (PEM) whose signature eu-01 requires of every artifact; null verifies nothing."
  type        = string
  default     = null
}

resource "fleet_oci_registry" "source" {
  name                = "local-source"
  role                = "source"
  reference           = "${var.source_address}/fleet"
  basic_http          = true
  username            = "pusher"
  password_wo         = var.source_push_password
  password_wo_version = 1
  # Only these read-only credentials reach the clusters.
  agent_username            = "puller"
  agent_password_wo         = var.source_pull_password
  agent_password_wo_version = 1
}

resource "fleet_oci_registry" "mirror" {
  name                      = "local-mirror-eu"
  role                      = "mirror"
  reference                 = "${var.mirror_address}/fleet"
  basic_http                = true
  username                  = "pusher"
  password_wo               = var.mirror_push_password
  password_wo_version       = 1
  agent_username            = "puller"
  agent_password_wo         = var.mirror_pull_password
  agent_password_wo_version = 1
}

resource "fleet_oci_route" "eu_01" {
  name             = "eu-01-local"
  priority         = 3
  cluster_names    = ["eu-01"]
  registries       = [fleet_oci_registry.mirror.name, fleet_oci_registry.source.name]
  replication_wait = var.replication_wait
  verify = var.cosign_public_key == null ? null : {
    provider    = "cosign"
    public_keys = [var.cosign_public_key]
  }
}

# What eu-01 reports about its pulls: state, the registry that served, the failovers, and the
# key that signed it when the route verifies.
data "fleet_oci_pull_status" "eu_01" {
  workspace  = "fleet-default"
  cluster    = "eu-01"
  depends_on = [fleet_oci_route.eu_01]
}

output "eu_01_pulls" {
  value = [
    for p in data.fleet_oci_pull_status.eu_01.pulls :
    join("", [
      "${p.artifact}: ${p.state}",
      p.registry == null ? "" : " from ${p.registry}",
      p.reason == null ? "" : " (${p.reason})",
      length(p.failovers) == 0 ? "" : " after failing over ${join(", ", [for f in p.failovers : "${f.registry} (${f.reason})"])}",
      " via route ${coalesce(p.route, "-")} [${join(", ", p.chain)}]",
      p.verified == null ? "" : ", verified: ${p.verified}",
    ])
  ]
}
