package provider

import (
	"os"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestMain starts the local hub for acceptance tests (TF_ACC=1) unless KUBECONFIG names a hub.
// Started by a benchmark's CLI as its plugin, the test binary serves the provider instead.
func TestMain(m *testing.M) {
	if stats := os.Getenv(envBenchProviderStats); stats != "" {
		os.Exit(serveBenchProvider(stats))
	}
	os.Exit(testbed.Main(m))
}
