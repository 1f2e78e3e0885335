# Import an existing FleetClusterJoin by workspace/name.
terraform import fleet_cluster_join.eu_01 fleet-default/eu-01
