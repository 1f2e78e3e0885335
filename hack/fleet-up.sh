#!/usr/bin/env bash
# Starts a local fleet (hack/localfleet: the local hub plus workload clusters, each with its own
# kube-apiserver and etcd on 127.0.0.1 and Open Cluster Management's work agent) in the
# background and waits until every agent has synced with the hub. State lives in .fleet/:
# kubeconfig (the hub's admin), <cluster>.kubeconfig, <cluster>.hub-kubeconfig (the agent's hub
# credentials), <cluster>.work-agent.log, fleet.log, pid. Idempotent: a fleet that is already
# running is left alone. Stop it with hack/fleet-down.sh.
# Needs bin/kube-apiserver, bin/etcd and bin/work-agent (make testbed).
#   FLEET_CLUSTERS    comma-separated cluster names (default eu-01,us-01: demo clusters, seeded)
#   FLEET_REGISTRIES  comma-separated names of OCI registries to run for the fleet (default none);
#                     addresses and credentials in .fleet/registries.json
#   FLEET_AGENT       path of fleet-controller to run `fleet-controller agent` on every cluster
#                     (default none); FLEET_AGENT_ARGS adds flags to it
#   FLEET_SYNC        the work agents' status sync interval (default 5s)
#   FLEET_SITE_SIMULATOR  a cluster on which to run the test bed's simplyblock site simulator, with
#                     NVMe worker Nodes, for StorageSiteDeployments (default none)
#   FLEET_TIMEOUT     seconds to wait (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."

fleet=.fleet
timeout=${FLEET_TIMEOUT:-300}
clusters=${FLEET_CLUSTERS:-eu-01,us-01}
export FLEET_TESTBED_BIN=${FLEET_TESTBED_BIN:-$PWD/bin}

usage() {
  cat <<USAGE
local fleet ready: hub at $(server "$fleet/kubeconfig")
  export KUBECONFIG=$PWD/$fleet/kubeconfig KUBE_CONFIG_PATH=$PWD/$fleet/kubeconfig
USAGE
  for c in ${clusters//,/ }; do
    echo "  cluster $c at $(server "$fleet/$c.kubeconfig"): kubectl --kubeconfig $fleet/$c.kubeconfig   agent log: $fleet/$c.work-agent.log"
  done
  cat <<USAGE
  the hub controller on it: bin/fleet-controller hub --kubeconfig $fleet/kubeconfig
  log: $fleet/fleet.log   stop: make fleet-down
USAGE
}

# running tells whether the pid in .fleet/pid is a live localfleet: not a reused pid, not a zombie.
running() {
  [[ -f $fleet/pid ]] && [[ "$(ps -p "$(cat "$fleet/pid")" -o stat=,comm= 2>/dev/null)" =~ ^[^Z][^\ ]*\ +localfleet$ ]]
}

server() { sed -n 's/^ *server: *//p' "$1" | head -n 1; }

if running; then
  echo "local fleet already running (pid $(cat "$fleet/pid"))"
  clusters=$(sed -n 's/^clusters=//p' "$fleet/clusters" 2>/dev/null || echo "$clusters")
  usage
  exit 0
fi

rm -rf "$fleet" # what a fleet that died left behind
mkdir -p "$fleet"
echo "clusters=$clusters" >"$fleet/clusters"
echo "building hack/localfleet"
go build -o "$fleet/localfleet" ./hack/localfleet
nohup "$fleet/localfleet" -dir "$fleet" -clusters "$clusters" -registries "${FLEET_REGISTRIES:-}" \
  -agent "${FLEET_AGENT:-}" -agent-args "${FLEET_AGENT_ARGS:-}" -status-sync-interval "${FLEET_SYNC:-5s}" \
  -site-simulator "${FLEET_SITE_SIMULATOR:-}" \
  >"$fleet/fleet.log" 2>&1 </dev/null &
echo $! >"$fleet/pid"
echo "starting the local fleet (pid $(cat "$fleet/pid"); clusters $clusters), waiting up to ${timeout}s"

fail() {
  echo "local fleet: $1; last lines of $fleet/fleet.log:" >&2
  tail -n 40 "$fleet/fleet.log" >&2
  exit 1
}

for ((i = 0; i < timeout; i++)); do
  running || { rm -f "$fleet/pid"; fail "it exited"; }
  # localfleet logs "ready" after writing every kubeconfig.
  if grep -q '^localfleet: .* ready in ' "$fleet/fleet.log" && curl -ksf --max-time 2 "$(server "$fleet/kubeconfig")/readyz" >/dev/null; then
    usage
    exit 0
  fi
  sleep 1
done
hack/fleet-down.sh >&2 || true
fail "not ready after ${timeout}s (stopped it)"
