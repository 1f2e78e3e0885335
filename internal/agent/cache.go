package agent

import (
	"context"
	"time"

	"github.com/opencontainers/go-digest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// Defaults of the cache's garbage collection.
const (
	// DefaultCacheMaxBytes is the size the cache is kept under by default: 10 GiB.
	DefaultCacheMaxBytes = 10 << 30
	// DefaultCacheMinAge is how long after its last use an artifact nobody references is kept
	// anyway, so that a pull that just finished stays until its OCIPull's status names it.
	DefaultCacheMinAge = 5 * time.Minute
	// cacheCollectEvery is how often the cache is checked against its bound besides after each pull.
	cacheCollectEvery = time.Minute
)

// cacheCollector keeps the cache under MaxBytes: after every pull and every minute it removes
// the artifacts that no OCIPull (by spec or status digest) and no FleetRelease (by the digest
// it deployed) of the agent's namespace references, least recently used first. It also keeps
// the cache's size metrics.
type cacheCollector struct {
	client.Reader
	Namespace string
	Cache     *puller.Cache
	MaxBytes  int64
	MinAge    time.Duration
}

// Start runs until ctx ends; it runs on the leader only, which is the agent that pulls.
func (g *cacheCollector) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("cache")
	tick := time.NewTicker(cacheCollectEvery)
	defer tick.Stop()
	for {
		if err := g.collect(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "collecting the cache's garbage")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-g.Cache.Changed():
		case <-tick.C:
		}
	}
}

// collect runs one collection and updates the metrics.
func (g *cacheCollector) collect(ctx context.Context) error {
	defer g.observe()
	if g.MaxBytes <= 0 || g.Cache.Stats().Bytes <= g.MaxBytes {
		return nil
	}
	keep, err := g.referenced(ctx)
	if err != nil {
		return err
	}
	out, err := g.Cache.Collect(g.MaxBytes, g.MinAge, func(d digest.Digest) bool { return keep[d] })
	CacheEvictions.Add(float64(len(out.Artifacts)))
	if len(out.Artifacts) > 0 || out.Bytes > 0 || out.Over {
		s := g.Cache.Stats()
		ctrl.LoggerFrom(ctx).WithName("cache").Info("cache collected", "removedArtifacts", len(out.Artifacts), "removedBytes", out.Bytes,
			"bytes", s.Bytes, "artifacts", s.Artifacts, "maxBytes", g.MaxBytes, "stillOver", out.Over)
	}
	return err
}

// referenced are the manifest digests the OCIPulls and FleetReleases of the namespace name.
func (g *cacheCollector) referenced(ctx context.Context) (map[digest.Digest]bool, error) {
	var pulls v1alpha1.OCIPullList
	if err := g.List(ctx, &pulls, client.InNamespace(g.Namespace)); err != nil {
		return nil, err
	}
	var releases v1alpha1.FleetReleaseList
	if err := g.List(ctx, &releases, client.InNamespace(g.Namespace)); err != nil {
		return nil, err
	}
	return referencedDigests(pulls.Items, releases.Items), nil
}

// referencedDigests are the digests that pulls (spec and status) and releases (status) name.
func referencedDigests(pulls []v1alpha1.OCIPull, releases []v1alpha1.FleetRelease) map[digest.Digest]bool {
	keep := map[digest.Digest]bool{}
	for _, p := range pulls {
		for _, d := range []string{p.Spec.Digest, p.Status.Digest} {
			if d != "" {
				keep[digest.Digest(d)] = true
			}
		}
	}
	for _, r := range releases {
		if r.Status.Digest != "" {
			keep[digest.Digest(r.Status.Digest)] = true
		}
	}
	return keep
}

func (g *cacheCollector) observe() {
	s := g.Cache.Stats()
	CacheBytes.Set(float64(s.Bytes))
	CacheArtifacts.Set(float64(s.Artifacts))
}

// cacheCloser closes the cache when the manager stops, on every agent, leader or not.
type cacheCloser struct{ cache *puller.Cache }

func (c cacheCloser) Start(ctx context.Context) error {
	<-ctx.Done()
	return c.cache.Close()
}

func (cacheCloser) NeedLeaderElection() bool { return false }
