//go:build tools

// Package tools pins the CNCF distribution registry that the puller's tests and benchmark pull from.
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
