# The local fleet's app story (make demo): a small Helm chart that the demo pushed to the source
# registry (fleet/charts/hello:0.1.0) and replicated to the EU mirror is installed on eu-01 through
# its routed chain (route eu-01-local of examples/local-fleet: the mirror first), and published by
# an Ingress on eu-01 through the site's port-forward entry. fleet-controller agent on eu-01 pulls
# the chart and installs it with Helm; the apply waits until the release is deployed.
terraform {
  required_providers {
    fleet = {
      source = "umkim/fleet"
    }
  }
}

provider "fleet" {}

variable "greeting" {
  description = "What the chart's ConfigMap says: change it to see Helm upgrade the release."
  type        = string
  default     = "hello from the hub"
}

# The lab site: its WAN router forwards two ports to eu-01's ingress.
resource "fleet_site" "lab" {
  name         = "lab"
  display_name = "Local lab"
  ingress = [{
    id      = "wan"
    method  = "port_forward"
    address = "127.0.0.1"
    ports   = { http = 30080, https = 30443 }
  }]
}

resource "fleet_cluster_join" "eu_01" {
  name       = "eu-01"
  cluster    = "eu-01"
  site       = fleet_site.lab.name
  ingress_id = "wan"
}

resource "fleet_chart" "hello" {
  name       = "hello"
  repository = "charts/hello"
  version    = "0.1.0"
}

resource "fleet_app" "hello" {
  name      = "hello"
  chart     = fleet_chart.hello.name
  cluster   = fleet_cluster_join.eu_01.cluster # "eu-01", joined to the lab site first
  namespace = "hello"
  values    = jsonencode({ greeting = var.greeting })
  wait_for  = "deployed"

  timeouts {
    create = "3m"
    update = "3m"
  }
}

resource "fleet_app_route" "hello" {
  name = "hello"
  app  = fleet_app.hello.name
  mode = "site"
  host = "hello.lab.example.test"
  service = {
    name = "hello"
    port = 80
  }
}

output "app" {
  value = "${fleet_app.hello.name} on ${fleet_app.hello.cluster}: ${fleet_app.hello.phase}, revision ${fleet_app.hello.revision}, chart ${fleet_app.hello.digest} from ${fleet_app.hello.registry}"
}

output "url" {
  value = fleet_app_route.hello.url
}
