# Test a routing configuration offline, e.g. in `terraform console` or a check block.
locals {
  routes = [
    { name = "eu-clusters", priority = 10, cluster_selectors = [{ match_labels = { region = "eu" } }], registries = ["harbor-eu", "harbor-central"] },
    { name = "lab-sandbox", priority = 5, cluster_names = ["lab-sandbox"], registries = ["harbor-lab"] },
    { name = "default", priority = 1000, default = true, registries = ["harbor-central"] },
  ]
}

output "eu_02" {
  # => { route = "eu-clusters", registries = ["harbor-eu", "harbor-central"], matched_by = "cluster_selectors[0]", replication_wait = "0s" }
  value = provider::fleet::resolve_route(local.routes, { name = "eu-02", labels = { region = "eu" } })
}

# Route resources can be passed as they are.
output "lab" {
  value = provider::fleet::resolve_route([fleet_oci_route.eu_clusters, fleet_oci_route.lab_sandbox], { name = "lab-sandbox" }).route
}

# With the registries' references, the chain is resolved for the cluster: references may name
# cluster labels.
output "store_0201_chain" {
  # => [{ name = "zot-site", reference = "zot.apac.stores.internal:5000/fleet" }, { name = "zot-stores", reference = "zot.stores.internal:5000/fleet" }]
  value = provider::fleet::resolve_route(
    [{ name = "stores", priority = 20, cluster_groups = ["airgap-stores"], registries = ["zot-site", "zot-stores"] }],
    { name = "store-0201", labels = { region = "apac" }, groups = ["airgap-stores"] },
    { "zot-site" = "zot.{{ .labels.region }}.stores.internal:5000/fleet", "zot-stores" = "zot.stores.internal:5000/fleet" },
  ).chain
}
