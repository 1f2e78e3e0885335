package kube

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NewController is the builder of every controller, the hub's and the agent's: named, with
// opts, and with the one rate limiter of its workqueue (RateLimiter) unless opts has one, so
// that every failing object backs off the same way.
func NewController(mgr ctrl.Manager, name string, opts controller.Options) *builder.Builder {
	if opts.RateLimiter == nil {
		opts.RateLimiter = RateLimiter[ctrl.Request]()
	}
	return ctrl.NewControllerManagedBy(mgr).Named(name).WithOptions(opts)
}

// Build completes b with r, whose typed errors (Waiting, Stalling) do what they say.
func Build(b *builder.Builder, r reconcile.Reconciler) error { return b.Complete(Reconciler(r)) }
