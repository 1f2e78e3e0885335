package main

import (
	"io"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
)

// runHub runs the hub controllers until SIGTERM or SIGINT.
func runHub(args []string, _, stderr io.Writer) int {
	var o controller.HubOptions
	return serve("hub", "Runs the hub reconcilers against the hub cluster (Kubernetes with Open Cluster Management's\nand fleet.umkim.io's CRDs).",
		args, stderr, o.BindFlags, func(cfg *rest.Config) (ctrl.Manager, []any, error) {
			gcPercent := manager.SetGCPercent(controller.HubGCPercent)
			mgr, err := controller.NewHubManager(cfg, o)
			return mgr, []any{"controllers", o.ControllerNames(), "leaderElection", o.Manager.LeaderElect, "gcPercent", gcPercent}, err
		})
}
