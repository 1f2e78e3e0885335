package agent_test

import (
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// testRegistry is a test-bed registry (plain HTTP, no auth) and the proxy in front of it that
// agents pull through, which counts the GETs of blobs and manifests (Proxy.BlobGets,
// Proxy.ManifestGets). Pushes go to the registry itself.
type testRegistry struct {
	*testbed.Registry
	Proxy *testbed.Proxy
}

func startRegistry(t testing.TB) *testRegistry {
	t.Helper()
	r := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	return &testRegistry{Registry: r, Proxy: testbed.StartProxyT(t, r, testbed.ProxyOptions{})}
}

// entry is a chain entry pulling from r through its proxy.
func (r *testRegistry) entry(name string) puller.Registry { return r.Proxy.Entry(name) }
