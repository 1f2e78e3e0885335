# Has every cluster of the workspace pulled apps/web (any tag), and through which registry?
data "fleet_oci_pull_status" "web" {
  workspace = "fleet-default"
  artifact  = "apps/web"
}

output "web_pulls" {
  value = {
    for p in data.fleet_oci_pull_status.web.pulls : "${p.cluster} ${p.artifact}" => {
      state    = p.state    # Pulled, WaitingForArtifact, Failed or Unknown (no answer yet)
      registry = p.registry # the registry of the chain that served it
      digest   = p.digest
      route    = p.route # the route and chain the cluster pulls through
      chain    = p.chain
      verified = p.verified # who signed it, when the route verifies signatures; else null
    }
  }
}

# Clusters of the workspace that were not asked to pull apps/web at all.
output "web_not_asked" {
  value = data.fleet_oci_pull_status.web.clusters_without_pulls
}

check "web_pulls_ok" {
  assert {
    condition = data.fleet_oci_pull_status.web.counts.failed == 0
    error_message = "apps/web failed to pull on: ${join("; ", [
      for p in data.fleet_oci_pull_status.web.pulls : "${p.cluster}: ${p.message}" if p.state == "Failed"
    ])}"
  }
}

# One cluster, one exact version.
data "fleet_oci_pull_status" "eu_01_web_v2" {
  workspace = "fleet-default"
  cluster   = "eu-01"
  artifact  = "apps/web:v2"
}
