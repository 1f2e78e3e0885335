// Package sitesim simulates the simplyblock storage operator on a workload cluster of the local
// fleet, where no NVMe hardware is: it installs the site-side CRDs (package v1alpha2) and runs a
// controller-runtime manager in-process that acts on them as the operator's published behaviour
// describes. A Discover OperatorOps walks Inspecting → Probing → Writing and writes a draft
// ClusterDeploymentConfig naming the cluster's Node objects and their devices (read from
// annotations, see CreateNodes); an approved draft walks Expanding → Expanded and creates a
// StorageCluster and one StorageNode per node, which go Online. The simulator writes only status
// after a draft's creation, except nodeSets when discovery re-runs on an unapproved draft, so the
// hub's server-side apply of sizing and approval (field manager hub-deploy) is never fought over.
package sitesim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

const (
	// DefaultNamespace is the operator's namespace, the site namespace the hub uses by default.
	DefaultNamespace = "simplyblock"
	// FieldManager is the simulator's field manager for every write.
	FieldManager = "simplyblock-operator-sim"
	// DefaultStepDelay is how long each phase of a run, an expansion and a node's start take.
	DefaultStepDelay = 300 * time.Millisecond

	syncTimeout = 60 * time.Second // for the informers, on a loaded machine
)

// Options configure the simulator. The zero value is ready to use.
type Options struct {
	// StepDelay is the time each phase lasts (Inspecting, Probing, Writing, Expanding, a
	// StorageNode's Pending); zero means DefaultStepDelay.
	StepDelay time.Duration
	// Logger receives the manager's and reconcilers' logs; the zero value discards them.
	Logger logr.Logger
}

func (o Options) stepDelay() time.Duration {
	if o.StepDelay > 0 {
		return o.StepDelay
	}
	return DefaultStepDelay
}

// Scheme holds client-go's built-in types and the site kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha2.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // only on conflicting registrations, a programming error
		}
	}
	return s
}

// Start installs the site CRDs and RBAC on the cluster cfg points at (Install) and runs the
// simulator there until stop is called or ctx ends. It returns once the simulator's caches have
// synced; stop waits for it to exit and returns its error, if any.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (stop func() error, err error) {
	if err := Install(ctx, cfg); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = logr.Discard()
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  Scheme(),
		Logger:  logger,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Several sites may run in one process (one simulator per cluster of a fleet).
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("site simulator: %w", err)
	}
	if err := Setup(mgr, opts); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	// The informers the reconcilers use, started and synced now so that the simulator acts on
	// the first object a caller creates.
	syncCtx, synced := context.WithTimeout(runCtx, syncTimeout)
	defer synced()
	for _, obj := range []client.Object{&corev1.Node{}, &v1alpha2.OperatorOps{}, &v1alpha2.ClusterDeploymentConfig{},
		&v1alpha2.StorageCluster{}, &v1alpha2.StorageNode{}} {
		if _, err := mgr.GetCache().GetInformer(syncCtx, obj); err != nil {
			cancel()
			return nil, errors.Join(fmt.Errorf("site simulator: informer of %T: %w", obj, err), <-done)
		}
	}
	return sync.OnceValue(func() error {
		cancel()
		return <-done
	}), nil
}

// StartT is Start for one test: it fails the test on error and stops the simulator when the test
// ends.
func StartT(t testing.TB, cfg *rest.Config, opts Options) {
	t.Helper()
	stop, err := Start(t.Context(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
}

// Setup adds the simulator's reconcilers to mgr, whose scheme must hold Scheme's kinds. The site
// CRDs must be installed (Install) before mgr starts.
func Setup(mgr ctrl.Manager, opts Options) error {
	c := client.WithFieldOwner(mgr.GetClient(), FieldManager)
	delay := opts.stepDelay()
	for _, setup := range []func(ctrl.Manager) error{
		(&discoverer{c: c, delay: delay}).setup,
		(&expander{c: c, delay: delay}).setup,
		(&nodeStarter{c: c, delay: delay}).setup,
		(&clusterReporter{c: c}).setup,
	} {
		if err := setup(mgr); err != nil {
			return fmt.Errorf("site simulator: %w", err)
		}
	}
	return nil
}
