package controller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestRoutingBuildsOneWorkPerChain: a reconcile builds the desired work of each distinct chain
// once, not one per cluster, and a cluster gets a work of its own only when its work is written.
// A spec change that moves no cluster builds at most the workspace's three chains (eu, lab,
// fallback) per reconcile for its eight routed clusters and copies none; a work deleted by hand
// is rebuilt, and only it.
func TestRoutingBuildsOneWorkPerChain(t *testing.T) {
	const ws = "lazy-works-ws"
	h, c, v := seededWorkspace(t, ws)
	ctx := t.Context()
	runManager(t, h)
	v.converged()
	testkit.Eventually(t, converge, "every routed cluster's work", func() error {
		for _, clusters := range seedRoutes {
			for _, cl := range clusters {
				if _, err := v.work(cl); err != nil {
					return err
				}
			}
		}
		return nil
	})
	time.Sleep(2 * time.Second) // let the writes' own reconciles pass

	counts, undo := controller.CountChainWorks(ws)
	defer undo()
	works0 := writes("manifestwork", "")
	testkit.Update(t, c, v.route("shadowed"), func(r *v1alpha1.OCIStorageRoute) { r.Spec.Priority = 51 }) // still shadowed: no cluster moves
	v.converged()
	time.Sleep(time.Second)
	got := counts()
	if got.Plans == 0 {
		t.Fatalf("no reconcile planned workspace %s after a route change", ws)
	}
	if got.Templates > 3*got.Plans || got.Copies != 0 {
		t.Errorf("a change that moves no cluster: %d works built and %d copied in %d reconciles; want at most 3 per reconcile (one per chain) and none copied",
			got.Templates, got.Copies, got.Plans)
	}
	if n := writes("manifestwork", "") - works0; n != 0 {
		t.Errorf("a change that moves no cluster wrote %v works", n)
	}

	// The attack: a work deleted by hand is rebuilt, from its chain's shared work.
	w, err := v.work("us-01")
	if err != nil {
		t.Fatal(err)
	}
	before := counts()
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, converge, "us-01's work written again", func() error {
		nw, err := v.work("us-01")
		if err != nil {
			return err
		}
		if nw.UID == w.UID {
			return fmt.Errorf("still the deleted work")
		}
		if got := v.chain(nw); got.Route != "fallback" || len(got.Registries) != 1 || got.Registries[0].Name != "source" {
			return fmt.Errorf("us-01's new work carries route %q, registries %v", got.Route, got.Registries)
		}
		return nil
	})
	time.Sleep(time.Second)
	if got := counts(); got.Copies-before.Copies != 1 {
		t.Errorf("repairing one deleted work copied %d works, want 1", got.Copies-before.Copies)
	}
}
