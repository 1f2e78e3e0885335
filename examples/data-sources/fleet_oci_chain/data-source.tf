# Where does store-0203 pull from, and why?
data "fleet_oci_chain" "store" {
  cluster = "store-0203"
  # Wait up to this long for fleet-controller hub to report the routes this apply changed, so
  # the output is current in one apply ("0s" reads at once).
  wait_for_controller = "30s"
}

output "store_chain" {
  value = {
    route      = data.fleet_oci_chain.store.route
    matched_by = data.fleet_oci_chain.store.matched_by
    registries = [for r in data.fleet_oci_chain.store.registries : r.reference]
    # Whether the cluster reaches each registry (Reachable, Unauthorized, TLS or Unreachable), as
    # its agent's connectivity probe last reported; null until it reports.
    reachability = { for r in data.fleet_oci_chain.store.registries : r.name => r.reachability }
    # "controller": the chain fleet-controller hub delivered to the cluster; "provider": no
    # controller (yet), the provider resolved the routes itself.
    resolved_by = data.fleet_oci_chain.store.resolved_by
    # The controller's word on the delivery, e.g. that the last good chain is kept; null without it.
    delivery = data.fleet_oci_chain.store.delivery
  }
}
