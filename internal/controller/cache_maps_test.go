package controller_test

import (
	"fmt"
	"testing"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestSharedMetadataRepairsOneObject: the cache shares one map among the works (and storages)
// whose labels or annotations are equal. On the real apiserver, a hand edit of one work's digest
// annotation (its watch event reconciles the workspace) and of one ClusterOCIStorage's labels and
// status (the routing does not watch its storages' updates: repaired by the workspace's next
// reconcile, the work's here) is repaired for that object alone (the works sharing its
// annotations keep theirs, are not rewritten), and then nothing is written.
func TestSharedMetadataRepairsOneObject(t *testing.T) {
	h, c, v := seededWorkspace(t, "shared-meta")
	runManager(t, h)
	v.converged()
	var digest string
	testkit.Eventually(t, converge, "the eu works stamped alike", func() error {
		digest = ""
		for _, cl := range seedRoutes["eu"] {
			w, err := v.work(cl)
			if err != nil {
				return err
			}
			d := w.Annotations[controller.ManifestsDigestAnnotation]
			if d == "" || (digest != "" && d != digest) {
				return fmt.Errorf("%s: digest %q, another eu work's %q", cl, d, digest)
			}
			digest = d
		}
		return nil
	})
	settle(30 * time.Second)
	before := workVersions(t, v)

	const cluster = "eu-01"
	st, err := v.storage(cluster)
	if err != nil {
		t.Fatal(err)
	}
	route := st.Status.Route
	testkit.Update(t, c, st, func(s *v1alpha1.ClusterOCIStorage) { s.Labels["edited"] = "by-hand" })
	st.Status.Route = "edited-by-hand"
	if err := c.Status().Update(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // in the cache before the work's edit makes the workspace reconcile
	w, err := v.work(cluster)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Update(t, c, w, func(w *workv1.ManifestWork) {
		w.Annotations[controller.ManifestsDigestAnnotation] = "sha256:edited-by-hand"
	})
	testkit.Eventually(t, converge, "the hand edits repaired", func() error {
		w, err := v.work(cluster)
		if err != nil {
			return err
		}
		if got := w.Annotations[controller.ManifestsDigestAnnotation]; got != digest {
			return fmt.Errorf("%s's work: digest %q, want %q", cluster, got, digest)
		}
		st, err := v.storage(cluster)
		if err != nil {
			return err
		}
		if st.Status.Route != route {
			return fmt.Errorf("%s's storage: route %q, want %q", cluster, st.Status.Route, route)
		}
		return nil
	})
	settle(30 * time.Second)
	if changed := rewritten(t, v, before); join(changed) != cluster {
		t.Errorf("works rewritten: %v, want only %s's", changed, cluster)
	}
	for _, cl := range seedRoutes["eu"] {
		if w, err := v.work(cl); err != nil || w.Annotations[controller.ManifestsDigestAnnotation] != digest {
			t.Errorf("%s's work after the repair: %v, digest %q, want %q", cl, err, w.Annotations[controller.ManifestsDigestAnnotation], digest)
		}
	}
	quiet := writes("", "")
	time.Sleep(2 * time.Second)
	if n := writes("", "") - quiet; n != 0 {
		t.Errorf("%v writes after the repair settled", n)
	}
}
