# Passwords in ephemeral variables: never written to a saved plan (plan -out), which holds a
# sensitive variable's value in the clear, nor to state.
variable "harbor_push_password" {
  type      = string
  ephemeral = true
}

variable "harbor_pull_password" {
  type      = string
  ephemeral = true
}

# The workspace's source registry: Fleet pushes bundles here.
resource "fleet_oci_registry" "harbor_central" {
  name      = "harbor-central"
  role      = "source"
  reference = "harbor.example.com/fleet"

  username            = "fleet-push"
  password_wo         = var.harbor_push_password
  password_wo_version = 1

  # Agents pull with a read-only robot account.
  agent_username            = "robot$fleet-pull"
  agent_password_wo         = var.harbor_pull_password
  agent_password_wo_version = 1
}

# A mirror at the edge, served over TLS by a private CA.
resource "fleet_oci_registry" "zot_stores" {
  name      = "zot-stores"
  role      = "mirror"
  reference = "zot.stores.internal:5000/fleet"
  ca_certs  = file("${path.module}/stores-ca.pem")
}

# Mirrors without credentials (anonymous pulls), which the fleet_oci_route examples name.
resource "fleet_oci_registry" "harbor_eu" {
  name      = "harbor-eu"
  role      = "mirror"
  reference = "harbor-eu.example.com/fleet"
}

resource "fleet_oci_registry" "harbor_lab" {
  name      = "harbor-lab"
  role      = "mirror"
  reference = "harbor.lab.internal/fleet"
}

# One mirror for every site that runs its own registry: each cluster pulls from the host its
# region label names (zot.apac.stores.internal:5000/fleet for a cluster labelled region=apac).
# A cluster without the label gets no entry for this registry (ReferencesResolved False).
resource "fleet_oci_registry" "zot_site" {
  name      = "zot-site"
  role      = "mirror"
  reference = "zot.{{ .labels.region }}.stores.internal:5000/fleet"
}
