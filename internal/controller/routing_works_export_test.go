package controller

import "sync"

// ChainWorkCounts are what the routing built for one workspace's chain works.
type ChainWorkCounts struct {
	Plans     int // reconciles that planned the workspace's works
	Templates int // desired works built, one per distinct chain of a reconcile
	Copies    int // clusters' own copies, one per work written
}

// CountChainWorks counts, until undo, what the routing builds for workspace ws's chain works.
func CountChainWorks(ws string) (counts func() ChainWorkCounts, undo func()) {
	var mu sync.Mutex
	var c ChainWorkCounts
	prev := chainWorkHook
	chainWorkHook = func(event, workspace string) {
		if workspace != ws {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch event {
		case hookPlan:
			c.Plans++
		case hookTemplate:
			c.Templates++
		case hookCopy:
			c.Copies++
		}
	}
	return func() ChainWorkCounts {
			mu.Lock()
			defer mu.Unlock()
			return c
		}, func() {
			chainWorkHook = prev
		}
}
