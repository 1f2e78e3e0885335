package testkit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Peak RSS is the child's rusage Maxrss (KiB on Linux), but not as the test binary's own child:
// Linux keeps the high-water mark of the memory a process had before exec, and Go starts a
// child sharing its parent's memory (vfork), so every child of a test binary, tens of MiB of
// Kubernetes packages, would report at least the test binary's own peak. A tiny launcher,
// built from rssLauncherSource, starts each command instead and writes its Maxrss to a file;
// its own floor (a few MiB) is far below a pull's.

// rssLauncherSource is `launcher <file> <command> [args]`: it runs the command with the
// launcher's stdio, writes the command's Maxrss and its CPU time (user plus system, in
// microseconds) into file and exits with its exit code.
const rssLauncherSource = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func main() {
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	usage := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()
	if err := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(usage.Maxrss, 10)+" "+strconv.FormatInt(cpu, 10)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
`

// RSSLauncher measures the peak resident set size of commands it runs.
type RSSLauncher struct{ bin string }

// NewRSSLauncher builds the launcher into a temporary folder of tb.
func NewRSSLauncher(tb testing.TB) *RSSLauncher {
	tb.Helper()
	dir := tb.TempDir()
	src, bin := filepath.Join(dir, "main.go"), filepath.Join(dir, "rss-launcher")
	if err := os.WriteFile(src, []byte(rssLauncherSource), 0o600); err != nil {
		tb.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin, src)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build the RSS launcher: %v\n%s", err, out)
	}
	return &RSSLauncher{bin: bin}
}

// Run runs command, expecting exit code wantExit, and returns its peak resident set size in MiB
// and its stdout.
func (l *RSSLauncher) Run(tb testing.TB, wantExit int, command ...string) (rssMiB float64, stdout string) {
	tb.Helper()
	rssMiB, _, stdout = l.RunCPU(tb, wantExit, command...)
	return rssMiB, stdout
}

// RunCPU is Run that also returns the command's CPU time, user plus system.
func (l *RSSLauncher) RunCPU(tb testing.TB, wantExit int, command ...string) (rssMiB float64, cpu time.Duration, stdout string) {
	tb.Helper()
	result, err := os.CreateTemp(tb.TempDir(), "maxrss-")
	if err != nil {
		tb.Fatal(err)
	}
	result.Close()
	cmd := exec.Command(l.bin, append([]string{result.Name()}, command...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != wantExit {
		tb.Fatalf("%s: %v, want exit code %d\n%s%s", strings.Join(command, " "), err, wantExit, out.String(), errOut.String())
	}
	data, err := os.ReadFile(result.Name())
	if err != nil {
		tb.Fatal(err)
	}
	var kib, us int64
	if n, err := fmt.Sscanf(string(data), "%d %d", &kib, &us); n != 2 {
		tb.Fatalf("the launcher wrote %q: %v", data, err)
	}
	return float64(kib) / 1024, time.Duration(us) * time.Microsecond, out.String()
}
