# hello on eu-01 (joined to the Berlin site by fleet_cluster_join.eu_01). Values are a YAML or JSON
# document; reformatting it shows no diff. The password stays in a Secret of the workspace: only
# the reference is written, and the cluster merges its values over these.
resource "fleet_app" "hello" {
  name      = "hello"
  chart     = fleet_chart.hello.name
  cluster   = fleet_cluster_join.eu_01.cluster # "eu-01", joined first
  namespace = "hello"

  values = yamlencode({
    replicaCount = 2
    image        = { tag = "0.1.0" }
  })
  values_secret = { name = "hello-secrets", key = "values.yaml" }

  # Apply returns once the release is Deployed, and fails with the app's message if it fails.
  wait_for = "deployed"
  # Objects of the release edited or deleted on the cluster (drift) are restored by the next
  # apply: one Helm upgrade with the same chart and values.
  repair_drift = true
  timeouts {
    create = "10m"
    update = "10m"
  }
}

# The point-of-sale app of a store of the air-gapped site, under its own release name.
resource "fleet_app" "pos_0201" {
  name         = "pos-0201"
  chart        = fleet_chart.pos.name
  cluster      = fleet_cluster_join.store_0201.cluster
  release_name = "pos"
  namespace    = "pos"
  values       = jsonencode({ store = "0201" })

  # Store clusters are decommissioned without notice: destroy does not wait for the cluster to
  # confirm the uninstall, and warns that the release may be left on it.
  force_destroy = true
}
