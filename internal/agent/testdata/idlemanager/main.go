// Command idlemanager is BenchmarkAgentPullRSS's baseline: the smallest controller-runtime
// program an agent could be, a manager with client-go's scheme, no controllers, no metrics or
// probes, running for --for against the cluster of --kubeconfig, then exiting 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	// controller-runtime registers --kubeconfig itself.
	run := flag.Duration("for", 3*time.Second, "how long to run")
	flag.Parse()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: clientgoscheme.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *run)
	defer cancel()
	if err := mgr.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
