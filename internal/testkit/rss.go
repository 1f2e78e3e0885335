package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Peak RSS is the child's rusage Maxrss (KiB on Linux), but not as the test binary's own child:
// Linux keeps the high-water mark of the memory a process had before exec, and Go starts a
// child sharing its parent's memory (vfork), so every child of a test binary, tens of MiB of
// Kubernetes packages, would report at least the test binary's own peak. A tiny launcher,
// built from rssLauncherSource, starts each command instead and writes its Maxrss to a file;
// its own floor (a few MiB) is far below a pull's.

// rssLauncherSource is `launcher <file> <command> [args]`: it runs the command with the
// launcher's stdio, writes the command's Maxrss into file and exits with its exit code.
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
	maxrss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if err := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(maxrss, 10)), 0o600); err != nil {
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
	kib, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		tb.Fatalf("the launcher wrote %q: %v", data, err)
	}
	return float64(kib) / 1024, out.String()
}
