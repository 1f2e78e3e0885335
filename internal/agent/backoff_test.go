package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// A release whose chart fails is retried with exponential back-off (1 s doubling, here), and
// its status is written only when it changes: Failed stays Failed across the retries, with no
// Installing in between, so nothing goes back to the hub. A new generation starts over at once.
func TestFailingReleaseBacksOff(t *testing.T) {
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/broken", testbed.FailingChart("broken"))
	putChain(t, c, ocichain.Chain{Workspace: "backoff", Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	runAgent(t, func(o *agent.Options) { o.ReleaseBackoff = puller.Backoff{Initial: time.Second, Max: time.Minute} })
	newPull(t, c, ocichain.Namespace, "broken", v1alpha1.OCIPullSpec{Workspace: "backoff", Repository: "charts/broken", Tag: "0.1.0"})
	failed := func() float64 {
		return testkit.Counter("fleet_agent_release_attempts_total", map[string]string{"result": "failed"})
	}
	before := failed()

	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "broken"},
		Spec: v1alpha1.FleetReleaseSpec{Workspace: "backoff", App: "broken", Pull: "broken", ReleaseName: "broken", Namespace: "app-backoff",
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"one"}`)}},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, rel) })
	s := waitRelease(t, c, rel, "failed", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleaseFailed {
			return fmt.Errorf("phase %q", s.Phase)
		}
		return nil
	})
	if !strings.Contains(s.Message, "this chart always fails") || s.ObservedGeneration != 1 {
		t.Errorf("failed status %+v; want the chart's error, observedGeneration 1", s)
	}

	// 12 s: attempts after about 0.5–1, 1.5–3, 3.5–7 and 7.5–15 s, i.e. 3 or 4 beyond the first
	// (a fixed 30 s retry makes none, a fixed 1 s one 12); the status, a resourceVersion, never
	// changes.
	var got v1alpha1.FleetRelease
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), &got); err != nil {
		t.Fatal(err)
	}
	version, first := got.ResourceVersion, failed()
	writes := 0
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), &got); err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != version {
			writes++
			version = got.ResourceVersion
			t.Logf("status written: %s %q", got.Status.Phase, got.Status.Message)
		}
	}
	retries := failed() - first
	t.Logf("12 s of a failing release: %v attempts (%v in all), %d status writes", retries, failed()-before, writes)
	if retries < 2 || retries > 5 {
		t.Errorf("retries in 12 s: %v, want 2–5 (back-off from 1 s, doubling)", retries)
	}
	if writes != 0 {
		t.Errorf("status writes of a release failing the same way: %d in 12 s, want 0", writes)
	}

	// A new generation is tried at once, though the back-off is at 8–16 s now.
	changed, atChange := time.Now(), failed()
	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) { r.Spec.Values.Raw = []byte(`{"greeting":"two"}`) })
	s = waitRelease(t, c, rel, "failed for generation 2", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleaseFailed || s.ObservedGeneration != 2 {
			return fmt.Errorf("phase %q, observedGeneration %d", s.Phase, s.ObservedGeneration)
		}
		return nil
	})
	if took, n := time.Since(changed), failed()-atChange; took > 4*time.Second || n < 1 {
		t.Errorf("new generation: tried %v times in %s; want an attempt at once (the back-off starts over)", n, took)
	}
}
