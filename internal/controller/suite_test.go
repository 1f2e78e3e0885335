package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
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
	return testkit.Run(t, mgr)
}

func writes(resource, verb string) float64 {
	match := map[string]string{}
	if resource != "" {
		match["resource"] = resource
	}
	if verb != "" {
		match["verb"] = verb
	}
	return testkit.Counter("fleet_hub_writes_total", match)
}

func join(items []string) string { return strings.Join(items, ",") }

// runControllers runs the named reconcilers in-process as cfg's user.
func runControllers(t *testing.T, cfg *rest.Config, names string) (stop func()) {
	t.Helper()
	mgr, err := controller.NewHubManager(cfg, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: names, QPS: 500, Burst: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Run(t, mgr)
}
