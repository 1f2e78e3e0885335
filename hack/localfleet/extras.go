package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/hack/internal/localrun"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim"
)

// extras are what the fleet runs besides clusters and work agents: registries and
// `fleet-controller agent` on every cluster.
type extras struct {
	dir        string
	registries map[string]*testbed.Registry
	users      map[string]localrun.Registry
	agents     map[string]*testbed.Process
	stopSim    func() error
	files      []string
	info       []string
}

func startExtras(ctx context.Context, dir string, fleet *testbed.Fleet, registries []string, agentBin string, agentArgs []string, siteSim string) (*extras, error) {
	x := &extras{dir: dir, registries: map[string]*testbed.Registry{}, users: map[string]localrun.Registry{},
		agents: map[string]*testbed.Process{}}
	if siteSim != "" {
		if err := x.startSiteSimulator(ctx, fleet, siteSim); err != nil {
			return nil, err
		}
	}
	for _, name := range registries {
		f := localrun.Registry{Username: "pusher", Password: secret(), AgentUsername: "puller", AgentPassword: secret()}
		r, err := testbed.StartRegistry(ctx, testbed.RegistryOptions{Username: f.Username, Password: f.Password,
			Users: map[string]string{f.AgentUsername: f.AgentPassword}})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("registry %s: %w", name, err), x.stop())
		}
		x.registries[name] = r
		f.Addr, f.PID = r.Addr, r.PID()
		x.users[name] = f
		x.info = append(x.info, fmt.Sprintf("registry %s: http://%s (pid %d)", name, r.Addr, f.PID))
	}
	if len(registries) > 0 {
		x.files = append(x.files, filepath.Join(dir, "registries.json"))
	}
	if agentBin == "" {
		return x, nil
	}
	for _, c := range fleet.Clusters {
		logPath := filepath.Join(dir, c.Name+".agent.log")
		out, err := os.Create(logPath)
		if err != nil {
			return nil, errors.Join(err, x.stop())
		}
		cmd := exec.Command(agentBin, append([]string{"agent", "--kubeconfig", c.AgentKubeconfig,
			"--cache-dir", filepath.Join(c.Dir, "oci-cache"), "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, agentArgs...)...)
		cmd.Stdout, cmd.Stderr = out, out
		// Should localfleet be killed, its agents go with it (Linux), as its registries do.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		p, err := testbed.StartProcess(cmd, func() { _ = out.Close() })
		if err != nil {
			_ = out.Close()
			return nil, errors.Join(fmt.Errorf("cluster %s: fleet-controller agent: %w", c.Name, err), x.stop())
		}
		x.agents[c.Name] = p
		x.files = append(x.files, logPath)
		x.info = append(x.info, fmt.Sprintf("cluster %s: fleet-controller agent (pid %d), log %s", c.Name, cmd.Process.Pid, logPath))
	}
	return x, nil
}

// write writes registries.json, readable by its owner only: it holds the passwords.
func (x *extras) write() error {
	if len(x.users) == 0 {
		return nil
	}
	data, err := json.MarshalIndent(x.users, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(x.dir, "registries.json"), data, 0o600)
}

// watch reports an agent or a registry that exited, once.
func (x *extras) watch(reported map[string]bool) {
	for name, p := range x.agents {
		if key := "agent " + name; !p.Running() && !reported[key] {
			reported[key] = true
			log.Printf("cluster %s: fleet-controller agent exited; see %s", name, filepath.Join(x.dir, name+".agent.log"))
		}
	}
	for name, r := range x.registries {
		if key := "registry " + name; !r.Running() && !reported[key] {
			reported[key] = true
			log.Printf("registry %s stopped", name)
		}
	}
}

// startSiteSimulator runs the simplyblock site simulator on a cluster of the fleet, with three
// NVMe workers and a control-plane node to discover.
func (x *extras) startSiteSimulator(ctx context.Context, fleet *testbed.Fleet, name string) error {
	c := fleet.Cluster(name)
	if c == nil {
		return fmt.Errorf("-site-simulator: the fleet has no cluster %q", name)
	}
	stop, err := sitesim.Start(context.WithoutCancel(ctx), c.Config, sitesim.Options{})
	if err != nil {
		return fmt.Errorf("site simulator on %s: %w", name, err)
	}
	x.stopSim = stop
	spoke, err := client.New(c.Config, client.Options{Scheme: sitesim.Scheme()})
	if err == nil {
		err = sitesim.CreateNodes(ctx, spoke, sitesim.Node{Name: "worker-1"}, sitesim.Node{Name: "worker-2"}, sitesim.Node{Name: "worker-3"},
			sitesim.Node{Name: "control-plane-1", ControlPlane: true})
	}
	if err != nil {
		return errors.Join(err, x.stop())
	}
	x.info = append(x.info, fmt.Sprintf("cluster %s: simplyblock site simulator, Nodes worker-1..3 and control-plane-1", name))
	return nil
}

// stop ends the site simulator, the agents (SIGTERM, then SIGKILL after 10 s) and the registries.
func (x *extras) stop() error {
	var errs []error
	if x.stopSim != nil {
		errs = append(errs, x.stopSim())
		x.stopSim = nil
	}
	for _, p := range x.agents {
		p.Stop(10 * time.Second)
	}
	for _, r := range x.registries {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

func secret() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
