# A store in Berlin: its WAN router forwards two public ports to one spoke's Traefik NodePorts
# (port_forward: one cluster), and an external reverse proxy terminates TLS for the others
# (reverse_proxy: shared). Apps may also be published through the hub's gateway.
resource "fleet_site" "berlin" {
  name         = "berlin"
  display_name = "Berlin flagship store"

  ingress = [
    {
      id      = "wan"
      method  = "port_forward"
      address = "203.0.113.10"
      ports   = { http = 30080, https = 30443 }
    },
    {
      id      = "proxy"
      method  = "reverse_proxy"
      address = "edge.berlin.example.com"
    },
  ]

  hub_gateway = {
    enabled = true
    domain  = "berlin.apps.example.com"
  }

  # Credentials only by reference: a Secret of the workspace holds the SSH key.
  jumphost = {
    host = "bastion.berlin.example.com"
    user = "ops"
    credentials_secret_ref = {
      name = "berlin-bastion"
      key  = "ssh-privatekey"
    }
  }
}

# An air-gapped site: no ingress entry and no hub gateway, so no fleet-managed WAN path reaches its
# clusters (the plan of an app route that would need one warns).
resource "fleet_site" "stores_apac" {
  name         = "stores-apac"
  display_name = "APAC stores (air-gapped)"
}
