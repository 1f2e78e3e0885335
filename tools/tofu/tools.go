//go:build tools

// Package tools pins the OpenTofu CLI for `make tools`.
package tools

import _ "github.com/opentofu/opentofu/cmd/tofu"
