// Command localfleet runs a local fleet (internal/testbed.StartFleet) in the foreground: the local
// hub plus workload clusters, each its own kube-apiserver and etcd on 127.0.0.1 with Open Cluster
// Management's work agent (bin/work-agent). It writes kubeconfigs into -dir, logs "ready" once
// every agent has synced with the hub, and on SIGINT or SIGTERM stops everything and removes
// them. `make fleet-up` runs it in the background through hack/fleet-up.sh; -reap cleans up after
// a localfleet that was killed (hack/fleet-down.sh). It runs as hack/localhub does, through
// hack/internal/localrun.
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
	"path/filepath"
	"strings"
	"time"

	"github.com/umkim/terraform-provider-fleet/hack/internal/localrun"
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
	registries := flags.String("registries", "", "comma-separated names of OCI registries (CNCF distribution, bin/registry) to run on 127.0.0.1 "+
		"for the fleet, with a push and a read-only user each; their addresses and credentials go to <dir>/registries.json")
	agentBin := flags.String("agent", "", "path of fleet-controller: run `fleet-controller agent` on every cluster (log <dir>/<cluster>.agent.log)")
	agentArgs := flags.String("agent-args", "", "further space-separated flags of every `fleet-controller agent`")
	siteSim := flags.String("site-simulator", "", "name of a cluster on which to run the test bed's simplyblock site simulator "+
		"(internal/testbed/sitesim), with three NVMe worker Nodes and a control-plane Node, for StorageSiteDeployments")
	localrun.Program{Flags: flags, What: "fleet", Reap: testbed.ReapStaleFleets, Start: func(ctx context.Context, output io.Writer) (*localrun.Env, error) {
		fleet, err := testbed.StartFleet(ctx, testbed.FleetOptions{
			ClusterNames: names(*clusters), StatusSyncInterval: *syncEvery, Output: output,
			Prepare: func(ctx context.Context, hub *testbed.Hub) error { return prepareHub(ctx, hub, *seed) },
		})
		if err != nil {
			return nil, err
		}
		extras, err := startExtras(ctx, *dir, fleet, names(*registries), *agentBin, strings.Fields(*agentArgs), *siteSim)
		if err != nil {
			return nil, errors.Join(err, fleet.Stop())
		}
		return env(*dir, fleet, extras), nil
	}}.Main()
}

func names(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// env is the running fleet: its files in dir, what "ready" says of it, and a watch that reports
// an agent that died (the rest keep running).
func env(dir string, fleet *testbed.Fleet, x *extras) *localrun.Env {
	e := &localrun.Env{
		Stop:  func() error { return errors.Join(x.stop(), fleet.Stop()) },
		Write: func() error { return errors.Join(writeFiles(dir, fleet), x.write()) },
		Files: append([]string{filepath.Join(dir, "kubeconfig")}, x.files...),
		Ready: fmt.Sprintf("hub %s, kubeconfig %s", fleet.Hub.APIServerURL(), filepath.Join(dir, "kubeconfig")),
		Info:  x.info,
	}
	for _, c := range fleet.Clusters {
		for _, f := range []string{".kubeconfig", ".hub-kubeconfig", ".work-agent.log"} {
			e.Files = append(e.Files, filepath.Join(dir, c.Name+f))
		}
		e.Info = append(e.Info, fmt.Sprintf("cluster %s: %s, kubeconfig %s, work agent log %s", c.Name, c.APIServerURL(),
			filepath.Join(dir, c.Name+".kubeconfig"), filepath.Join(dir, c.Name+".work-agent.log")))
	}
	reported := map[string]bool{}
	e.Watch = func() {
		for _, c := range fleet.Clusters {
			if !c.AgentRunning() && !reported[c.Name] {
				reported[c.Name] = true
				log.Printf("cluster %s: the work agent exited%s", c.Name, c.AgentLog())
			}
		}
		x.watch(reported)
	}
	return e
}

// prepareHub creates Fleet's two standard workspaces, as localhub does, and the demo's objects.
func prepareHub(ctx context.Context, hub *testbed.Hub, seed bool) error {
	if err := localrun.CreateWorkspaces(ctx, hub); err != nil {
		return err
	}
	if !seed {
		return nil
	}
	c, err := hub.Client()
	if err != nil {
		return err
	}
	if err := demoseed.Seed(ctx, c, demoseed.Workspace); err != nil {
		return fmt.Errorf("seeding the demo fleet: %w", err)
	}
	return nil
}

func writeFiles(dir string, fleet *testbed.Fleet) error {
	if err := fleet.Hub.WriteKubeconfig(filepath.Join(dir, "kubeconfig")); err != nil {
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
