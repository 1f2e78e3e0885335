package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// An app's chart is verified before Helm sees it: with a chain that verifies cosign signatures,
// the mirror that replicated the chart but not its signature is Unverified (none of its blobs
// fetched) and the chart comes from the signed source; the pull status names the key and the
// release installs. A chain trusting another key fails the pull Unverified on every registry,
// and Helm never runs.
func TestVerifiedChartBeforeHelm(t *testing.T) {
	c := startSpoke(t, ocichain.Namespace)
	mirror, source := startRegistry(t), startRegistry(t)
	chart := testbed.HelloChart("hello", "0.1.0")
	m := source.PushChartT(t, "charts/hello", chart)
	mirror.PushChartT(t, "charts/hello", chart)
	key, other := testbed.NewCosignKey(t), testbed.NewCosignKey(t)
	key.CosignSignT(t, source.Registry, "charts/hello", m, false)
	entries := func() []puller.Registry {
		mr, sr := mirror.entry("mirror"), source.entry("source")
		mr.Role, sr.Role = puller.RoleMirror, puller.RoleSource
		return []puller.Registry{mr, sr}
	}
	putChain(t, c, ocichain.Chain{Workspace: "signed", Route: "edge", Registries: entries(),
		Verify: &puller.Verify{Provider: puller.VerifyCosign, PublicKeys: []string{key.PublicPEM}}})
	putChain(t, c, ocichain.Chain{Workspace: "forged", Route: "edge", Registries: entries(),
		Verify: &puller.Verify{Provider: puller.VerifyCosign, PublicKeys: []string{other.PublicPEM}}})
	runAgent(t)

	release := func(workspace, target string) *v1alpha1.FleetRelease {
		rel := &v1alpha1.FleetRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: workspace},
			Spec: v1alpha1.FleetReleaseSpec{Workspace: workspace, App: "hello", Pull: workspace, ReleaseName: "web", Namespace: target,
				Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hi"}`)}},
		}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteRelease(t, c, rel) })
		return rel
	}

	rel := release("signed", "app-signed")
	pull := newPull(t, c, ocichain.Namespace, "signed", v1alpha1.OCIPullSpec{Workspace: "signed", Repository: "charts/hello", Tag: "0.1.0"})
	s := waitFor(t, c, pull, 30*time.Second, "pulled from the signed source", pulled)
	fp := puller.Fingerprint(&key.Private.PublicKey)
	if s.Registry != "source" || s.Verified != "cosign key "+fp || s.FailoverCount != 1 || len(s.Failovers) != 1 ||
		s.Failovers[0] != (v1alpha1.Failover{Registry: "mirror", Reason: string(puller.Unverified)}) {
		t.Errorf("pull status %+v; want pulled from source, verified by %s, one failover: mirror Unverified", s, fp)
	}
	if got := mirror.Proxy.BlobGets.Load(); got != 0 {
		t.Errorf("blob GETs at the unverified mirror: %d, want 0 (nothing fetched before verification)", got)
	}
	waitRelease(t, c, rel, "installed from the verified chart", deployed(1, 1))
	wantConfigMap(t, c, "app-signed", "web-hello", "hi")

	rel = release("forged", "app-forged")
	pull = newPull(t, c, ocichain.Namespace, "forged", v1alpha1.OCIPullSpec{Workspace: "forged", Repository: "charts/hello", Tag: "0.1.0"})
	s = waitFor(t, c, pull, 30*time.Second, "failed Unverified everywhere", func(s v1alpha1.OCIPullStatus) error {
		if s.State != v1alpha1.OCIPullFailed {
			return fmt.Errorf("state %q", s.State)
		}
		return nil
	})
	want := []v1alpha1.Failover{{Registry: "mirror", Reason: "Unverified"}, {Registry: "source", Reason: "Unverified"}}
	if s.Reason != string(puller.Unverified) || s.Verified != "" || !slices.Equal(s.Failovers, want) || !strings.Contains(s.Message, "signed by none of the 1 trusted keys") {
		t.Errorf("pull status %+v; want Failed, Unverified at mirror and source, no verified signer, a message saying why", s)
	}
	time.Sleep(2 * time.Second)
	rs := waitRelease(t, c, rel, "pending on the unverified chart", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleasePending {
			return fmt.Errorf("phase %q", s.Phase)
		}
		return nil
	})
	if got := helmRevisions(t, c, "app-forged", "web"); len(got) != 0 || rs.Revision != 0 {
		t.Errorf("Helm revisions %v, release revision %d of an unverified chart; want none", got, rs.Revision)
	}
}
