# hello through the Berlin site's ingress entry eu-01 is bound to (site mode, the default), with
# a certificate from cert-manager's ACME issuer.
resource "fleet_app_route" "hello" {
  name    = "hello"
  app     = fleet_app.hello.name
  host    = "hello.berlin.example.com"
  service = { name = "hello", port = 80 }
  tls     = { acme_issuer = "letsencrypt" }
}

# The same app's API through the hub's gateway, which the Berlin site enables (hub_gateway).
resource "fleet_app_route" "hello_api" {
  name    = "hello-api"
  app     = fleet_app.hello.name
  mode    = "hub"
  host    = "hello.berlin.apps.example.com"
  path    = "/api"
  service = { name = "hello", port = 8080 }
  tls     = { secret_name = "hello-api-tls" }
}
