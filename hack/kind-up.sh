#!/usr/bin/env bash
# A kind cluster as the hub, for machines with Docker and internet (the local hub of
# `make hub-up` needs neither). Creates the cluster (or reuses it), installs Open Cluster
# Management's CRDs from config/crd/ocm and ours from config/crd/bases, waits until they are
# Established and writes the kubeconfig to .hub/kubeconfig.
#   KIND_CLUSTER_NAME  cluster name (default fleet-hub)
#   KIND_NODE_IMAGE    node image, e.g. kindest/node:v1.35.0 (default: kind's own default)
# Remove it with: kind delete cluster --name fleet-hub && rm -rf .hub
set -euo pipefail
cd "$(dirname "$0")/.."

hub=.hub
name=${KIND_CLUSTER_NAME:-fleet-hub}

for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null || { echo "kind-up needs $tool on PATH" >&2; exit 1; }
done
if [[ -f $hub/pid ]]; then
  echo "the local hub is running ($hub/pid): run make hub-down first" >&2
  exit 1
fi

if kind get clusters 2>/dev/null | grep -qx "$name"; then
  echo "kind cluster $name exists; reusing it"
else
  kind create cluster --name "$name" ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 120s
fi
mkdir -p "$hub"
kind get kubeconfig --name "$name" >"$hub/kubeconfig"
chmod 600 "$hub/kubeconfig"
export KUBECONFIG=$PWD/$hub/kubeconfig

crds=(-f config/crd/ocm/)
if compgen -G 'config/crd/bases/*.yaml' >/dev/null; then
  crds+=(-f config/crd/bases/)
fi
# Server-side apply, forcing ownership: re-running takes over fields another manager applied.
kubectl apply --server-side --force-conflicts "${crds[@]}"
kubectl wait --for condition=Established --timeout 60s "${crds[@]}"

cat <<USAGE
kind hub $name ready
  export KUBECONFIG=$PWD/$hub/kubeconfig KUBE_CONFIG_PATH=$PWD/$hub/kubeconfig
  remove it: kind delete cluster --name $name && rm -rf $hub
USAGE
