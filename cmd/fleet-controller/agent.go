package main

import (
	"flag"
	"fmt"
	"io"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/umkim/terraform-provider-fleet/internal/agent"
)

// runAgent runs the agent on a workload cluster until SIGTERM or SIGINT.
func runAgent(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o agent.Options
	o.BindFlags(fs)
	kubeconfig := fs.String("kubeconfig", "", "`path` of the workload cluster's kubeconfig; empty means in-cluster configuration, then $KUBECONFIG")
	zo := zap.Options{}
	zo.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fleet-controller agent [flags]\n\nRuns the agent against a workload cluster: pulls the OCI artifacts that OCIPulls name into\n--cache-dir, through the chain Secrets the hub delivers to fleet-system.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	o.UserAgent = "fleet-controller/" + version
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo), zap.WriteTo(stderr)))
	log := ctrl.Log.WithName("agent")

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		log.Error(err, "no workload cluster to talk to")
		return 1
	}
	mgr, err := agent.NewManager(cfg, o)
	if err != nil {
		log.Error(err, "setting up the manager")
		return 1
	}
	log.Info("starting", "version", version, "cacheDir", o.CacheDir, "leaderElection", o.LeaderElect)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		return 1
	}
	return 0
}
