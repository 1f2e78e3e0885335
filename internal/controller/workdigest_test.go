package controller_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// The cache holds chain works without their manifests, and the routing reconciler tells an
// unchanged work by its digest annotation. On the real apiserver: a work whose manifests were
// changed by hand (the digest left as it was) is repaired, and a work an older controller wrote
// (no digest) is rewritten once by the controller that starts after it; each with one work write, and nothing written after.
func TestWorkDigestRepairsHandEditsAndStampsOldWorks(t *testing.T) {
	h, c, v := seededWorkspace(t, "digest")
	stop := runManager(t, h)
	v.converged()
	const cluster = "eu-01"
	var orig *workv1.ManifestWork
	testkit.Eventually(t, converge, "the chain work of "+cluster+" stamped", func() error {
		w, err := v.work(cluster)
		if err != nil {
			return err
		}
		if w.Annotations[controller.ManifestsDigestAnnotation] == "" {
			return fmt.Errorf("no %s annotation: %v", controller.ManifestsDigestAnnotation, w.Annotations)
		}
		orig = w
		return nil
	})
	settle(30 * time.Second)
	digest := orig.Annotations[controller.ManifestsDigestAnnotation]
	want := v.chain(orig)

	// repaired waits until the work carries the controller's chain and digest again, then checks
	// that it took one work write and that nothing more is written.
	repaired := func(what string, before float64) {
		t.Helper()
		testkit.Eventually(t, converge, what, func() error {
			w, err := v.work(cluster)
			if err != nil {
				return err
			}
			if got := w.Annotations[controller.ManifestsDigestAnnotation]; got != digest {
				return fmt.Errorf("digest %q, want %q", got, digest)
			}
			if got := v.chain(w); got.Route != want.Route || len(got.Registries) != len(want.Registries) || got.Registries[0].Reference != want.Registries[0].Reference {
				return fmt.Errorf("chain %+v, want %+v", got, want)
			}
			return nil
		})
		settle(30 * time.Second)
		if n := writes("manifestwork", "update") - before; n != 1 {
			t.Errorf("%s: %.0f work updates, want 1", what, n)
		}
		base := writeCount()
		settle(5 * time.Second)
		time.Sleep(3 * time.Second)
		if n := writeCount() - base; n != 0 {
			t.Errorf("%s: %.0f writes after it, want 0", what, n)
		}
	}

	// By hand: the chain Secret's data changed (another registry reference), the digest kept.
	w, err := v.work(cluster)
	if err != nil {
		t.Fatal(err)
	}
	edited := false
	for i, m := range w.Spec.Workload.Manifests {
		if bytes.Contains(m.Raw, []byte(`"kind":"Secret"`)) {
			w.Spec.Workload.Manifests[i].Raw = bytes.Replace(m.Raw, []byte(`"data":{`), []byte(`"data":{"injected":"aGFuZA==",`), 1)
			edited = !bytes.Equal(w.Spec.Workload.Manifests[i].Raw, m.Raw)
		}
	}
	if !edited {
		t.Fatal("the test's hand edit changed nothing")
	}
	before := writes("manifestwork", "update")
	if err := c.Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	repaired("a hand-edited work", before)
	if w, err := v.work(cluster); err != nil {
		t.Fatal(err)
	} else if bytes.Contains(w.Spec.Workload.Manifests[1].Raw, []byte("injected")) {
		t.Errorf("the hand edit is still in the work: %s", w.Spec.Workload.Manifests[1].Raw)
	}

	// Every work as the cache holds it keeps its digest: a restart rewrites nothing of this
	// workspace but the one work below.
	var works workv1.ManifestWorkList
	if err := c.List(t.Context(), &works, client.MatchingLabels{hub.WorkspaceLabel: v.ws}); err != nil {
		t.Fatal(err)
	}
	for i := range works.Items {
		w := works.Items[i].DeepCopy()
		cached, err := controller.SlimManifestWork(w)
		if err != nil {
			t.Fatal(err)
		}
		if cw := cached.(*workv1.ManifestWork); cw.Annotations[controller.ManifestsDigestAnnotation] == "" || cw.Spec.Workload.Manifests != nil {
			t.Errorf("work %s/%s as cached: digest %q, %d manifests; as on the hub: %q\n%s", w.Namespace, w.Name, cw.Annotations[controller.ManifestsDigestAnnotation],
				len(cw.Spec.Workload.Manifests), works.Items[i].Annotations[controller.ManifestsDigestAnnotation], works.Items[i].Spec.Workload.Manifests)
		}
	}

	// An older controller's work, as a new controller starts to find it: the same manifests, no
	// digest.
	stop()
	w, err = v.work(cluster)
	if err != nil {
		t.Fatal(err)
	}
	delete(w.Annotations, controller.ManifestsDigestAnnotation)
	before = writes("manifestwork", "update")
	if err := c.Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	runManager(t, h)
	repaired("a work without a digest", before)
}
