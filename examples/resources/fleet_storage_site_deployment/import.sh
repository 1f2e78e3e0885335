# Import an existing StorageSiteDeployment by workspace/name.
terraform import fleet_storage_site_deployment.store_0203 fleet-default/store-0203
