#!/usr/bin/env bash
# make demo: start the local fleet (a hub and two workload clusters, eu-01 and us-01, each with
# OCM's work agent and fleet-controller agent, plus two OCI registries on 127.0.0.1, source and
# mirror) and fleet-controller hub on its hub; seed it with sample edge clusters; apply
# examples/quickstart with OpenTofu and the provider built in bin/, show what landed on the hub
# and what the controller made of it, plan a route that an earlier route shadows to show the
# plan-time warning, then apply one that moves a cluster and show the controller moving it.
# Then the pull story on eu-01 (examples/local-fleet): an artifact pushed to the source only
# waits for replication to the mirror and is pulled from the mirror once copied; the hub has then
# measured the mirror's replication lag (OCIReplication), and a plan with a replication_wait below
# it warns that eu-01 will fail over; the app story (examples/local-app): a Helm chart pushed to
# the source (and signed there) and replicated to the mirror is installed on eu-01 by fleet_app
# through that chain, its route in site mode, and upgraded with new values; then the route
# requires cosign signatures (a key pair made by demohub keygen in .fleet/) and an artifact
# signed on the source but replicated without its signature is pulled from the source, the
# mirror skipped as Unverified, the key that signed it shown; last, the mirror stops and the next
# pull fails over to the source. Each step as fleet_oci_pull_status and kubectl show it. Last, storage for site us-01 (examples/local-storage), whose simplyblock operator is the
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
# pushed pushes repository:tag $2 to registry $1 and sets digest to its manifest's digest.
pushed() {
  local out
  out=$(demohub push "$1" "$2")
  echo "$out"
  digest=${out##* }
}
# web is the JSONPath of eu-01's pull web in its ClusterOCIStorage: $1 of its status.
web() { echo "{.status.pulls[?(@.name==\"web\")].status.$1}"; }
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
pushed_at=$SECONDS
demohub pull eu-01 web apps/web:1.0
await '{.status.waiting}' 1
show
echo
echo "== 2. replication copies it to the mirror: eu-01 pulls it from the mirror =="
# At least 4 s after the push (its manifest's created annotation, to the second), so that the
# mirror's lag the hub measures is well above the 1s replication_wait that step 3 plans.
while ((SECONDS - pushed_at < 4)); do sleep 0.5; done
demohub replicate source mirror fleet/apps/web:1.0
await '{.status.active}/{.status.pulled}' local-mirror-eu/1
show

echo
echo "== 3. the hub measured the mirror's replication lag (the push's created annotation to eu-01's first pull from it) =="
for ((i = 0; ; i++)); do
  [[ "$(hubctl -n fleet-default get ocireplications local-mirror-eu -o 'jsonpath={.status.measured}' 2>/dev/null)" == 1 ]] && break
  ((i < 120)) || { echo "the hub has measured no lag of local-mirror-eu after 60s" >&2; exit 1; }
  sleep 0.5
done
hubctl -n fleet-default get ocireplications -o wide
echo
echo "== tofu plan -var replication_wait=1s: a wait below the mirror's p95 lag predicts failover =="
(cd "$story" && "$root/bin/tofu" plan -input=false -no-color -var replication_wait=1s | warnings)

# ---------------------------------------------------------------------------------------------
# The app story on eu-01, while its mirror still runs: a chart installed through the same chain.
app=$root/$fleet/app
mkdir -p "$app"
cp examples/local-app/*.tf "$app/"
tfinit "$app" >/dev/null
echo
echo "== the app story (examples/local-app): a Helm chart pushed to the source, signed there with a new cosign key (step 4 requires it), and replicated to the mirror =="
demohub keygen "$fleet"
demohub chart source fleet/charts/hello:0.1.0
demohub sign source fleet/charts/hello:0.1.0 "$fleet/cosign.key"
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

# The provider's warnings of an apply's plan, and what it changed. The CLI plans each resource
# again as it applies it, so each warning comes twice: the second, folded into "(and one more
# similar warning elsewhere)", is left out.
applied() { awk '/^Warning: (Route|Clusters)/ {w = 1} /^(─|Note:|fleet_oci_|Apply complete|Outputs:|\(and .* similar warnings? elsewhere\))/ {w = 0} w || /^(Apply complete|fleet_oci_route)/'; }
echo
echo "== 4. the route requires cosign signatures by $fleet/cosign.pub; apps/web:1.2 is pushed and signed on the source, replicated to the mirror without its signature =="
pushed source fleet/apps/web:1.2
demohub sign source fleet/apps/web:1.2 "$fleet/cosign.key"
demohub replicate source mirror fleet/apps/web:1.2
TF_VAR_cosign_public_key=$(cat "$fleet/cosign.pub")
export TF_VAR_cosign_public_key # the story's later applies keep the verify block
(cd "$story" && "$root/bin/tofu" apply -auto-approve -input=false -no-color | applied)
demohub pull eu-01 web apps/web:1.2
echo "-- eu-01 skips the mirror (Unverified: no signature there) and pulls apps/web:1.2 and the chart from the source, verified"
# Two pulls: apps/web and the app story's chart, which eu-01's ClusterOCIStorage lists too; the
# new chain makes the agent pull (and verify) both again.
await "$(web digest)/$(web state)/$(web registry)/{.status.active}/{.status.pulled}/{.status.failed}" "$digest/Pulled/local-source/local-source/2/"
show

echo
echo "== 5. the mirror stops; apps/web:1.1 is pushed and signed on the source and asked for: eu-01 fails over to the source =="
demohub stop mirror
pushed source fleet/apps/web:1.1
demohub sign source fleet/apps/web:1.1 "$fleet/cosign.key"
demohub pull eu-01 web apps/web:1.1
await "$(web digest)/$(web state)/$(web registry)/{.status.failed}" "$digest/Pulled/local-source/"
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
