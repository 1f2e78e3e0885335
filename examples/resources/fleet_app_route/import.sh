# Import an existing FleetAppRoute by workspace/name.
terraform import fleet_app_route.hello fleet-default/hello
