// Package localrun is what hack/localhub and hack/localfleet share: their common flags (-v,
// -reap), running a local environment in the foreground until SIGINT or SIGTERM, writing its
// files once it is up, logging "ready", and on the signal stopping it and removing the files.
// hack/hub-up.sh and hack/fleet-up.sh read the log and the files; hub-down.sh and fleet-down.sh
// send the signal and run -reap.
package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// Env is a running local environment, as Program.Start returns it.
type Env struct {
	// Stop stops every process of the environment.
	Stop func() error
	// Write writes the files others use it through (kubeconfigs); it runs once Start returned.
	Write func() error
	// Files are what Write writes, removed when the environment stops (or Write failed).
	Files []string
	// Ready is what the "ready in <duration>: …" line says; Info are logged after it, a line each.
	Ready string
	Info  []string
	// Watch, when set, runs every 5 s while the environment runs, to report what went wrong.
	Watch func()
}

// Program is a command that runs one kind of local environment.
type Program struct {
	// Flags holds the program's own flags; Main adds -v and -reap and parses os.Args.
	// Its name is the log prefix.
	Flags *flag.FlagSet
	// What names the environment in the flags' help: "hub", "fleet".
	What string
	// Reap ends the processes of environments whose owner was killed (-reap).
	Reap func()
	// Start starts the environment; output, when not nil, gets every process's log.
	Start func(ctx context.Context, output io.Writer) (*Env, error)
}

// Main parses the flags and runs the program: with -reap it only reaps; otherwise it runs the
// environment until SIGINT or SIGTERM, and exits 1 on an error.
func (p Program) Main() {
	verbose := p.Flags.Bool("v", false, "copy the logs of the "+p.What+"'s processes (etcd, kube-apiserver, …) to stderr")
	reap := p.Flags.Bool("reap", false, "only end the processes of "+p.What+"s whose owner was killed, and exit")
	_ = p.Flags.Parse(os.Args[1:])
	if *reap {
		p.Reap()
		return
	}
	log.SetFlags(log.LstdFlags)
	log.SetPrefix(p.Flags.Name() + ": ")
	if err := p.run(*verbose); err != nil {
		log.Fatal(err)
	}
}

func (p Program) run(verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var output io.Writer
	if verbose {
		output = os.Stderr
	}
	begin := time.Now()
	env, err := p.Start(ctx, output)
	if err != nil {
		return err
	}
	stopAll := func() error { return errors.Join(env.Stop(), removeFiles(env.Files)) }
	if err := env.Write(); err != nil {
		return errors.Join(fmt.Errorf("writing the kubeconfigs: %w", err), stopAll())
	}
	log.Printf("ready in %v: %s", time.Since(begin).Round(time.Millisecond), env.Ready)
	for _, line := range env.Info {
		log.Print(line)
	}

	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
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
			if env.Watch != nil {
				env.Watch()
			}
		}
	}
}

func removeFiles(files []string) error {
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CreateWorkspaces creates Fleet's two standard workspaces, as a Fleet install does, so that the
// quick start's resources have their default workspace; those that exist are left as they are.
func CreateWorkspaces(ctx context.Context, hub *testbed.Hub) error {
	c, err := hub.Client()
	if err != nil {
		return err
	}
	for _, name := range []string{"fleet-default", "fleet-local"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating workspace %s: %w", name, err)
		}
	}
	return nil
}

// Registry is one registry of a local fleet's registries.json (hack/localfleet -registries):
// where it listens and its users. The push user writes content; the agent user is the read-only
// identity clusters pull with (the test registry does not tell them apart, a real one would).
type Registry struct {
	Addr          string `json:"addr"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	AgentUsername string `json:"agentUsername"`
	AgentPassword string `json:"agentPassword"`
	// PID is the registry's process: stop it to make the registry unreachable.
	PID int `json:"pid"`
}

// ReadRegistries reads a local fleet's registries.json.
func ReadRegistries(path string) (map[string]Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (start the fleet with FLEET_REGISTRIES=source,mirror make fleet-up)", err)
	}
	var regs map[string]Registry
	return regs, json.Unmarshal(data, &regs)
}
