package controller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// A manager that stops cancels its reconciles' context and waits 30 s for them: the plan of a
// large workspace must stop there, not run to its end. Planned with a live context, every
// cluster of the workspace has its plan; with an ended one, none has and the plan carries the
// context's error, so the reconcile writes nothing.
func TestPlanStopsWhenItsContextEnds(t *testing.T) {
	inv := &inventory.Workspace{Name: "ws", Routes: []routing.Route{{Name: "all", Default: true, Registries: []string{"r"}}}}
	for i := range 1000 {
		inv.Clusters = append(inv.Clusters, routing.Cluster{Name: fmt.Sprintf("c%04d", i)})
	}
	ws := &workspaceState{name: "ws", inv: inv, routes: []v1alpha1.OCIStorageRoute{{ObjectMeta: metav1.ObjectMeta{Name: "all"}}}}

	if p := planWorkspace(context.Background(), ws); p.err != nil || len(p.clusters) != 1000 {
		t.Fatalf("a live context: %d clusters planned (%v), want all 1000", len(p.clusters), p.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p := planWorkspace(ctx, ws); !errors.Is(p.err, context.Canceled) || len(p.clusters) != 0 {
		t.Errorf("an ended context: %d clusters planned, error %v; want none and %v", len(p.clusters), p.err, context.Canceled)
	}
}
