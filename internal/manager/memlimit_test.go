package manager

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestSetMemoryLimitFromEnv: the chart's 256 MiB limit gives a soft limit of 90% of it; an
// operator's GOMEMLIMIT wins; a value that is not a byte count is an error naming the variable.
func TestSetMemoryLimitFromEnv(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(math.MaxInt64)

	t.Setenv(MemoryLimitEnv, "268435456")
	soft, err := SetMemoryLimitFromEnv()
	if err != nil || soft != 241591910 || debug.SetMemoryLimit(-1) != 241591910 {
		t.Fatalf("256 MiB: soft limit %d, runtime's %d, error %v; want 241591910 (90%%)", soft, debug.SetMemoryLimit(-1), err)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	if soft, err := SetMemoryLimitFromEnv(); err != nil || soft != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("with GOMEMLIMIT set: soft limit %d, runtime's %d, error %v; want it left alone", soft, debug.SetMemoryLimit(-1), err)
	}

	t.Setenv("GOMEMLIMIT", "")
	for _, bad := range []string{"256Mi", "-1", "x"} {
		t.Setenv(MemoryLimitEnv, bad)
		if _, err := SetMemoryLimitFromEnv(); err == nil || debug.SetMemoryLimit(-1) != math.MaxInt64 {
			t.Errorf("%s=%q: error %v, runtime's limit %d; want an error and no limit", MemoryLimitEnv, bad, err, debug.SetMemoryLimit(-1))
		}
	}
	t.Setenv(MemoryLimitEnv, "")
	if soft, err := SetMemoryLimitFromEnv(); err != nil || soft != 0 {
		t.Errorf("unset: soft limit %d, error %v; want none", soft, err)
	}
}

// TestSetGCPercent: the mode's percentage is set, unless GOGC is in the environment: then the
// operator's percentage (or off, -1) stays and is what it returns.
func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	if got := SetGCPercent(50); got != 50 || debug.SetGCPercent(50) != 50 {
		t.Fatalf("GOGC unset: SetGCPercent(50) = %d; want 50, set", got)
	}

	debug.SetGCPercent(200) // as GOGC=200 sets it at start-up
	t.Setenv("GOGC", "200")
	if got := SetGCPercent(50); got != 200 || debug.SetGCPercent(200) != 200 {
		t.Fatalf("GOGC=200: SetGCPercent(50) = %d; want the operator's 200, kept", got)
	}

	debug.SetGCPercent(-1) // as GOGC=off sets it
	t.Setenv("GOGC", "off")
	if got := SetGCPercent(50); got != -1 || debug.SetGCPercent(-1) != -1 {
		t.Fatalf("GOGC=off: SetGCPercent(50) = %d; want -1, the collector left off", got)
	}
}
