package agent

import (
	"errors"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// TestProbeStatusWritesOnlyOnChange drives probeStatus through a day of probes every 2 minutes
// and counts the writes (statuses that differ from the one before): one at the start, one per
// change of a registry's state, and one per refresh bound while nothing changes.
func TestProbeStatusWritesOnlyOnChange(t *testing.T) {
	const refresh = 15 * time.Minute
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	up := []puller.ProbeResult{{Registry: "harbor-apac"}, {Registry: "harbor-central"}}
	const downErr = "dial tcp 10.0.0.1:443: connect: connection refused"
	var cur v1alpha1.RegistryProbeStatus
	writes := 0
	var downSince time.Time
	for i := 0; i < 24*30; i++ { // 24 h of 2-minute probes
		now := start.Add(time.Duration(i) * 2 * time.Minute)
		res := up
		if i >= 100 && i < 130 { // down for an hour
			// Each probe's error may word itself differently: that alone is no change.
			res = []puller.ProbeResult{{Registry: "harbor-apac", Class: puller.Unreachable, Err: errors.New(downErr + string(rune('a'+i%3)))}, {Registry: "harbor-central"}}
		}
		next := probeStatus(1, cur, res, now, refresh)
		if next.ProbedAt == nil || now.Sub(next.ProbedAt.Time) >= refresh {
			t.Fatalf("probe %d: probedAt %v at %s, want within %s", i, next.ProbedAt, now, refresh)
		}
		if !sameStatus(cur, next) {
			writes++
		}
		if i == 100 {
			downSince = now
			if next.Results != "harbor-apac=Unreachable,harbor-central=Reachable" || next.Registries[0].Message == "" {
				t.Fatalf("probe %d: %+v", i, next)
			}
		}
		if i > 100 && i < 130 && !next.Registries[0].Since.Time.Equal(downSince) {
			t.Fatalf("probe %d: since %s, want %s (unchanged while down)", i, next.Registries[0].Since, downSince)
		}
		cur = next
	}
	// 1 first + 2 changes + refreshes: with 2-minute probes a 15-minute bound is reached every
	// 16 minutes, 90 times in 24 h, less the ones a change reset.
	if writes < 85 || writes > 95 {
		t.Fatalf("%d writes in 24 h of 2-minute probes, want about 91 (one per refresh and per change), not 720", writes)
	}
	t.Logf("%d writes for 720 probes", writes)
}

func sameStatus(a, b v1alpha1.RegistryProbeStatus) bool {
	if a.Results != b.Results || a.ObservedGeneration != b.ObservedGeneration || (a.ProbedAt == nil) != (b.ProbedAt == nil) ||
		a.ProbedAt != nil && !a.ProbedAt.Equal(b.ProbedAt) || len(a.Registries) != len(b.Registries) {
		return false
	}
	for i := range a.Registries {
		if a.Registries[i].Message != b.Registries[i].Message || !a.Registries[i].Since.Equal(b.Registries[i].Since) {
			return false
		}
	}
	return true
}
