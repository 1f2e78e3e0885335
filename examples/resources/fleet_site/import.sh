# Import an existing FleetSite by workspace/name.
terraform import fleet_site.berlin fleet-default/berlin
