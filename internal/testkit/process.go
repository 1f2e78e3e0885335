package testkit

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the leader-election tests of several packages share: the real binary built and run as
// processes, with fast leader election, their /metrics read, a process killed, and the Lease read.

// LeaseDuration, RenewDeadline and RetryPeriod are the leader-election timings LeaderElectionFlags
// give, short so that a standby takes over within seconds of a leader's death.
const (
	LeaseDuration = 4 * time.Second
	RenewDeadline = 3 * time.Second
	RetryPeriod   = 500 * time.Millisecond
)

// LeaderElectionFlags are the flags of a manager (internal/manager) that elects a leader with the
// Lease in namespace ns, with the timings above.
func LeaderElectionFlags(ns string) []string {
	return []string{"--leader-elect", "--leader-election-namespace", ns,
		"--leader-election-lease-duration", LeaseDuration.String(), "--leader-election-renew-deadline", RenewDeadline.String(),
		"--leader-election-retry-period", RetryPeriod.String()}
}

// Binary builds the main package pkg (an import path) into the test's temporary directory and
// returns the executable's path.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// ShippedBinary builds the main package pkg (an import path, or a path relative to the test's
// package) into the test's temporary directory as `make image` builds the image's binary
// (static: CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), and returns the executable's path.
// Benchmarks measure it: a cgo build links libc and, with the plugin package that kustomize
// imports, exports every symbol, which adds ~30 MiB of mapped binary to every process's RSS.
func ShippedBinary(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// FreeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Process is one process of a binary a test runs, with its log in a file and its metrics served.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	// Metrics is the base URL of its /metrics.
	Metrics string
	// LogFile holds its standard output and error.
	LogFile string
}

// StartProcess runs bin with args and --metrics-bind-address and --health-probe-bind-address on
// free ports, until the test ends; a test that failed logs the process's output.
func StartProcess(t testing.TB, bin, name string, args ...string) *Process {
	t.Helper()
	metrics := FreeAddr(t)
	cmd := exec.Command(bin, append(args, "--metrics-bind-address", metrics, "--health-probe-bind-address", FreeAddr(t))...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // not left running by a test binary that dies
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: name, Cmd: cmd, Metrics: "http://" + metrics, LogFile: logf.Name()}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.Log())
		}
	})
	return p
}

// Kill ends the process with SIGKILL, so that it releases nothing (its Lease stays held until
// it expires), and waits for it.
func (p *Process) Kill() {
	if p.Cmd.ProcessState == nil {
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
		_ = p.Cmd.Wait()
	}
}

// Log returns what the process wrote so far.
func (p *Process) Log() string {
	data, _ := os.ReadFile(p.LogFile)
	return string(data)
}

// Scrape returns the sum of a metric's samples whose line contains filter (every sample when
// filter is empty).
func (p *Process) Scrape(metric, filter string) (float64, error) {
	resp, err := http.Get(p.Metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/metrics: %s", p.Metrics, resp.Status)
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, _, _ := strings.Cut(line, "{"); name != metric && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		if !strings.Contains(line, filter) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, sc.Err()
}

// Leading says whether the process reports itself the leader of the Lease named lease.
func (p *Process) Leading(lease string) bool {
	v, err := p.Scrape("leader_election_master_status", `name="`+lease+`"`)
	return err == nil && v == 1
}

// Lease is what a leader-election Lease says: who holds it and how often it changed hands.
type Lease struct {
	Holder      string
	Transitions int32
}

// ReadLease reads the Lease ns/name.
func ReadLease(ctx context.Context, c client.Client, ns, name string) (Lease, error) {
	var l coordinationv1.Lease
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &l); err != nil {
		return Lease{}, err
	}
	var got Lease
	if l.Spec.HolderIdentity != nil {
		got.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseTransitions != nil {
		got.Transitions = *l.Spec.LeaseTransitions
	}
	return got, nil
}

// LeaderAndStandby starts two processes of a manager that elects a leader with the Lease ns/lease:
// "a", which must lead within timeout, then "b", which must serve its metrics and still not lead
// two seconds later. start runs one process (StartProcess with LeaderElectionFlags(ns)). It
// returns the processes and the Lease a holds.
func LeaderAndStandby(t testing.TB, c client.Client, ns, lease string, timeout time.Duration, start func(name string) *Process) (a, b *Process, held Lease) {
	t.Helper()
	a = start("a")
	Eventually(t, timeout, "a leads", func() error {
		if !a.Leading(lease) {
			return fmt.Errorf("not leading")
		}
		var err error
		held, err = ReadLease(context.Background(), c, ns, lease)
		if err == nil && held.Holder == "" {
			err = fmt.Errorf("lease %s/%s has no holder", ns, lease)
		}
		return err
	})
	b = start("b")
	Eventually(t, timeout, "b serves metrics", func() error { _, err := b.Scrape("leader_election_master_status", ""); return err })
	time.Sleep(2 * time.Second)
	if b.Leading(lease) {
		t.Fatal("both processes lead")
	}
	if now, err := ReadLease(context.Background(), c, ns, lease); err != nil || now.Holder != held.Holder {
		t.Fatalf("lease %s/%s held by %q (%v), want a's %q while a runs", ns, lease, now.Holder, err, held.Holder)
	}
	return a, b, held
}

// TakeOver kills the leader a with SIGKILL, so that it releases nothing, and waits for the standby
// b to lead and hold the Lease ns/lease, which then has changed hands once more than held says.
func TakeOver(t testing.TB, c client.Client, ns, lease string, timeout time.Duration, a, b *Process, held Lease) {
	t.Helper()
	a.Kill()
	killed := time.Now()
	Eventually(t, timeout, "b takes over", func() error {
		if !b.Leading(lease) {
			return fmt.Errorf("not leading")
		}
		return nil
	})
	t.Logf("the standby took over %s after the leader was killed (lease %s)", time.Since(killed).Round(100*time.Millisecond), LeaseDuration)
	now, err := ReadLease(context.Background(), c, ns, lease)
	if err != nil || now.Holder == "" || now.Holder == held.Holder || now.Transitions != held.Transitions+1 {
		t.Fatalf("lease %s/%s after the takeover: %+v (%v); want a holder other than a's %q and %d transitions", ns, lease, now, err, held.Holder, held.Transitions+1)
	}
}
