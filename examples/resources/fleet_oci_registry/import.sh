# Import an existing OCI storage Secret by workspace/name.
terraform import fleet_oci_registry.harbor_central fleet-default/harbor-central
