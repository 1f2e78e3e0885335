package provider

import (
	"os"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestMain starts the local hub for acceptance tests (TF_ACC=1) unless KUBECONFIG names a hub.
func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }
