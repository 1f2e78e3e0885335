//go:build tools

// Package tools pins the oras CLI, the peer the puller benchmark measures against.
package tools

import _ "oras.land/oras/cmd/oras"
