// Command localfleet runs a local fleet (internal/testbed.StartFleet) in the foreground: the local
// hub plus workload clusters, each its own kube-apiserver and etcd on 127.0.0.1 with Open Cluster
// Management's work agent (bin/work-agent). It writes kubeconfigs into -dir, logs "ready" once
// every agent has synced with the hub, and on SIGINT or SIGTERM stops everything and removes
// them. `make fleet-up` runs it in the background through hack/fleet-up.sh; -reap cleans up after
// a localfleet that was killed (hack/fleet-down.sh).
//
// In -dir: kubeconfig (the hub's admin), <cluster>.kubeconfig (each cluster's admin),
// <cluster>.hub-kubeconfig (its work agent's least-privilege hub credentials) and
// <cluster>.work-agent.log (a link to its agent's log).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

func main() {
	// A flag set of its own: controller-runtime registers -kubeconfig on the global one.
	flags := flag.NewFlagSet("localfleet", flag.ExitOnError)
	dir := flags.String("dir", ".fleet", "where to write the kubeconfigs")
	clusters := flags.String("clusters", "eu-01,us-01", "comma-separated names of the workload clusters")
	seed := flags.Bool("seed", true, "seed the demo fleet's hub objects (internal/demoseed) into "+demoseed.Workspace+
		" first, so that clusters named after demo clusters get their labels and cluster sets")
	syncEvery := flags.Duration("status-sync-interval", 5*time.Second, "the work agents' --status-sync-interval")
	verbose := flags.Bool("v", false, "copy every etcd's, kube-apiserver's and work agent's log to stderr")
	reap := flags.Bool("reap", false, "only end the processes of fleets whose owner was killed, and exit")
	_ = flags.Parse(os.Args[1:])
	if *reap {
		testbed.ReapStaleFleets()
		return
	}
	log.SetFlags(log.LstdFlags)
	log.SetPrefix("localfleet: ")
	var names []string
	for _, n := range strings.Split(*clusters, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if err := run(*dir, names, *seed, *syncEvery, *verbose); err != nil {
		log.Fatal(err)
	}
}

func run(dir string, names []string, seed bool, syncEvery time.Duration, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var output io.Writer
	if verbose {
		output = os.Stderr
	}
	begin := time.Now()
	fleet, err := testbed.StartFleet(ctx, testbed.FleetOptions{
		ClusterNames: names, StatusSyncInterval: syncEvery, Output: output,
		Prepare: func(ctx context.Context, hub *testbed.Hub) error { return prepareHub(ctx, hub, seed) },
	})
	if err != nil {
		return err
	}
	hub := fleet.Hub
	stopAll := func() error { return errors.Join(fleet.Stop(), removeFiles(dir, names)) }
	if err := writeFiles(dir, hub, fleet); err != nil {
		return errors.Join(fmt.Errorf("writing the kubeconfigs: %w", err), stopAll())
	}
	log.Printf("ready in %v: hub %s, kubeconfig %s", time.Since(begin).Round(time.Millisecond), hub.APIServerURL(), filepath.Join(dir, "kubeconfig"))
	for _, c := range fleet.Clusters {
		log.Printf("cluster %s: %s, kubeconfig %s, work agent log %s", c.Name, c.APIServerURL(),
			filepath.Join(dir, c.Name+".kubeconfig"), filepath.Join(dir, c.Name+".work-agent.log"))
	}

	// An agent that dies is reported; the rest keep running.
	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
	reported := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			log.Print("stopping")
			if err := stopAll(); err != nil {
				return err
			}
			log.Print("stopped")
			return nil
		case <-ticker.C:
			for _, c := range fleet.Clusters {
				if !c.AgentRunning() && !reported[c.Name] {
					reported[c.Name] = true
					log.Printf("cluster %s: the work agent exited%s", c.Name, c.AgentLog())
				}
			}
		}
	}
}

// prepareHub creates Fleet's two standard workspaces, as localhub does, and the demo's objects.
func prepareHub(ctx context.Context, hub *testbed.Hub, seed bool) error {
	c, err := hub.Client()
	if err != nil {
		return err
	}
	for _, name := range []string{"fleet-default", "fleet-local"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating workspace %s: %w", name, err)
		}
	}
	if seed {
		if err := demoseed.Seed(ctx, c, demoseed.Workspace); err != nil {
			return fmt.Errorf("seeding the demo fleet: %w", err)
		}
	}
	return nil
}

func writeFiles(dir string, hub *testbed.Hub, fleet *testbed.Fleet) error {
	if err := hub.WriteKubeconfig(filepath.Join(dir, "kubeconfig")); err != nil {
		return err
	}
	for _, c := range fleet.Clusters {
		for src, dst := range map[string]string{c.Kubeconfig: c.Name + ".kubeconfig", c.HubKubeconfig: c.Name + ".hub-kubeconfig"} {
			data, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, dst), data, 0o600); err != nil {
				return err
			}
		}
		link := filepath.Join(dir, c.Name+".work-agent.log")
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Join(c.Dir, "work-agent.log"), link); err != nil {
			return err
		}
	}
	return nil
}

func removeFiles(dir string, names []string) error {
	var errs []error
	for _, f := range append([]string{"kubeconfig"}, expand(names)...) {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func expand(names []string) []string {
	var files []string
	for _, n := range names {
		files = append(files, n+".kubeconfig", n+".hub-kubeconfig", n+".work-agent.log")
	}
	return files
}
