package puller

import (
	"time"

	"github.com/opencontainers/go-digest"
)

// What the tests in package puller_test need of the package's insides. They are an external
// test package because they use internal/testbed, which imports this package.

// ErrAttemptTimeout is errAttemptTimeout.
var ErrAttemptTimeout = errAttemptTimeout

// SetOnAttempt replaces the puller's Options.OnAttempt.
func (p *Puller) SetOnAttempt(f func(Attempt)) { p.opts.OnAttempt = f }

// SetCacheClock replaces the clock a cache records last uses with.
func SetCacheClock(c *Cache, now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// Hold makes a pull's hold on the cache: the blobs it finds are kept until the returned func runs.
func Hold(c *Cache, ds ...digest.Digest) (release func()) {
	s := c.session()
	for _, d := range ds {
		s.pin(d)
	}
	return s.release
}
