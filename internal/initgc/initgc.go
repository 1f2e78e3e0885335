// Package initgc pauses the garbage collector while the packages of `fleet-controller pull`
// initialise, and Resume turns it back on.
//
// The binary links Kubernetes, Helm and the signature verifiers for its other modes; their
// package init allocates about 8.5 MiB before main runs, which the collector, starting at a
// 4 MiB goal, chases with three or four cycles. A pull is a short-lived process whose start-up
// is on the critical path of every CLI pull, and on a busy machine each cycle's stop-the-world
// phases wait for CPU: measured with 2 cores at load 5, a pull of a 1 KiB artifact took
// 0.10-0.25 s with the collector on during init and 0.07-0.10 s without. The long-running
// modes (agent, hub) keep the collector on from the start: their start-up peak memory matters
// more than 100 ms.
//
// Go initialises, of the packages whose imports are done, the one whose import path sorts
// first; this package imports only the runtime, so it runs before every github.com/u... and
// later package (Kubernetes, Helm, oras, x509 roots), after the few that sort before it.
package initgc

import (
	"os"
	"runtime/debug"
)

// paused is GOGC's percentage (or -1 for GOGC=off) while the collector is paused; ok is false
// when it was not.
var paused, ok = pause()

func pause() (int, bool) {
	if len(os.Args) < 2 || os.Args[1] != "pull" {
		return 0, false
	}
	return debug.SetGCPercent(-1), true
}

// Resume turns the collector back on at the percentage it had (GOGC's), if the package paused
// it. Call it first thing in main.
func Resume() {
	if ok {
		debug.SetGCPercent(paused)
		ok = false
	}
}
