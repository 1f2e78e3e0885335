package agent

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// +kubebuilder:rbac:groups=fleet.umkim.io,namespace=fleet-system,resources=registryprobes,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.umkim.io,namespace=fleet-system,resources=registryprobes/status,verbs=get;update;patch

// Defaults of the connectivity probe.
const (
	// DefaultProbeInterval is how often every registry of every delivered chain is probed,
	// with up to ±10% jitter.
	DefaultProbeInterval = 2 * time.Minute
	// DefaultProbeRefresh is how old a probe's probedAt may grow while no result changes
	// before the agent writes it again; a change is written at once.
	DefaultProbeRefresh = 15 * time.Minute
	// DefaultParallelProbes is how many registries of one chain are probed at once
	// (--probe-concurrency).
	DefaultParallelProbes = 4
	// maxProbeMessage bounds a result's message (the CRD's maxLength).
	maxProbeMessage = 512
)

// RegistryProbeReconciler probes the registries of the chain each RegistryProbe names (the
// workspace's chain Secret, which the hub delivers beside it): GET /v2/ with the agent's
// credentials and TLS settings (puller.Probe), every Interval with jitter, up to Parallel
// registries at once, each bounded by Timeout. A chain Secret's change probes its chain at once.
//
// It writes the status only when a result (a registry's state) changes, or when probedAt is
// older than Refresh: so a steady fleet writes once per Refresh per chain, and the hub's
// feedback, which carries probedAt, changes no more often than that.
type RegistryProbeReconciler struct {
	client.Client
	// Namespace is the agent's namespace; empty means ocichain.Namespace.
	Namespace string
	// Interval is how often a chain is probed; 0 means DefaultProbeInterval.
	Interval time.Duration
	// Refresh bounds how old probedAt grows while nothing changes; 0 means DefaultProbeRefresh.
	Refresh time.Duration
	// Timeout bounds one probe of one registry; 0 means puller.DefaultProbeTimeout.
	Timeout time.Duration
	// IdleTimeout bounds each pause in what a registry sends (puller.Options.IdleTimeout).
	IdleTimeout time.Duration
	// Parallel is how many registries of a chain are probed at once; 0 means DefaultParallelProbes.
	Parallel int
	// UserAgent is sent to registries.
	UserAgent string
	// now is the clock; nil means time.Now.
	now func() time.Time
}

// Reconcile probes the chain of one RegistryProbe and writes what changed.
func (r *RegistryProbeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var probe v1alpha1.RegistryProbe
	if err := r.Get(ctx, req.NamespacedName, &probe); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	next := ctrl.Result{RequeueAfter: jittered(or(r.Interval, DefaultProbeInterval))}
	chains := &OCIPullReconciler{Client: r.Client, Namespace: r.Namespace}
	chain, _, err := chains.readChain(ctx, probe.Spec.Workspace)
	if apierrors.IsNotFound(err) || errors.As(err, new(chainError)) {
		// Nothing to probe until the hub delivers a usable chain; its arrival re-queues.
		return next, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	results, err := r.probeChain(ctx, chain)
	if err != nil {
		return ctrl.Result{}, err
	}
	desired := probeStatus(probe.Generation, probe.Status, results, r.clock(), or(r.Refresh, DefaultProbeRefresh))
	return next, writeStatus(ctx, r.Client, &probe, &probe.Status, &desired)
}

// probeChain probes every registry of chain, up to Parallel at once, and returns the results in
// chain order.
func (r *RegistryProbeReconciler) probeChain(ctx context.Context, chain ocichain.Chain) ([]puller.ProbeResult, error) {
	results := make([]puller.ProbeResult, len(chain.Registries))
	errs := make([]error, len(chain.Registries))
	sem := make(chan struct{}, cmp.Or(max(r.Parallel, 0), DefaultParallelProbes))
	var wg sync.WaitGroup
	for i, reg := range chain.Registries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			results[i], errs[i] = puller.Probe(ctx, reg, r.Timeout, puller.Options{IdleTimeout: r.IdleTimeout, UserAgent: r.UserAgent})
			if errs[i] == nil {
				observeProbe(results[i], time.Since(start))
			}
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// probeStatus is the status that records results over current: each registry's since carries
// over while its state does not change, and probedAt moves to now only when a result changed or
// probedAt is older than refresh. Plain inputs, no I/O.
func probeStatus(gen int64, current v1alpha1.RegistryProbeStatus, results []puller.ProbeResult, now time.Time, refresh time.Duration) v1alpha1.RegistryProbeStatus {
	at := metav1.NewTime(now.Truncate(time.Second))
	prev := map[string]v1alpha1.RegistryProbeResult{}
	for _, p := range current.Registries {
		prev[p.Registry] = p
	}
	out := v1alpha1.RegistryProbeStatus{ObservedGeneration: gen, ProbedAt: current.ProbedAt}
	names := make([]string, 0, len(results))
	for _, res := range results {
		state, msg := probeResult(res), ""
		if res.Class != "" {
			msg = truncate(res.Err.Error(), maxProbeMessage)
		}
		entry := v1alpha1.RegistryProbeResult{Registry: res.Registry, State: state, Since: &at, Message: msg}
		if p, ok := prev[res.Registry]; ok && p.State == state && p.Since != nil {
			entry.Since = p.Since
		}
		out.Registries = append(out.Registries, entry)
		names = append(names, res.Registry+"="+state)
	}
	out.Results = strings.Join(names, ",")
	changed := out.Results != current.Results || gen != current.ObservedGeneration
	if changed || current.ProbedAt == nil || now.Sub(current.ProbedAt.Time) >= refresh {
		out.ProbedAt = &at
	}
	if !changed && out.ProbedAt == current.ProbedAt {
		// Nothing new to say: keep what is written, messages included (an error's wording can
		// change from one probe to the next, e.g. a port number).
		out.Registries = current.Registries
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-len("…")] + "…"
}

// jittered is d with up to ±10% jitter, so that a fleet's agents do not probe in step.
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64())) //nolint:gosec // jitter, not security
}

func (r *RegistryProbeReconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// SetupWithManager registers the reconciler: a RegistryProbe is probed when it is created or its
// spec changes, whenever its chain Secret changes, and every Interval after each probe.
func (r *RegistryProbeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ns := cmp.Or(r.Namespace, ocichain.Namespace)
	return ctrl.NewControllerManagedBy(mgr).
		Named("registryprobe").
		For(&v1alpha1.RegistryProbe{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []ctrl.Request {
			if obj.GetNamespace() != ns || !strings.HasPrefix(obj.GetName(), ocichain.SecretName("")) {
				return nil
			}
			// The probe of a workspace is named like its chain Secret.
			return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: obj.GetName()}}}
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}
