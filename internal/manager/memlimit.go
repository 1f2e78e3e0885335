package manager

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
)

// The Go collector lets the heap grow to twice what is live before it collects (GOGC=100),
// whatever the container's memory limit; a controller whose cache is large, decoding a burst of
// objects, can then reach its limit and be killed with most of its heap garbage. The chart
// passes the container's memory limit in MemoryLimitEnv (a resourceFieldRef of limits.memory,
// in bytes), and the modes set the collector's soft limit (GOMEMLIMIT) to MemoryLimitShare of
// it: below it the collector works as usual, near it the collector runs more often, and what is
// left of the container's limit holds what the soft limit does not count (the binary's pages).

// MemoryLimitEnv is the environment variable that carries the container's memory limit in bytes.
const MemoryLimitEnv = "FLEET_MEMORY_LIMIT"

// MemoryLimitShare is the share of the container's memory limit the collector's soft limit is
// set to.
const MemoryLimitShare = 0.9

// SetMemoryLimit sets the collector's soft limit to MemoryLimitShare of limit bytes and returns
// it; it leaves the soft limit as it is, and returns 0, when limit is 0 or GOMEMLIMIT is set
// (the operator's own setting wins).
func SetMemoryLimit(limit int64) int64 {
	if limit <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	soft := int64(float64(limit) * MemoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// SetMemoryLimitFromEnv is SetMemoryLimit of MemoryLimitEnv's value; unset is no limit.
func SetMemoryLimitFromEnv() (int64, error) {
	v := os.Getenv(MemoryLimitEnv)
	if v == "" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(v, 10, 64)
	if err != nil || limit < 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes (a resourceFieldRef of limits.memory)", MemoryLimitEnv, v)
	}
	return SetMemoryLimit(limit), nil
}

// SetGCPercent sets the collector's GOGC to percent, unless GOGC is in the environment (the
// operator's own setting wins), and returns the percentage in effect (-1: off).
func SetGCPercent(percent int) int {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}
