package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestPullInitRunsNoCollection runs the binary with the runtime's GC and init traces: the
// packages' init must run no garbage collection in the pull mode (internal/initgc pauses it),
// and does in the agent mode, which keeps the collector on.
func TestPullInitRunsNoCollection(t *testing.T) {
	bin := testkit.Binary(t, "github.com/umkim/terraform-provider-fleet/cmd/fleet-controller")
	for _, c := range []struct {
		mode     string
		wantGCs  bool
		whatText string
	}{
		{"pull", false, "none: the collector is paused"},
		{"agent", true, "some: the collector is on"},
	} {
		cmd := exec.Command(bin, c.mode, "--help")
		cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1,inittrace=1")
		out, _ := cmd.CombinedOutput()
		// Collections before the last package's init line ran during init.
		gcs, inits, seen := 0, 0, 0
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "gc "):
				seen++
			case strings.HasPrefix(line, "init "):
				inits++
				gcs = seen
			}
		}
		if inits < 100 {
			t.Fatalf("%s --help: %d init trace lines; want the runtime's init trace\n%s", c.mode, inits, out)
		}
		if (gcs > 0) != c.wantGCs {
			t.Errorf("%s: %d collections during the packages' init; want %s", c.mode, gcs, c.whatText)
		}
		t.Logf("%s: %d packages initialised, %d collections meanwhile", c.mode, inits, gcs)
	}
}
