# The hello chart, pushed with `helm push hello-0.1.0.tgz oci://<registry>/charts`: every cluster
# pulls charts/hello through the registry chain its fleet_oci_route gives.
resource "fleet_chart" "hello" {
  name       = "hello"
  repository = "charts/hello"
  version    = "0.1.0"

  # A new version changes only the chart: apply waits until every app installing it is Deployed
  # with it, and fails with an app's message if its upgrade fails.
  wait_for = "deployed"
}

# Pinned by digest (the manifest `helm push` printed for 1.4.2), instead of a version: every cluster
# pulls exactly this manifest and verifies it, whatever a tag points at. Give one, not both.
resource "fleet_chart" "pos" {
  name       = "pos"
  repository = "charts/pos"
  digest     = "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
}
