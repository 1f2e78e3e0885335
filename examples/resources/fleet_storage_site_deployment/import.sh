# Import an existing StorageSiteDeployment by workspace/name.
terraform import fleet_storage_site_deployment.berlin fleet-default/edge-berlin
