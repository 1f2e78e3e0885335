package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// One local hub serves the package's tests, which run one after another; each test runs the
// managers it needs and stops them.
var (
	sharedHub     *testbed.Hub
	sharedHubErr  error
	sharedHubOnce sync.Once
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard()) // tests assert on objects, not on logs
	code := m.Run()
	if sharedHub != nil {
		if err := sharedHub.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// startHub returns the package's local hub, starting it on first use; without the test bed's
// binaries it skips the test, or fails it when FLEET_REQUIRE_TESTBED=1.
func startHub(t *testing.T) (*testbed.Hub, client.Client) {
	t.Helper()
	sharedHubOnce.Do(func() { sharedHub, sharedHubErr = testbed.Start(context.Background(), testbed.Options{}) })
	if errors.Is(sharedHubErr, testbed.ErrBinariesMissing) && os.Getenv(testbed.EnvRequire) != "1" {
		t.Skip(sharedHubErr)
	}
	if sharedHubErr != nil {
		t.Fatal(sharedHubErr)
	}
	c, err := client.New(sharedHub.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return sharedHub, c
}

// runManager runs the hub manager in-process until the test ends or stop is called.
func runManager(t *testing.T, h *testbed.Hub) (stop func()) {
	t.Helper()
	mgr, err := controller.NewHubManager(h.Config, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "routing", QPS: 500, Burst: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls check every 200 ms until it returns nil or timeout passes, then fails the
// test with check's last error.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// counter sums a counter of the controller-runtime metrics registry over the label values that
// match (every label value when match is nil).
func counter(t testing.TB, name string, match map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		panic(err) // the registry's own collectors do not fail
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := match[l.GetName()]; ok && want != l.GetValue() {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func writes(t testing.TB, resource, verb string) float64 {
	match := map[string]string{}
	if resource != "" {
		match["resource"] = resource
	}
	if verb != "" {
		match["verb"] = verb
	}
	return counter(t, "fleet_hub_writes_total", match)
}

// registrySecret is a registry Secret as fleet_oci_registry writes it.
func registrySecret(ws, name, role string, r registrysecret.Registry) *corev1.Secret {
	r.Role = role
	data := map[string][]byte{}
	for k, v := range r.Data() {
		data[k] = []byte(v)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ws, Labels: map[string]string{registrysecret.RoleLabel: role}},
		Type:       registrysecret.Type, Data: data,
	}
}

func join(items []string) string { return strings.Join(items, ",") }
