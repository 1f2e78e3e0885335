//go:build tools

// Package tools pins the code generators for `make generate`.
package tools

import (
	_ "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
