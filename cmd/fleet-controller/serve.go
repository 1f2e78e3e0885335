package main

import (
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/umkim/terraform-provider-fleet/internal/manager"
)

// serve runs the manager of a mode: it parses args with the mode's flags (bind) and the
// --kubeconfig and zap flags every mode has, builds the manager (build returns it with what to
// log about it) and runs it until SIGTERM or SIGINT.
func serve(mode, about string, args []string, stderr io.Writer, bind func(*flag.FlagSet), build func(*rest.Config) (ctrl.Manager, []any, error)) int {
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	bind(fs)
	kubeconfig := fs.String("kubeconfig", "", "`path` of the cluster's kubeconfig; empty means in-cluster configuration, then $KUBECONFIG")
	zo := zap.Options{}
	zo.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: fleet-controller %s [flags]\n\n%s\n\nflags:\n", mode, about)
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo), zap.WriteTo(stderr)))
	log := ctrl.Log.WithName(mode)

	if soft, err := manager.SetMemoryLimitFromEnv(); err != nil {
		log.Error(err, "no memory limit")
		return 2
	} else if soft > 0 {
		log.Info("the collector's soft memory limit is set from the container's", "softLimitBytes", soft)
	}
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		log.Error(err, "no cluster to talk to")
		return 1
	}
	mgr, facts, err := build(cfg)
	if err != nil {
		log.Error(err, "setting up the manager")
		return 1
	}
	log.Info("starting", append([]any{"version", version}, facts...)...)
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
