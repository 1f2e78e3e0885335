# Import an existing FleetApp by workspace/name.
terraform import fleet_app.hello fleet-default/hello
