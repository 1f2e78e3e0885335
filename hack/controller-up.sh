#!/usr/bin/env bash
# Starts bin/fleet-controller hub against the local hub (.hub/kubeconfig, or the local fleet's
# hub with HUB_DIR=.fleet) in the background and waits until it is ready. State lives in that
# folder: controller.pid, controller.log and controller.metrics (the address of its /metrics).
# hack/hub-down.sh or hack/fleet-down.sh stops it with the hub (hack/controller-down.sh).
# Idempotent: a controller that is already running is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

hub=${HUB_DIR:-.hub}
[[ -f $hub/kubeconfig ]] || { echo "no local hub in $hub: run make hub-up (or make fleet-up with HUB_DIR=.fleet) first" >&2; exit 1; }
if [[ -f $hub/controller.pid ]] && kill -0 "$(cat "$hub/controller.pid")" 2>/dev/null; then
  echo "fleet-controller hub already running (pid $(cat "$hub/controller.pid"))"
  exit 0
fi

# The hub gateway's ConfigMaps go to the controller's gateway namespace (--gateway-namespace),
# which the chart's release namespace is on a real hub.
bin/kubectl --kubeconfig "$hub/kubeconfig" get namespace fleet-system >/dev/null 2>&1 ||
  bin/kubectl --kubeconfig "$hub/kubeconfig" create namespace fleet-system >/dev/null

# Free loopback ports for the metrics and probe endpoints.
read -r mport pport < <(go run ./hack/demohub freeports 2)
metrics=127.0.0.1:$mport
probes=127.0.0.1:$pport
echo "$metrics" >"$hub/controller.metrics"
nohup bin/fleet-controller hub --kubeconfig "$hub/kubeconfig" --metrics-bind-address "$metrics" \
  --health-probe-bind-address "$probes" >"$hub/controller.log" 2>&1 </dev/null &
echo $! >"$hub/controller.pid"
for ((i = 0; i < 60; i++)); do
  if curl -fsS --max-time 2 "http://$probes/readyz" >/dev/null 2>&1; then
    echo "fleet-controller hub ready (pid $(cat "$hub/controller.pid"), metrics http://$metrics/metrics, log $hub/controller.log)"
    exit 0
  fi
  kill -0 "$(cat "$hub/controller.pid")" 2>/dev/null || break
  sleep 0.5
done
echo "fleet-controller hub did not become ready; last lines of $hub/controller.log:" >&2
tail -n 20 "$hub/controller.log" >&2
exit 1
