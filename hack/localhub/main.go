// Command localhub runs the local hub (internal/testbed) in the foreground: etcd and
// kube-apiserver on 127.0.0.1 with the hub's CRDs installed. It writes an admin kubeconfig, logs
// "ready" once the API server answers, and on SIGINT or SIGTERM stops the hub and removes the
// kubeconfig. `make hub-up` runs it in the background through hack/hub-up.sh; -reap cleans up
// after a localhub that was killed (hack/hub-down.sh). It runs as hack/localfleet does, through
// hack/internal/localrun.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/umkim/terraform-provider-fleet/hack/internal/localrun"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

func main() {
	// A flag set of its own: controller-runtime registers -kubeconfig on the global one.
	flags := flag.NewFlagSet("localhub", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", ".hub/kubeconfig", "where to write the admin kubeconfig")
	localrun.Program{Flags: flags, What: "hub", Reap: testbed.ReapStale, Start: func(ctx context.Context, output io.Writer) (*localrun.Env, error) {
		hub, err := testbed.Start(ctx, testbed.Options{Output: output})
		if err != nil {
			return nil, err
		}
		if err := localrun.CreateWorkspaces(ctx, hub); err != nil {
			return nil, errors.Join(err, hub.Stop())
		}
		return &localrun.Env{
			Stop:  hub.Stop,
			Write: func() error { return hub.WriteKubeconfig(*kubeconfig) },
			Files: []string{*kubeconfig},
			Ready: fmt.Sprintf("%s, kubeconfig %s", hub.APIServerURL(), *kubeconfig),
		}, nil
	}}.Main()
}
