#!/usr/bin/env bash
# make install: build the provider into a filesystem mirror that `terraform init` and `tofu init`
# install it from, offline, and write the CLI configuration that points them at it.
#
#   hack/install-provider.sh [MIRROR [CLI_CONFIG]]
#
# MIRROR (default dist/mirror) gets the provider in the unpacked layout both CLIs read, once per
# registry host, because OpenTofu reads `source = "umkim/fleet"` as registry.opentofu.org/umkim/fleet
# and Terraform as registry.terraform.io/umkim/fleet:
#   MIRROR/registry.terraform.io/umkim/fleet/VERSION/OS_ARCH/terraform-provider-fleet_vVERSION
#   MIRROR/registry.opentofu.org/umkim/fleet/VERSION/OS_ARCH/terraform-provider-fleet_vVERSION
# CLI_CONFIG (default dist/fleet.tfrc) gets a provider_installation block that installs
# umkim/fleet from MIRROR only and every other provider from its registry, as usual; use it with
# TF_CLI_CONFIG_FILE, or copy the block into ~/.terraformrc (Terraform, and OpenTofu when there is
# no ~/.tofurc).
#   VERSION  the provider's version (default 0.1.0, a development version until it is released)
#   GO       the go command (default go); GOOS and GOARCH cross-build as usual
# A rebuild at the same version changes the provider's checksum: run `init -upgrade` in
# configurations whose .terraform.lock.hcl recorded the old one.
set -euo pipefail
cd "$(dirname "$0")/.."
mirror=${1:-dist/mirror}
rc=${2:-dist/fleet.tfrc}
version=${VERSION:-0.1.0}
go=${GO:-go}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "VERSION=$version is not a version such as 0.1.0" >&2; exit 2; }
mkdir -p "$mirror" "$(dirname "$rc")"
mirror=$(cd "$mirror" && pwd)
target=$("$go" env GOOS)_$("$go" env GOARCH)
name=terraform-provider-fleet_v$version
first=
for host in registry.terraform.io registry.opentofu.org; do
  dir=$mirror/$host/umkim/fleet/$version/$target
  rm -rf "$dir"
  mkdir -p "$dir"
  if [[ -z $first ]]; then
    "$go" build -ldflags "-X main.version=$version" -o "$dir/$name" .
    first=$dir/$name
  else
    cp "$first" "$dir/$name"
  fi
done
cat >"$rc" <<RC
# Written by hack/install-provider.sh (make install): umkim/fleet $version from the filesystem
# mirror $mirror, every other provider from its registry.
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/umkim/fleet", "registry.opentofu.org/umkim/fleet"]
  }
  direct {
    exclude = ["registry.terraform.io/umkim/fleet", "registry.opentofu.org/umkim/fleet"]
  }
}
RC
echo "umkim/fleet $version ($target) in $mirror; CLI configuration: export TF_CLI_CONFIG_FILE=$(cd "$(dirname "$rc")" && pwd)/$(basename "$rc")"
