#!/usr/bin/env bash
# make demo: start the local hub and fleet-controller hub on it, seed it with sample edge clusters,
# apply examples/quickstart with OpenTofu and the provider built in bin/, show what landed on the
# hub and what the controller made of it, plan a route that an earlier route shadows to show the
# plan-time warning, then apply one that moves a cluster and show the controller moving it. The hub
# and the controller keep running so you can explore them; `make hub-down` stops both and removes
# .hub/ (the demo's state included).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

hack/hub-up.sh
export KUBE_CONFIG_PATH=$root/.hub/kubeconfig
go run ./hack/demohub -hub "$KUBE_CONFIG_PATH" seed
hack/controller-up.sh

# Use the provider from bin/ instead of a registry download (OpenTofu and Terraform addresses).
# There is no `tofu init`: the provider is not published, so init would fail looking it up in the
# registry, while plan and apply start it from bin/ under dev_overrides.
work=$root/.hub/demo
mkdir -p "$work"
cp examples/quickstart/*.tf "$work/"
cat >"$work/dev.tfrc" <<RC
provider_installation {
  dev_overrides {
    "registry.opentofu.org/umkim/fleet"   = "$root/bin"
    "registry.terraform.io/umkim/fleet"   = "$root/bin"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE=$work/dev.tfrc

echo
echo "== tofu apply (examples/quickstart) =="
(cd "$work" && "$root/bin/tofu" apply -auto-approve -input=false -no-color)

echo
echo "== what the hub now holds in workspace fleet-default =="
go run ./hack/demohub -hub "$KUBE_CONFIG_PATH" show

echo
echo "== what fleet-controller hub made of it: route status, each cluster's chain and its ManifestWork =="
go run ./hack/demohub -hub "$KUBE_CONFIG_PATH" status

# The plan-time checks: only the provider's warnings of each plan are shown.
warnings() { sed -n '/^Warning: \(Route\|Clusters\)/,/^\(─\|Note:\)/p' | grep -v '^\(─\|Note:\)'; }
for priority in 50 5; do
  echo
  echo "== tofu plan -var staging_route_priority=$priority: a route for eu-staging-01 =="
  (cd "$work" && "$root/bin/tofu" plan -input=false -no-color -var staging_route_priority=$priority | warnings)
done

echo
echo "== tofu apply -var staging_route_priority=5: the controller moves eu-staging-01 to its own route =="
(cd "$work" && "$root/bin/tofu" apply -auto-approve -input=false -no-color -var staging_route_priority=5 | grep -E '^(Apply complete|fleet_oci_route)')
go run ./hack/demohub -hub "$KUBE_CONFIG_PATH" status | grep -E '^(OCI STORAGE ROUTE|eu-staging|CLUSTER OCI STORAGE|eu-)'
echo "controller writes so far (fleet_hub_writes_total):"
curl -fsS "http://$(cat .hub/controller.metrics)/metrics" | grep '^fleet_hub_writes_total' || true

cat <<DONE

The local hub and fleet-controller hub (log: .hub/controller.log) are still running:
  export KUBECONFIG=$KUBE_CONFIG_PATH KUBE_CONFIG_PATH=$KUBE_CONFIG_PATH
  (cd .hub/demo && TF_CLI_CONFIG_FILE=\$PWD/dev.tfrc ../../bin/tofu plan)   # no changes
  (cd .hub/demo && TF_CLI_CONFIG_FILE=\$PWD/dev.tfrc ../../bin/tofu plan -var staging_route_priority=5)  # moves a cluster
  make hub-down                                                           # stop it
DONE
