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

	"github.com/umkim/terraform-provider-fleet/hack/internal/localrun"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// extras are what the fleet runs besides clusters and work agents: registries and
// `fleet-controller agent` on every cluster.
type extras struct {
	dir        string
	registries map[string]*testbed.Registry
	users      map[string]localrun.Registry
	agents     map[string]*exec.Cmd
	exited     map[string]chan struct{}
	files      []string
	info       []string
}

func startExtras(ctx context.Context, dir string, fleet *testbed.Fleet, registries []string, agentBin string, agentArgs []string) (*extras, error) {
	x := &extras{dir: dir, registries: map[string]*testbed.Registry{}, users: map[string]localrun.Registry{},
		agents: map[string]*exec.Cmd{}, exited: map[string]chan struct{}{}}
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
		cmd := exec.Command(agentBin, append([]string{"agent", "--kubeconfig", c.Kubeconfig,
			"--cache-dir", filepath.Join(c.Dir, "oci-cache"), "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, agentArgs...)...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			_ = out.Close()
			return nil, errors.Join(fmt.Errorf("cluster %s: fleet-controller agent: %w", c.Name, err), x.stop())
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); _ = out.Close(); close(done) }()
		x.agents[c.Name], x.exited[c.Name] = cmd, done
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
	for name, done := range x.exited {
		select {
		case <-done:
			if key := "agent " + name; !reported[key] {
				reported[key] = true
				log.Printf("cluster %s: fleet-controller agent exited; see %s", name, filepath.Join(x.dir, name+".agent.log"))
			}
		default:
		}
	}
	for name, r := range x.registries {
		if key := "registry " + name; !r.Running() && !reported[key] {
			reported[key] = true
			log.Printf("registry %s stopped", name)
		}
	}
}

// stop ends the agents (SIGTERM, then SIGKILL after 10 s) and the registries.
func (x *extras) stop() error {
	var errs []error
	for name, cmd := range x.agents {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-x.exited[name]:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-x.exited[name]
		}
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
