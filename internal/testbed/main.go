package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// Main runs a test package's tests with a hub, for TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }
//
// Without TF_ACC it just runs them: unit tests need no hub. With TF_ACC and KUBECONFIG set, the
// tests use that cluster (KUBE_CONFIG_PATH, which the provider reads, defaults to it). With TF_ACC
// alone it starts the local hub, points KUBECONFIG and KUBE_CONFIG_PATH at its admin kubeconfig,
// runs the tests and stops the hub, also on SIGINT or SIGTERM. When kube-apiserver or etcd is
// missing it fails if FLEET_REQUIRE_TESTBED=1 and otherwise runs the tests without a hub.
func Main(m *testing.M) int {
	if os.Getenv("TF_ACC") == "" {
		return m.Run()
	}
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		if os.Getenv("KUBE_CONFIG_PATH") == "" && !strings.ContainsRune(kc, os.PathListSeparator) {
			os.Setenv("KUBE_CONFIG_PATH", kc)
		}
		fmt.Fprintln(os.Stderr, "testbed: TF_ACC with KUBECONFIG set: testing against that cluster, not the local hub")
		return m.Run()
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	hub, err := Start(ctx, Options{})
	if errors.Is(err, ErrBinariesMissing) && os.Getenv(EnvRequire) != "1" {
		fmt.Fprintf(os.Stderr, "testbed: %v; running without a hub (set %s=1 to fail instead)\n", err, EnvRequire)
		return m.Run()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbed: %v\n", err)
		return 1
	}
	os.Setenv("KUBECONFIG", hub.Kubeconfig)
	os.Setenv("KUBE_CONFIG_PATH", hub.Kubeconfig)
	fmt.Fprintf(os.Stderr, "testbed: local hub at %s\n", hub.APIServerURL())

	// An interrupted run would otherwise leave etcd and kube-apiserver behind.
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			if err := hub.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "testbed: interrupted: %v\n", err)
			} else {
				fmt.Fprintln(os.Stderr, "testbed: interrupted: local hub stopped")
			}
			os.Exit(130)
		case <-done:
		}
	}()

	code := m.Run()
	close(done)
	if err := hub.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testbed: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// StartT starts a local hub for one test and stops it when the test ends. Without kube-apiserver
// or etcd it skips the test, or fails it when FLEET_REQUIRE_TESTBED=1.
func StartT(t testing.TB) *Hub {
	t.Helper()
	return StartWithT(t, Options{})
}

// StartWithT is StartT with the hub's options o.
func StartWithT(t testing.TB, o Options) *Hub {
	t.Helper()
	h, err := Start(t.Context(), o)
	if errors.Is(err, ErrBinariesMissing) && os.Getenv(EnvRequire) != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Error(err)
		}
	})
	return h
}
