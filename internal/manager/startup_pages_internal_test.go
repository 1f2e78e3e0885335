//go:build linux

package manager

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReleaseStartupPages releases the test binary's own start-up pages, as the agent does
// after its caches synced, and checks that the resident size of the binary's read-only
// mappings fell, and that the code still runs (it is faulted back in on demand).
func TestReleaseStartupPages(t *testing.T) {
	before := exeReadOnlyRSS(t)
	n, err := releaseStartupPages()
	if errors.Is(err, unix.EINVAL) {
		t.Skip("this kernel has no MADV_PAGEOUT (Linux < 5.4):", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	after := exeReadOnlyRSS(t)
	t.Logf("read-only mappings of %d KiB: %d KiB resident before, %d KiB after", n>>10, before, after)
	if n <= 0 || before <= 0 {
		t.Fatalf("released %d bytes of mappings with %d KiB resident; want the binary's code and read-only data", n, before)
	}
	if after > before/2 {
		t.Fatalf("%d KiB of the binary resident after the release, %d KiB before; want at most half left", after, before)
	}
}

// exeReadOnlyRSS sums the resident KiB of this process's read-only mappings of its executable.
func exeReadOnlyRSS(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	var kib int64
	ours := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			ours = len(fields) >= 6 && fields[5] == exe && !strings.Contains(fields[1], "w")
		case ours && len(fields) == 3 && fields[0] == "Rss:":
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			kib += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return kib
}
