# EU clusters pull from the EU Harbor, falling back to the central one; replication to the EU
# mirror may lag up to 10 minutes.
resource "fleet_oci_route" "eu_clusters" {
  name     = "eu-clusters"
  priority = 10
  cluster_selectors = [
    { match_labels = { region = "eu" } },
  ]
  registries       = [fleet_oci_registry.harbor_eu.name, fleet_oci_registry.harbor_central.name]
  replication_wait = "10m"
}

# Air-gapped stores (a ManagedClusterSet) only reach their local zot.
resource "fleet_oci_route" "air_gapped_stores" {
  name           = "air-gapped-stores"
  priority       = 20
  cluster_groups = ["airgap-stores"]
  registries     = [fleet_oci_registry.zot_stores.name]
}

# A per-cluster override is simply a route that names one cluster, ordered first.
resource "fleet_oci_route" "lab_sandbox" {
  name          = "lab-sandbox"
  priority      = 5
  cluster_names = ["lab-sandbox"]
  registries    = [fleet_oci_registry.harbor_lab.name]
}

# Staging clusters outside the EU, selected by expression.
resource "fleet_oci_route" "staging" {
  name     = "staging"
  priority = 30
  cluster_selectors = [{
    match_expressions = [
      { key = "tier", operator = "In", values = ["staging"] },
      { key = "region", operator = "NotIn", values = ["eu"] },
    ]
  }]
  registries = [fleet_oci_registry.harbor_central.name]
}

# Every other cluster.
resource "fleet_oci_route" "default" {
  name       = "default"
  priority   = 1000
  default    = true
  registries = [fleet_oci_registry.harbor_central.name]
}

# eu-02 uses only artifacts signed with the release key: a registry of the chain that lacks the
# signature is skipped (Unverified) and the next one serves.
resource "fleet_oci_route" "signed_eu" {
  name          = "signed-eu"
  priority      = 6
  cluster_names = ["eu-02"]
  registries = [fleet_oci_registry.harbor_eu.name, fleet_oci_registry.harbor_central.name]
  verify = {
    provider    = "cosign"
    public_keys = [file("${path.module}/cosign.pub")]
  }
}
