package sitesim

import (
	"strings"
	"sync"
	"time"
)

// pacer makes each phase the simulator enters last at least its delay, whatever events wake the
// reconciler meanwhile (its own status writes included). It remembers, in memory, when the
// simulator entered an object's phase; a phase it did not enter (e.g. before a restart) has no
// time left.
type pacer struct {
	delay time.Duration
	mu    sync.Mutex
	since map[string]time.Time // key: kind/namespace/name/phase
}

func newPacer(delay time.Duration) *pacer {
	return &pacer{delay: delay, since: map[string]time.Time{}}
}

// enter records that the simulator just wrote phase on the object key names.
func (p *pacer) enter(key, phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since[key+"/"+phase] = time.Now()
}

// left is how long the object stays in phase yet; zero or less means move on.
func (p *pacer) left(key, phase string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.since[key+"/"+phase]
	if !ok {
		return 0
	}
	return p.delay - time.Since(at)
}

// forget drops what the pacer knows of the object key names.
func (p *pacer) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.since {
		if strings.HasPrefix(k, key+"/") {
			delete(p.since, k)
		}
	}
}
