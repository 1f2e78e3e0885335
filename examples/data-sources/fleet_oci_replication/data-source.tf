# How far behind is harbor-eu, the mirror the EU clusters try first?
data "fleet_oci_replication" "eu" {
  workspace = "fleet-default"
  registry  = "harbor-eu"
}

output "harbor_eu_lag" {
  value = {
    p50      = data.fleet_oci_replication.eu.p50 # e.g. "2m10s"; null until a cluster pulled from it
    p95      = data.fleet_oci_replication.eu.p95
    measured = data.fleet_oci_replication.eu.measured # artifacts the figures are over
    waiting  = data.fleet_oci_replication.eu.waiting  # asked for, not served yet
  }
}

# Fail the plan's checks when the mirror is slower than the wait its route gives it.
check "harbor_eu_keeps_up" {
  assert {
    condition     = coalesce(data.fleet_oci_replication.eu.p95_seconds, 0) <= 600
    error_message = "harbor-eu's p95 replication lag is ${coalesce(data.fleet_oci_replication.eu.p95, "unknown")}, over the 10m replication_wait of eu-clusters: its clusters fail over to harbor-central for new artifacts."
  }
}
