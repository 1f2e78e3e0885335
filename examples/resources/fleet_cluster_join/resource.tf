# eu-01 holds the Berlin site's port_forward entry (one cluster per such entry) and has a GPU;
# eu-02 shares the reverse proxy. fleet-controller hub labels each ManagedCluster
# fleet.site=berlin and capability.fleet.umkim.io/<name>=true, and removes exactly those labels
# when a capability or the join goes.
resource "fleet_cluster_join" "eu_01" {
  name         = "eu-01"
  cluster      = "eu-01"
  site         = fleet_site.berlin.name
  ingress_id   = "wan"
  capabilities = ["gpu", "storage"]
}

resource "fleet_cluster_join" "eu_02" {
  name       = "eu-02"
  cluster    = "eu-02"
  site       = fleet_site.berlin.name
  ingress_id = "proxy"
}

# A store of the air-gapped site: joined, without an ingress entry.
resource "fleet_cluster_join" "store_0201" {
  name         = "store-0201"
  cluster      = "store-0201"
  site         = fleet_site.stores_apac.name
  capabilities = ["pos"]
}
