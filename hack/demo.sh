#!/usr/bin/env bash
# make demo: start the local fleet (a hub and two workload clusters, eu-01 and us-01, each with
# OCM's work agent and fleet-controller agent, plus two OCI registries on 127.0.0.1, source and
# mirror) and fleet-controller hub on its hub; seed it with sample edge clusters; apply
# examples/quickstart with OpenTofu and the provider built in bin/, show what landed on the hub
# and what the controller made of it, plan a route that an earlier route shadows to show the
# plan-time warning, then apply one that moves a cluster and show the controller moving it.
# Then the pull story on eu-01 (examples/local-fleet): an artifact pushed to the source only
# waits for replication to the mirror, is pulled from the mirror once copied, and when the mirror
# stops the next pull fails over to the source; each step as fleet_oci_pull_status and kubectl
# show it; before the mirror stops, the app story (examples/local-app): a Helm chart pushed to the
# source and replicated to the mirror is installed on eu-01 by fleet_app through that chain, its
# route in site mode, and upgraded with new values. Last, storage for site us-01 (examples/local-storage), whose simplyblock operator is the
# test bed's simulator: the draft's nodes, then approval and the storage cluster Online. The fleet and the controller keep running so you can explore them; `make fleet-down`
# stops them and removes .fleet/ (the demo's state included).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fleet=.fleet

hack/fleet-down.sh >/dev/null # a fresh fleet: the story needs its registries and agents
FLEET_REGISTRIES=source,mirror FLEET_AGENT=$root/bin/fleet-controller FLEET_AGENT_ARGS="--backoff-max 2s" FLEET_SYNC=1s \
  FLEET_SITE_SIMULATOR=us-01 hack/fleet-up.sh
export KUBE_CONFIG_PATH=$root/$fleet/kubeconfig
HUB_DIR=$fleet hack/controller-up.sh

# Install the provider as `make install` does: into a filesystem mirror (here in .fleet/, with the
# CLI configuration that sends umkim/fleet there and every other provider to its registry), and
# `tofu init` each configuration from it, so lock files and version constraints work as with a
# published provider, offline.
hack/install-provider.sh "$root/$fleet/mirror" "$root/$fleet/fleet.tfrc"
export TF_CLI_CONFIG_FILE=$root/$fleet/fleet.tfrc
tfinit() { (cd "$1" && "$root/bin/tofu" init -input=false -no-color | grep -E '^- Install(ed|ing) umkim/fleet|successfully initialized'); }
work=$root/$fleet/demo
mkdir -p "$work"
cp examples/quickstart/*.tf "$work/"
echo
echo "== tofu init (examples/quickstart): the provider from the mirror =="
tfinit "$work"

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
curl -fsS "http://$(cat $fleet/controller.metrics)/metrics" | grep '^fleet_hub_writes_total' || true

# ---------------------------------------------------------------------------------------------
# The pull story on eu-01.
hubctl() { bin/kubectl --kubeconfig "$fleet/kubeconfig" "$@"; }
euctl() { bin/kubectl --kubeconfig "$fleet/eu-01.kubeconfig" "$@"; }
demohub() { go run ./hack/demohub -hub "$KUBE_CONFIG_PATH" -registries "$fleet/registries.json" "$@"; }
story=$root/$fleet/story
mkdir -p "$story"
cp examples/local-fleet/*.tf "$story/"
tfinit "$story" >/dev/null
eval "$(demohub tfvars)" # the registries' addresses and passwords, as TF_VAR_ variables
# show prints eu-01's pulls as fleet_oci_pull_status and kubectl see them.
show() {
  (cd "$story" && "$root/bin/tofu" apply -refresh-only -auto-approve -input=false -no-color | sed -n '/^Outputs:/,$p')
  echo "-- kubectl on eu-01: the OCIPull the work carried, its status written by fleet-controller agent"
  euctl -n fleet-system get ocipulls -o wide
  echo "-- kubectl on the hub: eu-01's ClusterOCIStorage, the pull-status reconciler's summary"
  hubctl -n fleet-default get clusterocistorages eu-01 -o wide
}
# await waits until the hub's summary of eu-01 says JSONPath $1 is $2.
await() {
  for ((i = 0; i < 120; i++)); do
    [[ "$(hubctl -n fleet-default get clusterocistorages eu-01 -o "jsonpath=$1")" == "$2" ]] && return 0
    sleep 0.5
  done
  echo "eu-01's ClusterOCIStorage: $1 is not $2 after 60s" >&2
  euctl -n fleet-system get ocipulls -o yaml >&2
  exit 1
}

echo
echo "== the pull story: route eu-01-local sends eu-01 to the EU mirror, then the source (examples/local-fleet) =="
(cd "$story" && "$root/bin/tofu" apply -auto-approve -input=false -no-color | grep -E '^(Apply complete|fleet_oci_route)')
echo
echo "== 1. apps/web:1.0 is pushed to the source only; eu-01 is asked to pull it =="
demohub push source fleet/apps/web:1.0
demohub pull eu-01 web apps/web:1.0
await '{.status.waiting}' 1
show
echo
echo "== 2. replication copies it to the mirror: eu-01 pulls it from the mirror =="
demohub replicate source mirror fleet/apps/web:1.0
await '{.status.active}/{.status.pulled}' local-mirror-eu/1
show

# ---------------------------------------------------------------------------------------------
# The app story on eu-01, while its mirror still runs: a chart installed through the same chain.
app=$root/$fleet/app
mkdir -p "$app"
cp examples/local-app/*.tf "$app/"
tfinit "$app" >/dev/null
echo
echo "== the app story (examples/local-app): a Helm chart pushed to the source and replicated to the mirror =="
demohub chart source fleet/charts/hello:0.1.0
demohub replicate source mirror fleet/charts/hello:0.1.0
echo
echo "== fleet_app installs it on eu-01: fleet-controller agent pulls it through eu-01's chain and installs it with Helm =="
(cd "$app" && "$root/bin/tofu" apply -auto-approve -input=false -no-color | sed -n '/^Outputs:/,$p')
hubctl -n fleet-default get fleetcharts,fleetapps,fleetapproutes -o wide
echo "-- kubectl on eu-01: the release request the work carried, and what Helm installed (route in site mode: the Ingress)"
euctl -n fleet-system get fleetreleases -o wide
euctl -n hello get configmaps,services,ingresses
echo
echo "== new values: Helm upgrades the release =="
(cd "$app" && "$root/bin/tofu" apply -auto-approve -input=false -no-color -var 'greeting=hello again' | sed -n '/^Outputs:/,$p')
euctl -n hello get configmap hello-hello -o 'jsonpath={.data.greeting}{"\n"}'

echo
echo "== 3. the mirror stops; apps/web:1.1 is pushed to the source and asked for: eu-01 fails over to the source =="
demohub stop mirror
demohub push source fleet/apps/web:1.1
demohub pull eu-01 web apps/web:1.1
# Two pulls now: apps/web and the app story's chart, which eu-01's ClusterOCIStorage lists too.
await '{.status.active}/{.status.pulled}' local-source/2
show

# ---------------------------------------------------------------------------------------------
# The storage story on us-01, whose simplyblock operator is the test bed's simulator.
usctl() { bin/kubectl --kubeconfig "$fleet/us-01.kubeconfig" "$@"; }
storage=$root/$fleet/storage
mkdir -p "$storage"
cp examples/local-storage/*.tf "$storage/"
tfinit "$storage" >/dev/null
outputs() { sed -n '/^Outputs:/,$p'; }
echo
echo "== storage for site us-01 (examples/local-storage): discovery drafts the site's NVMe workers =="
(cd "$storage" && "$root/bin/tofu" apply -auto-approve -input=false -no-color | outputs)
hubctl -n fleet-default get storagesitedeployments -o wide
echo
echo "== approved: the site expands the draft; the apply waits for the storage cluster =="
(cd "$storage" && "$root/bin/tofu" apply -auto-approve -input=false -no-color -var approved=true | outputs)
echo "-- kubectl on us-01: what the (simulated) operator made"
usctl -n simplyblock get storageclusters,storagenodes

cat <<DONE

The local fleet and fleet-controller hub (log: $fleet/controller.log) are still running:
  export KUBECONFIG=$KUBE_CONFIG_PATH KUBE_CONFIG_PATH=$KUBE_CONFIG_PATH TF_CLI_CONFIG_FILE=$TF_CLI_CONFIG_FILE
  (cd $fleet/demo && ../../bin/tofu plan)   # no changes
  (cd $fleet/demo && ../../bin/tofu plan -var staging_route_priority=5)  # moves a cluster
  bin/kubectl --kubeconfig $fleet/eu-01.kubeconfig -n fleet-system get ocipulls,fleetreleases   # eu-01's pulls and releases
  bin/kubectl --kubeconfig $fleet/eu-01.kubeconfig -n hello get all,ingresses   # what Helm installed
  make fleet-down                                                         # stop it all
DONE
