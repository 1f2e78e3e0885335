#!/usr/bin/env bash
# Starts the local hub (hack/localhub: etcd + kube-apiserver on 127.0.0.1 with the hub's CRDs) in
# the background and waits until its API answers. State lives in .hub/: kubeconfig, hub.log, pid.
# Idempotent: a hub that is already running is left alone. Stop it with hack/hub-down.sh.
# Needs bin/kube-apiserver and bin/etcd (make tools). HUB_TIMEOUT (seconds, default 180) bounds
# the wait.
set -euo pipefail
cd "$(dirname "$0")/.."

hub=.hub
timeout=${HUB_TIMEOUT:-180}
export FLEET_TESTBED_BIN=${FLEET_TESTBED_BIN:-$PWD/bin}

usage() {
  cat <<USAGE
local hub ready at $1
  export KUBECONFIG=$PWD/$hub/kubeconfig KUBE_CONFIG_PATH=$PWD/$hub/kubeconfig
  sample clusters of the demo: go run ./hack/demohub -hub $hub/kubeconfig seed
  log: $hub/hub.log   stop: make hub-down
USAGE
}

# running tells whether the pid in .hub/pid is a live localhub: not a reused pid, not a zombie.
running() {
  [[ -f $hub/pid ]] && [[ "$(ps -p "$(cat "$hub/pid")" -o stat=,comm= 2>/dev/null)" =~ ^[^Z][^\ ]*\ +localhub$ ]]
}

server() { sed -n 's/^ *server: *//p' "$hub/kubeconfig" | head -n 1; }

if running; then
  echo "local hub already running (pid $(cat "$hub/pid"))"
  usage "$(server)"
  exit 0
fi

rm -rf "$hub" # what a hub that died left behind
mkdir -p "$hub"
echo "building hack/localhub"
go build -o "$hub/localhub" ./hack/localhub
nohup "$hub/localhub" -kubeconfig "$hub/kubeconfig" >"$hub/hub.log" 2>&1 </dev/null &
echo $! >"$hub/pid"
echo "starting the local hub (pid $(cat "$hub/pid")), waiting up to ${timeout}s"

fail() {
  echo "local hub: $1; last lines of $hub/hub.log:" >&2
  tail -n 25 "$hub/hub.log" >&2
  exit 1
}

for ((i = 0; i < timeout; i++)); do
  running || { rm -f "$hub/pid"; fail "it exited"; }
  # localhub writes the kubeconfig only once /readyz answered; check it answers from here too.
  if [[ -s $hub/kubeconfig ]] && curl -ksf --max-time 2 "$(server)/readyz" >/dev/null; then
    usage "$(server)"
    exit 0
  fi
  sleep 1
done
hack/hub-down.sh >&2 || true
fail "not ready after ${timeout}s (stopped it)"
