# Import an existing FleetChart by workspace/name.
terraform import fleet_chart.hello fleet-default/hello
