package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// probeOptions are the agents' connectivity probe settings in a pullFleet.
type probeOptions struct{ interval, timeout time.Duration }

// TestProbeReachability runs the connectivity probe end to end on real parts: each cluster's
// agent probes the registries of its chain (the RegistryProbe the chain work carries), OCM's work
// agent brings the results back in the chain work's feedback, and the hub's probe-status
// reconciler writes them on each cluster's ClusterOCIStorage. A frozen mirror (connections
// accepted, nothing answered) is reported Unreachable from both clusters and Reachable again once
// thawed, and a steady fleet writes nothing while the agents keep probing every second.
func TestProbeReachability(t *testing.T) {
	p := startPullFleet(t, pullFleetOptions{clusters: []string{"eu-01", "eu-02"}, probe: probeOptions{interval: time.Second, timeout: 2 * time.Second}})
	reach := func(want string) {
		t.Helper()
		start := time.Now()
		for _, cluster := range p.clusters {
			testkit.Eventually(t, converge, cluster+"'s reachability "+want, func() error {
				var s v1alpha1.ClusterOCIStorage
				if err := p.hub.Get(p.ctx, client.ObjectKey{Namespace: pullWS, Name: cluster}, &s); err != nil {
					return err
				}
				var got []string
				for _, r := range s.Status.Reachability {
					if r.ProbedAt == nil {
						return fmt.Errorf("%s has no probedAt", r.Registry)
					}
					got = append(got, r.Registry+"="+r.State)
				}
				if strings.Join(got, ",") != want {
					return fmt.Errorf("reachability %v", got)
				}
				return nil
			})
		}
		t.Logf("%s on %d clusters' ClusterOCIStorages after %s", want, len(p.clusters), time.Since(start).Round(100*time.Millisecond))
	}
	reach("mirror=Reachable,source=Reachable")

	if err := p.mirror.Freeze(); err != nil {
		t.Fatal(err)
	}
	reach("mirror=Unreachable,source=Reachable")
	var probe v1alpha1.RegistryProbe
	if err := p.agents["eu-01"].spoke.Get(p.ctx, client.ObjectKey{Namespace: ocichain.Namespace, Name: ocichain.SecretName(pullWS)}, &probe); err != nil {
		t.Fatal(err)
	}
	if m := probe.Status.Registries[0]; m.Registry != "mirror" || m.State != "Unreachable" || !strings.Contains(m.Message, "GET /v2/") || m.Since == nil {
		t.Errorf("eu-01's RegistryProbe says %+v for the frozen mirror, want Unreachable with the probe's error and since", m)
	}
	if strings.Contains(probe.Status.Registries[0].Message, agentPass) {
		t.Errorf("the probe's message holds the agent's password: %q", probe.Status.Registries[0].Message)
	}

	// Steady state: probes every second, no result changes, nothing written anywhere.
	var before v1alpha1.ClusterOCIStorage
	if err := p.hub.Get(p.ctx, client.ObjectKey{Namespace: pullWS, Name: "eu-01"}, &before); err != nil {
		t.Fatal(err)
	}
	probeRV := probe.ResourceVersion
	time.Sleep(6 * time.Second) // three probes of the mirror's 2 s timeout, six of the source
	var after v1alpha1.ClusterOCIStorage
	if err := p.hub.Get(p.ctx, client.ObjectKey{Namespace: pullWS, Name: "eu-01"}, &after); err != nil {
		t.Fatal(err)
	}
	if err := p.agents["eu-01"].spoke.Get(p.ctx, client.ObjectKey{Namespace: ocichain.Namespace, Name: ocichain.SecretName(pullWS)}, &probe); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || probe.ResourceVersion != probeRV {
		t.Errorf("6 s of unchanged probe results wrote the ClusterOCIStorage (%s → %s) or the RegistryProbe (%s → %s); want no writes",
			before.ResourceVersion, after.ResourceVersion, probeRV, probe.ResourceVersion)
	}

	if err := p.mirror.Thaw(); err != nil {
		t.Fatal(err)
	}
	reach("mirror=Reachable,source=Reachable")
}
