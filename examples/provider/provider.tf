# Point the provider at the hub with a kubeconfig (or KUBE_CONFIG_PATH).
provider "fleet" {
  config_path    = "~/.kube/config"
  config_context = "hub"
  workspace      = "fleet-default"

  # Each hub request, and each resource's plan-time checks, may take this long; a hub that does
  # not answer in time skips the checks with a warning instead of hanging the plan.
  request_timeout = "20s"
}

# Or with explicit settings, e.g. from another module's outputs.
provider "fleet" {
  alias                  = "explicit"
  host                   = "https://hub.example.com:6443"
  cluster_ca_certificate = file("hub-ca.pem")

  # Configurations sharing a workspace know each other's objects: a conflict with another
  # owner's route priority, host or name is a plan error naming that owner.
  owner = "team-a/infra"

  exec {
    api_version = "client.authentication.k8s.io/v1"
    command     = "hub-login"
    args        = ["token"]
  }
}
