// Command localhub runs the local hub (internal/testbed) in the foreground: etcd and
// kube-apiserver on 127.0.0.1 with the hub's CRDs installed. It writes an admin kubeconfig, logs
// "ready" once the API server answers, and on SIGINT or SIGTERM stops the hub and removes the
// kubeconfig. `make hub-up` runs it in the background through hack/hub-up.sh; -reap cleans up
// after a localhub that was killed (hack/hub-down.sh).
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
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

func main() {
	// A flag set of its own: controller-runtime registers -kubeconfig on the global one.
	flags := flag.NewFlagSet("localhub", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", ".hub/kubeconfig", "where to write the admin kubeconfig")
	verbose := flags.Bool("v", false, "copy etcd's and kube-apiserver's logs to stderr")
	reap := flags.Bool("reap", false, "only end the processes of hubs whose owner was killed, and exit")
	_ = flags.Parse(os.Args[1:])
	if *reap {
		testbed.ReapStale()
		return
	}
	log.SetFlags(log.LstdFlags)
	log.SetPrefix("localhub: ")
	if err := run(*kubeconfig, *verbose); err != nil {
		log.Fatal(err)
	}
}

func run(kubeconfig string, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var output io.Writer
	if verbose {
		output = os.Stderr
	}
	begin := time.Now()
	hub, err := testbed.Start(ctx, testbed.Options{Output: output})
	if err != nil {
		return err
	}
	if err := createWorkspaces(ctx, hub); err != nil {
		return errors.Join(err, hub.Stop())
	}
	if err := hub.WriteKubeconfig(kubeconfig); err != nil {
		return errors.Join(fmt.Errorf("writing the kubeconfig: %w", err), hub.Stop())
	}
	log.Printf("ready in %v: %s, kubeconfig %s", time.Since(begin).Round(time.Millisecond), hub.APIServerURL(), kubeconfig)

	<-ctx.Done()
	log.Print("stopping")
	err = hub.Stop()
	if rmErr := os.Remove(kubeconfig); rmErr != nil && !os.IsNotExist(rmErr) && err == nil {
		err = rmErr
	}
	if err != nil {
		return err
	}
	log.Print("stopped")
	return nil
}

// createWorkspaces creates Fleet's two standard workspaces, as a Fleet install does, so that the
// quick start's resources have their default workspace.
func createWorkspaces(ctx context.Context, hub *testbed.Hub) error {
	c, err := hub.Client()
	if err != nil {
		return err
	}
	for _, name := range []string{"fleet-default", "fleet-local"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return fmt.Errorf("creating workspace %s: %w", name, err)
		}
	}
	return nil
}
