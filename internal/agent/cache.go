package agent

import (
	"context"
	"errors"
	"fmt"
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

// cacheLockRetry is how often an agent that leads asks again for a cache another process
// (the previous leader, going) still holds.
const cacheLockRetry = time.Second

// LeaderCache is the agent's cache as the leader opens it: agents of one cluster may share a
// cache volume (a ReadWriteMany claim), and only the agent that pulls may open it, since opening
// removes what a crash left. The reconcilers, which run on the leader only, wait for it.
type LeaderCache struct {
	dir   string
	ready chan struct{}
	cache *puller.Cache
	err   error
}

// NewLeaderCache returns the cache in dir, to be opened by the leader's cacheCollector.
func NewLeaderCache(dir string) *LeaderCache {
	return &LeaderCache{dir: dir, ready: make(chan struct{})}
}

// Get waits until the cache is open and returns it.
func (l *LeaderCache) Get(ctx context.Context) (*puller.Cache, error) {
	select {
	case <-l.ready:
		return l.cache, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// open opens the cache, waiting while another process holds it, and publishes it.
func (l *LeaderCache) open(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("cache")
	for waited := false; ; waited = true {
		c, err := puller.OpenCache(l.dir)
		if errors.Is(err, puller.ErrCacheLocked) {
			if !waited {
				log.Info("waiting for the cache, which another process holds", "cacheDir", l.dir)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(cacheLockRetry):
				continue
			}
		}
		l.cache, l.err = c, err
		close(l.ready)
		if err == nil && !c.Opened.Clean() {
			log.Info("cache repaired on opening", "cacheDir", l.dir, "recovery", c.Opened)
		}
		return err
	}
}

// cacheCollector opens the cache once the agent leads, closes it when the agent stops, and
// keeps it under MaxBytes: after every pull and every minute it removes the artifacts that no
// OCIPull (by spec or status digest) and no FleetRelease (by the digest it deployed) of the
// agent's namespace references, least recently used first. It also keeps the cache's size
// metrics.
type cacheCollector struct {
	client.Reader
	Namespace string
	Cache     *LeaderCache
	MaxBytes  int64
	MinAge    time.Duration
}

// Start runs until ctx ends, on the leader only, which is the agent that pulls.
func (g *cacheCollector) Start(ctx context.Context) error {
	if err := g.Cache.open(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("--cache-dir: %w", err)
	}
	oci := g.Cache.cache
	defer oci.Close()
	log := ctrl.LoggerFrom(ctx).WithName("cache")
	tick := time.NewTicker(cacheCollectEvery)
	defer tick.Stop()
	for {
		if err := g.collect(ctx, oci); err != nil && ctx.Err() == nil {
			log.Error(err, "collecting the cache's garbage")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-oci.Changed():
		case <-tick.C:
		}
	}
}

// collect runs one collection and updates the metrics.
func (g *cacheCollector) collect(ctx context.Context, oci *puller.Cache) error {
	defer observeCache(oci)
	if g.MaxBytes <= 0 || oci.Stats().Bytes <= g.MaxBytes {
		return nil
	}
	keep, err := g.referenced(ctx)
	if err != nil {
		return err
	}
	out, err := oci.Collect(g.MaxBytes, g.MinAge, func(d digest.Digest) bool { return keep[d] })
	CacheEvictions.Add(float64(len(out.Artifacts)))
	if len(out.Artifacts) > 0 || out.Bytes > 0 || out.Over {
		s := oci.Stats()
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

// observeCache sets the cache's size metrics.
func observeCache(oci *puller.Cache) {
	s := oci.Stats()
	CacheBytes.Set(float64(s.Bytes))
	CacheArtifacts.Set(float64(s.Artifacts))
}
