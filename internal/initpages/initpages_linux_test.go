package initpages

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// imageUser is the user the image runs the binary as (tools/image), which does not own it.
const imageUser = 65532

// TestReleaseAsImageUser releases the test binary's pages as the agent does, and checks that
// its code and read-only data are no longer resident; as root it runs again as the image's
// user on a copy of the binary that root owns, mode 0755, as in the image: MADV_PAGEOUT
// released nothing there.
func TestReleaseAsImageUser(t *testing.T) {
	checkRelease(t)
	if os.Getenv("INITPAGES_CHILD") != "" || os.Geteuid() != 0 {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private to root.
	dir, err := os.MkdirTemp("", "initpages")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "initpages.test")
	content, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestReleaseAsImageUser$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "INITPAGES_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: imageUser, Gid: imageUser}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as user %d: %v\n%s", imageUser, err, out)
	}
	t.Logf("as user %d:\n%s", imageUser, out)
}

func checkRelease(t *testing.T) {
	t.Helper()
	// The test binary is small and its running code is resident anyway: more of the binary's
	// pages, as the agent's package init touches them, are those of more private mappings.
	for _, data := range mapExe(t, 8) {
		touch(data)
	}
	before := exeReadOnlyRSS(t)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := exeReadOnlyRSS(t)
	t.Logf("uid %d: read-only mappings of %d KiB: %d KiB resident before, %d KiB after", os.Geteuid(), n>>10, before, after)
	if n <= 0 || before <= 0 {
		t.Fatalf("released %d bytes of mappings with %d KiB resident; want the binary's code and read-only data", n, before)
	}
	if after > before/2 {
		t.Fatalf("%d KiB of the binary resident after the release, %d KiB before; want at most half left", after, before)
	}
}

// marker is a string constant, in the binary's read-only data.
const marker = "initpages: a page of read-only data that a debugger wrote into"

// TestReleaseKeepsWrittenPages writes into a page of the binary's read-only data, as a debugger
// setting a breakpoint does, and checks that Release leaves that mapping alone (the write
// survives) while it still releases the code.
func TestReleaseKeepsWrittenPages(t *testing.T) {
	m := marker
	p := unsafe.StringData(m)
	page := os.Getpagesize()
	off := int(uintptr(unsafe.Pointer(p)) & uintptr(page-1))
	region := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p), -off)), page) // the page that holds marker
	addr := uintptr(unsafe.Pointer(&region[0]))
	if err := syscall.Mprotect(region, syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
		t.Skip("cannot make the binary's read-only data writable:", err)
	}
	region[off] = 'X'
	if err := syscall.Mprotect(region, syscall.PROT_READ); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Mprotect(region, syscall.PROT_READ|syscall.PROT_WRITE)
		region[off] = marker[0]
		_ = syscall.Mprotect(region, syscall.PROT_READ)
	}()
	ranges, err := readOnlyMappings()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		if r.start <= addr && addr < r.end {
			t.Fatalf("the mapping %x-%x holds a written page yet is to be released", r.start, r.end)
		}
	}
	if len(ranges) == 0 {
		t.Fatal("no read-only mapping of the binary left to release; want its code")
	}
	if _, err := Release(); err != nil {
		t.Fatal(err)
	}
	if got := region[off]; got != 'X' {
		t.Fatalf("the written byte reads %q after the release; want 'X' (the write kept)", got)
	}
}

// TestPagerReleasesPastLimit maps the test binary again, 24 times, read-only and private as
// the kernel maps it at exec, and reads every page of them while the pager runs with a limit a
// few MiB above the resident file pages now: the pager must release them whenever they pass
// it, so that they never reach the mappings' size, which they would without it.
func TestPagerReleasesPastLimit(t *testing.T) {
	maps := mapExe(t, 24)
	total := 0
	for _, data := range maps {
		total += len(data)
	}
	const slack = 4 << 20
	limit := residentFileT(t) + slack
	p := &pagerState{stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(limit, time.Millisecond, time.Hour, time.Hour)
	page := os.Getpagesize()
	var peak int64
	var sum byte
	for _, data := range maps {
		for off := 0; off < len(data); off += page {
			sum += data[off]
			if off%(256*page) == 0 { // every MiB
				peak = max(peak, residentFileT(t))
				time.Sleep(time.Millisecond)
			}
		}
	}
	close(p.stop)
	<-p.done
	t.Logf("read %d MiB of the binary's pages (checksum %d): %d releases, resident file pages peaked at %d MiB, limit %d MiB",
		total>>20, sum, p.releases, peak>>20, limit>>20)
	if p.releases == 0 {
		t.Fatalf("the pager released nothing while %d MiB of the binary were read", total>>20)
	}
	if bound := limit + 2*slack; peak > bound {
		t.Fatalf("resident file pages peaked at %d MiB; want at most %d MiB (limit %d MiB), far below the %d MiB read",
			peak>>20, bound>>20, limit>>20, total>>20)
	}
}

// mapExe maps the test binary n more times, read-only and private, until the test ends.
func mapExe(t *testing.T, n int) [][]byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, n)
	for i := range out {
		data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Munmap(data) })
		out[i] = data
	}
	return out
}

// touch reads one byte of every page of data.
func touch(data []byte) (sum byte) {
	for off := 0; off < len(data); off += os.Getpagesize() {
		sum += data[off]
	}
	return sum
}

// residentFileT returns the resident file-backed bytes of this process, as the pager reads them.
func residentFileT(t *testing.T) int64 {
	t.Helper()
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	defer statm.Close()
	n, err := residentFile(statm, make([]byte, 128))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// exeReadOnlyRSS sums the resident KiB of this process's read-only mappings of its executable.
func exeReadOnlyRSS(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	var kib int64
	ours := false
	for _, line := range strings.Split(string(smaps), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 5 && !strings.HasSuffix(fields[0], ":"):
			ours = len(fields) >= 6 && fields[5] == exe && !strings.Contains(fields[1], "w")
		case ours && len(fields) == 3 && fields[0] == "Rss:":
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			kib += v
		}
	}
	return kib
}
