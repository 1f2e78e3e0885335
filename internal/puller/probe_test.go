package puller_test

import (
	"strings"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestProbe probes real registries the way an agent does and checks the class of each failure:
// the agent's own credentials answer the 401 challenge, a wrong password is Unauthorized, an
// untrusted certificate is TLS, a frozen registry (connections accepted, nothing answered) is
// Unreachable within the probe's timeout, and a stopped one at once.
func TestProbe(t *testing.T) {
	ctx := t.Context()
	auth := testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: "push-s3cret", Users: map[string]string{"puller": "pull-s3cret"}})
	tlsReg := testbed.StartRegistryT(t, testbed.RegistryOptions{TLS: true})
	frozen := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	stopped := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	if err := frozen.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = frozen.Thaw() })
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}

	agentCreds := auth.Entry("harbor-eu")
	agentCreds.AgentUsername, agentCreds.AgentPassword = "puller", "pull-s3cret"
	wrong := auth.Entry("harbor-eu")
	wrong.AgentUsername, wrong.AgentPassword = "puller", "wrong"
	anonymous := auth.Entry("harbor-eu")
	anonymous.Username, anonymous.Password = "", ""
	untrusted := tlsReg.Entry("harbor-tls")
	untrusted.CACerts = ""
	const limit = 2 * time.Second
	cases := []struct {
		name    string
		entry   puller.Registry
		want    puller.Class
		message string
		within  time.Duration
	}{
		{"agent credentials", agentCreds, "", "", limit},
		{"push credentials when no agent ones", auth.Entry("harbor-eu"), "", "", limit},
		{"trusted TLS", tlsReg.Entry("harbor-tls"), "", "", limit},
		{"wrong agent password", wrong, puller.Unauthorized, "401", limit},
		{"no credentials", anonymous, puller.Unauthorized, "credential", limit},
		{"untrusted certificate", untrusted, puller.TLS, "certificate", limit},
		{"frozen", frozen.Entry("harbor-frozen"), puller.Unreachable, "within 2s", limit + time.Second},
		{"stopped", stopped.Entry("harbor-stopped"), puller.Unreachable, "refused", limit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := puller.Probe(ctx, tc.entry, limit, puller.Options{})
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if res.Registry != tc.entry.Name || res.Class != tc.want {
				t.Fatalf("probe of %s: registry %q class %q (%v), want %q", tc.name, res.Registry, res.Class, res.Err, tc.want)
			}
			if tc.want != "" && !strings.Contains(res.Err.Error(), tc.message) {
				t.Errorf("error %q does not say %q", res.Err, tc.message)
			}
			if tc.want != "" && (strings.Contains(res.Err.Error(), "pull-s3cret") || strings.Contains(res.Err.Error(), "push-s3cret")) {
				t.Errorf("error %q holds a credential", res.Err)
			}
			if took > tc.within {
				t.Errorf("probe took %s, want under %s", took, tc.within)
			}
			t.Logf("%s: %q in %s", tc.name, res.Class, took.Round(time.Millisecond))
		})
	}
}
