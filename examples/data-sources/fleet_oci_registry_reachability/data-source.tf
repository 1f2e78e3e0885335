# Can the clusters that pull from harbor-central reach it? Each cluster's agent probes the
# registries of its chain every 2 minutes (GET /v2/ with its own credentials and TLS settings).
data "fleet_oci_registry_reachability" "central" {
  registry = fleet_oci_registry.harbor_central.name
}

output "central_reachability" {
  value = {
    # "reachable from n of m clusters"
    summary = "${data.fleet_oci_registry_reachability.central.reachable} of ${data.fleet_oci_registry_reachability.central.clusters}"
    # Unauthorized, TLS or Unreachable, per cluster, with when the agent last confirmed it.
    failing = {
      for f in data.fleet_oci_registry_reachability.central.failing : f.cluster => "${f.state} (probed ${f.probed_at})"
    }
    # Clusters whose agent has not reported on it (not running, or probes off).
    not_reported = data.fleet_oci_registry_reachability.central.not_reported
  }
}
