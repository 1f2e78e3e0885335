package manager

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/umkim/terraform-provider-fleet/internal/initpages"
)

// The one binary of both modes links Helm, Kubernetes' clients and the signature verifiers;
// their package init and the manager's set-up touch most of its code and read-only data once
// (measured: 42 of the 55 MiB an idle agent holds, where the kernel maps the binary's page cache
// in large folios), and an idle agent uses about 2 MiB of it afterwards; the hub's start-up (the
// first list of every cache) touches as much. While the agent starts, internal/initpages hands
// them back each time they pile up; once the manager's caches have synced, startupPages stops
// that and hands them back a last time (MADV_DONTNEED on the binary's read-only mappings): they
// are clean, so they are dropped, not written, and whatever the mode runs later (a Helm install,
// say) faults its own pages back in from the page cache. New adds it to the manager of every
// mode.

// StartupSettle is how long after the caches synced the start-up pages are released: the
// controllers start and reconcile what exists meanwhile, touching code they use once.
const StartupSettle = 10 * time.Second

// startupPages releases the binary's start-up pages StartupSettle after cache has synced, on
// every replica.
type startupPages struct{ cache cache.Cache }

func (s startupPages) Start(ctx context.Context) error {
	defer initpages.Stop()
	if !s.cache.WaitForCacheSync(ctx) {
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(StartupSettle):
	}
	initpages.Stop()
	log := ctrl.LoggerFrom(ctx).WithName("memory")
	if n, err := releaseStartupPages(); err != nil {
		log.Info("could not release the binary's start-up pages; they stay resident", "error", err.Error())
	} else if n > 0 {
		log.V(1).Info("released the binary's start-up pages", "mappedBytes", n)
	}
	return nil
}

// NeedLeaderElection is false: a replica waiting for the lease holds the same pages.
func (startupPages) NeedLeaderElection() bool { return false }
