#!/usr/bin/env bash
# Stops the fleet-controller hub that hack/controller-up.sh started for the hub in folder $1
# (.hub or .fleet), if it runs.
set -euo pipefail
cd "$(dirname "$0")/.."

pidfile=${1:?usage: controller-down.sh <hub folder>}/controller.pid
[[ -f $pidfile ]] || exit 0
pid=$(cat "$pidfile")
if [[ "$(ps -p "$pid" -o comm= 2>/dev/null)" == fleet-controlle* ]]; then
  kill -TERM "$pid"
  for ((i = 0; i < 40; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  echo "fleet-controller hub stopped"
fi
rm -f "$pidfile"
