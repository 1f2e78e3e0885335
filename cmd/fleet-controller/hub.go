package main

import (
	"io"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
)

// runHub runs the hub controllers until SIGTERM or SIGINT.
func runHub(args []string, _, stderr io.Writer) int {
	var o controller.HubOptions
	return serve("hub", "Runs the hub reconcilers against the hub cluster (Kubernetes with Open Cluster Management's\nand fleet.umkim.io's CRDs).",
		args, stderr, o.BindFlags, func(cfg *rest.Config) (ctrl.Manager, []any, error) {
			mgr, err := controller.NewHubManager(cfg, o)
			return mgr, []any{"controllers", o.ControllerNames(), "leaderElection", o.Manager.LeaderElect}, err
		})
}
