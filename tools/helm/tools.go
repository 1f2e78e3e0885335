//go:build tools

// Package tools pins the helm CLI, which lints and renders charts/fleet-controller.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
