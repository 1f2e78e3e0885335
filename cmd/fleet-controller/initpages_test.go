package main

import (
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAgentStartupPeak runs the binary built as the image is to its modes' usage, after every
// package's init: the agent's peak RSS must be well below the hub's, whose init is the same but
// which runs no pager (internal/initpages), since the pager hands the binary's pages back while
// the packages initialise. Measured side by side, 2 cores at load 20: 30-36 MiB against 48-49.
func TestAgentStartupPeak(t *testing.T) {
	bin := testkit.ShippedBinary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	launcher := testkit.NewRSSLauncher(t)
	// The first run reads the new binary into the page cache; measure the second.
	launcher.Run(t, 0, bin, "hub", "--help")
	hub, _ := launcher.Run(t, 0, bin, "hub", "--help")
	agent, _ := launcher.Run(t, 0, bin, "agent", "--help")
	t.Logf("peak RSS after package init: agent %.1f MiB, hub %.1f MiB", agent, hub)
	if agent > 0.8*hub {
		t.Fatalf("agent --help peaked at %.1f MiB, hub --help at %.1f MiB; want the agent at most 0.8 of the hub (its pager releasing the binary's pages)", agent, hub)
	}
}
