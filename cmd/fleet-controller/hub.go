package main

import (
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
)

// runHub runs the hub controllers until SIGTERM or SIGINT.
func runHub(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o controller.HubOptions
	o.BindFlags(fs)
	kubeconfig := fs.String("kubeconfig", "", "`path` of the hub's kubeconfig; empty means in-cluster configuration, then $KUBECONFIG")
	zo := zap.Options{}
	zo.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fleet-controller hub [flags]\n\nRuns the hub reconcilers against the hub cluster (Kubernetes with Open Cluster Management's\nand fleet.umkim.io's CRDs).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo), zap.WriteTo(stderr)))
	log := ctrl.Log.WithName("hub")

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		log.Error(err, "no hub to talk to")
		return 1
	}
	mgr, err := controller.NewHubManager(cfg, o)
	if err != nil {
		log.Error(err, "setting up the manager")
		return 1
	}
	log.Info("starting", "version", version, "controllers", o.ControllerNames(), "leaderElection", o.LeaderElect)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		return 1
	}
	return 0
}

// restConfig loads the kubeconfig at path, or the in-cluster configuration, or $KUBECONFIG.
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return ctrl.GetConfig()
}
