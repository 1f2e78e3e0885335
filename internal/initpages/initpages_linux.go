package initpages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Release unmaps from this process the resident pages of the binary's read-only mappings (its
// code, type data and pclntab, as /proc/self/smaps lists them) and returns the bytes those
// mappings span. Pages touched again come back on demand from the page cache.
//
// It is MADV_DONTNEED, not MADV_PAGEOUT: Linux pages file pages out only for a process that
// owns the file or may write it, and the image runs the binary, owned by root, as 65532, so
// MADV_PAGEOUT succeeds there and releases nothing. MADV_DONTNEED drops a private mapping's
// pages whoever owns the file; on a read-only private file mapping nothing is lost, since every
// page is the file's, unless a debugger or a uprobe wrote into it: a mapping with anonymous
// pages (those copies) is left alone.
func Release() (int64, error) {
	ranges, err := readOnlyMappings()
	if err != nil {
		return 0, err
	}
	return release(ranges)
}

// release unmaps the resident pages of ranges.
func release(ranges []mapping) (int64, error) {
	var released int64
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.start, r.end-r.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("madvise(MADV_DONTNEED) of %x-%x: %w", r.start, r.end, errno)
		}
		released += int64(r.end - r.start)
	}
	return released, nil
}

type mapping struct{ start, end uintptr }

// readOnlyMappings returns the read-only mappings of the executable that hold no anonymous
// page, from /proc/self/smaps.
func readOnlyMappings() ([]mapping, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	var out []mapping
	var cur *mapping
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 5 && !strings.HasSuffix(f[0], ":"):
			// address perms offset dev inode [pathname]
			cur = nil
			if len(f) < 6 || f[5] != exe || strings.Contains(f[1], "w") {
				continue
			}
			from, to, ok := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(from, 16, 64)
			end, err2 := strconv.ParseUint(to, 16, 64)
			if !ok || err1 != nil || err2 != nil || end <= start {
				return nil, fmt.Errorf("/proc/self/smaps: unexpected line %q", sc.Text())
			}
			out = append(out, mapping{uintptr(start), uintptr(end)})
			cur = &out[len(out)-1]
		case cur != nil && len(f) == 3 && f[0] == "Anonymous:" && f[1] != "0":
			out = out[:len(out)-1]
			cur = nil
		}
	}
	return out, sc.Err()
}

// run releases the binary's pages each time the resident file-backed memory passes limit, then
// each time it has grown by more than limit since the last release (so that other files mapped
// do not make it release in a loop), reading it every period for the first fast of its run and
// every slow afterwards, until Stop.
func (p *pagerState) run(limit int64, period, fast, slow time.Duration) {
	defer close(p.done)
	// The binary's mappings are the kernel's, from exec: read once.
	ranges, err := readOnlyMappings()
	if err != nil {
		return
	}
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		return
	}
	defer statm.Close()
	buf := make([]byte, 128)
	var base int64 // what stays resident after a release: none before the first
	t := time.NewTicker(period)
	defer t.Stop()
	slowFrom := time.Now().Add(fast)
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			if period != slow && now.After(slowFrom) {
				period = slow
				t.Reset(slow)
			}
		}
		resident, err := residentFile(statm, buf)
		if err != nil {
			return
		}
		if resident-base <= limit {
			continue
		}
		if _, err := release(ranges); err != nil {
			return
		}
		p.releases++
		if base, err = residentFile(statm, buf); err != nil {
			return
		}
	}
}

// residentFile returns the resident file-backed (and shared memory) bytes of the process, the
// third field of /proc/self/statm, read into buf.
func residentFile(statm *os.File, buf []byte) (int64, error) {
	n, err := statm.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return 0, err
	}
	f := bytes.Fields(buf[:n])
	if len(f) < 3 {
		return 0, fmt.Errorf("/proc/self/statm: unexpected %q", buf[:n])
	}
	pages, err := strconv.ParseInt(string(f[2]), 10, 64)
	return pages * int64(os.Getpagesize()), err
}
