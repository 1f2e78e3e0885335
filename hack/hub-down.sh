#!/usr/bin/env bash
# Stops the local hub started by hack/hub-up.sh, and fleet-controller hub if hack/controller-up.sh
# started it: SIGTERM to the pid in .hub/pid (localhub then
# stops kube-apiserver and etcd and removes their temporary folder), waits for it to exit and
# removes .hub/.
set -euo pipefail
cd "$(dirname "$0")/.."

hub=.hub
hack/controller-down.sh "$hub" # the controller started by hack/controller-up.sh goes first
if [[ ! -f $hub/pid ]]; then
  echo "no local hub running (no $hub/pid)"
  rm -rf "$hub"
  exit 0
fi
pid=$(cat "$hub/pid")
# running: the pid is a live localhub, not a reused pid nor a zombie.
running() { [[ "$(ps -p "$pid" -o stat=,comm= 2>/dev/null)" =~ ^[^Z][^\ ]*\ +localhub$ ]]; }
if running; then
  kill -TERM "$pid"
  for ((i = 0; i < 120; i++)); do
    running || break
    sleep 0.5
  done
  if running; then
    echo "local hub (pid $pid) still running after 60s; killing it" >&2
    kill -KILL "$pid"
  else
    echo "local hub stopped"
  fi
else
  echo "local hub (pid $pid) was not running"
fi
# A localhub that was killed leaves etcd and kube-apiserver behind; end them.
if [[ -x $hub/localhub ]]; then
  sleep 0.5 # let a killed localhub become a zombie or vanish, so that it no longer counts as alive
  "$hub/localhub" -reap
fi
rm -rf "$hub"
