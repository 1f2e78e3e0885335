#!/usr/bin/env bash
# Stops the local fleet started by hack/fleet-up.sh, and fleet-controller hub if
# hack/controller-up.sh started it there: SIGTERM to the pid in .fleet/pid (localfleet
# then stops the work agents, the clusters' and the hub's kube-apiservers and etcds and removes
# their temporary folders), waits for it to exit and removes .fleet/.
set -euo pipefail
cd "$(dirname "$0")/.."

fleet=.fleet
hack/controller-down.sh "$fleet" # the controller started by hack/controller-up.sh goes first
if [[ ! -f $fleet/pid ]]; then
  echo "no local fleet running (no $fleet/pid)"
  rm -rf "$fleet"
  exit 0
fi
pid=$(cat "$fleet/pid")
# running: the pid is a live localfleet, not a reused pid nor a zombie.
running() { [[ "$(ps -p "$pid" -o stat=,comm= 2>/dev/null)" =~ ^[^Z][^\ ]*\ +localfleet$ ]]; }
if running; then
  kill -TERM "$pid"
  for ((i = 0; i < 180; i++)); do
    running || break
    sleep 0.5
  done
  if running; then
    echo "local fleet (pid $pid) still running after 90s; killing it" >&2
    kill -KILL "$pid"
  else
    echo "local fleet stopped"
  fi
else
  echo "local fleet (pid $pid) was not running"
fi
# A localfleet that was killed leaves work agents, etcds and kube-apiservers behind; end them.
if [[ -x $fleet/localfleet ]]; then
  sleep 0.5 # let a killed localfleet become a zombie or vanish, so that it no longer counts as alive
  "$fleet/localfleet" -reap
fi
rm -rf "$fleet"
