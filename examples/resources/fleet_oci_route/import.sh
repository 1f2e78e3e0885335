# Import an existing OCIStorageRoute by workspace/name.
terraform import fleet_oci_route.eu_clusters fleet-default/eu-clusters
