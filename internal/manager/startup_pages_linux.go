package manager

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages asks the kernel to reclaim the resident pages of the binary's read-only
// mappings (its code and read-only data, as /proc/self/maps lists them) and returns the bytes
// those mappings span. Pages touched again come back on demand.
func releaseStartupPages() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var released int64
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode pathname
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != exe || strings.Contains(f[1], "w") {
			continue
		}
		from, to, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(from, 16, 64)
		end, err2 := strconv.ParseUint(to, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			return released, fmt.Errorf("/proc/self/maps: unexpected line %q", sc.Text())
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_PAGEOUT); errno != 0 {
			return released, fmt.Errorf("madvise(MADV_PAGEOUT) of %s: %w", f[0], errno)
		}
		released += int64(end - start)
	}
	return released, sc.Err()
}
