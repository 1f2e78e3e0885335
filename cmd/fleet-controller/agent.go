package main

import (
	"io"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/umkim/terraform-provider-fleet/internal/agent"
)

// runAgent runs the agent on a workload cluster until SIGTERM or SIGINT.
func runAgent(args []string, _, stderr io.Writer) int {
	var o agent.Options
	return serve("agent", "Runs the agent against a workload cluster: pulls the OCI artifacts that OCIPulls name into\n--cache-dir, through the chain Secrets the hub delivers to fleet-system.",
		args, stderr, o.BindFlags, func(cfg *rest.Config) (ctrl.Manager, []any, error) {
			o.UserAgent = "fleet-controller/" + version
			mgr, err := agent.NewManager(cfg, o)
			return mgr, []any{"cacheDir", o.CacheDir, "leaderElection", o.Manager.LeaderElect}, err
		})
}
