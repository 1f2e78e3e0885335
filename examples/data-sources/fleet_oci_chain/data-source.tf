# Where does store-0203 pull from, and why?
data "fleet_oci_chain" "store" {
  cluster = "store-0203"
}

output "store_chain" {
  value = {
    route      = data.fleet_oci_chain.store.route
    matched_by = data.fleet_oci_chain.store.matched_by
    registries = [for r in data.fleet_oci_chain.store.registries : r.reference]
  }
}
