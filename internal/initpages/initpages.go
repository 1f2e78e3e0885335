// Package initpages keeps the agent's resident set to what it uses while it starts: the pages
// of the binary that the packages' init and the manager's set-up touch once.
//
// The one binary links Helm, Kubernetes' clients and the signature verifiers for all its
// modes. Their package init touches, in 64 KiB fault-around windows and whole large folios
// (Linux maps every page of a page-cache folio it faults, up to 2 MiB, since 6.18), about
// 35-46 MiB of the binary's code, type data and pclntab; the agent uses a few MiB of them
// afterwards. In the agent mode, a goroutine started here, before those packages initialise,
// watches the process's resident file pages and, each time they pass pagerLimit, hands the
// binary's clean read-only pages back (Release); the agent stops it (Stop) once it released
// them for good, after its caches synced. What runs next faults back, from the page cache, the
// pages it touches: the pages stay cached and shared, only this process's mappings of them go.
//
// Go initialises, of the packages whose imports are done, the one whose import path sorts
// first; this package imports only the standard library, so it runs before every
// github.com/u... and later package (Kubernetes, Helm, oras).
package initpages

import (
	"os"
	"sync"
	"time"
)

const (
	// pagerLimit is the resident file-backed memory past which the pager releases the
	// binary's pages: the start-up peak is about this plus the heap (9 MiB at the end of
	// package init) plus what is touched within one pagerPeriod. Measured on `agent --help`
	// (2 cores, load 20-30): 8 MiB cost 50 ms of CPU more than no pager and 12 MiB 16-30 ms,
	// with about the same peak, 29-36 MiB.
	pagerLimit = 12 << 20
	// pagerPeriod is how often the pager reads the resident size (/proc/self/statm) during the
	// first pagerFast of the process, package init and the manager's set-up, where the
	// resident size grows by about 0.5 MiB per millisecond; pagerSlowPeriod is how often
	// afterwards, until Stop.
	pagerPeriod     = 2 * time.Millisecond
	pagerFast       = time.Second
	pagerSlowPeriod = 50 * time.Millisecond
)

var pager = startPager(os.Args)

// startPager starts the pager when the binary runs in the agent mode.
func startPager(args []string) *pagerState {
	if len(args) < 2 || args[1] != "agent" {
		return nil
	}
	p := &pagerState{stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(pagerLimit, pagerPeriod, pagerFast, pagerSlowPeriod)
	return p
}

type pagerState struct {
	once       sync.Once
	stop, done chan struct{}
	// releases counts the pager's releases, for the tests.
	releases int
}

// Stop stops the pager, if it runs, and waits for it. It is safe to call more than once and in
// every mode.
func Stop() {
	if pager != nil {
		pager.once.Do(func() { close(pager.stop) })
		<-pager.done
	}
}
