// Package replication measures how far behind each registry of a workspace is, from what the
// clusters report about their pulls: pure functions of plain inputs, no client, no clock of its
// own, so that the hub's reconciler writes the same status for the same inputs (nothing in steady
// state) and the provider reads the figures the same way.
//
// An artifact's pushed-at is its manifest's org.opencontainers.image.created annotation, which
// the agents report, or else the earliest successful pull of its digest, from any registry by any
// cluster, that the hub observed (a lower bound of the lag: it was pushed before). A registry's
// lag for an artifact is the time from pushed-at to the first successful pull of the digest from
// that registry by any cluster, as the hub observed it. Both "first" times are kept in the
// status they were written to, so that a later pull (an agent restart pulls again) never moves
// them on. A registry counts an artifact once some cluster asked it for the artifact: it pulled
// from it, waits at it, gave up on it, or pulled from a registry after it in its chain.
package replication

import (
	"cmp"
	"math"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// DefaultWindow is how far back pushed artifacts count.
const DefaultWindow = 24 * time.Hour

// Pull is one pull of a workspace as the hub sees it: the OCIPull status a cluster reported,
// with the chain the cluster pulls through.
type Pull struct {
	Cluster    string
	Chain      []string // the cluster's registries, in the order it tries them
	Repository string
	Status     v1alpha1.OCIPullStatus
}

// asked tells whether the pull asked registry for its artifact.
func (p Pull) asked(registry string) bool {
	st := p.Status
	if st.Registry == registry {
		return true
	}
	for _, f := range st.Failovers {
		if f.Registry == registry {
			return true
		}
	}
	if st.State != v1alpha1.OCIPullPulled {
		return false
	}
	// Pulled from a later registry of the chain: every earlier one was asked and gave up.
	served, at := slices.Index(p.Chain, st.Registry), slices.Index(p.Chain, registry)
	return at >= 0 && served > at
}

// pulledFrom is when the pull last pulled from registry, or nil.
func (p Pull) pulledFrom(registry string) *time.Time {
	if p.Status.State != v1alpha1.OCIPullPulled || p.Status.Registry != registry || p.Status.LastSuccess == nil {
		return nil
	}
	return &p.Status.LastSuccess.Time
}

type key struct{ repository, digest string }

// Registries are the registries the pulls' clusters may pull from, sorted.
func Registries(pulls []Pull) []string {
	var out []string
	for _, p := range pulls {
		out = append(out, p.Chain...)
		if p.Status.Registry != "" {
			out = append(out, p.Status.Registry)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Observe is the status of registry given its previous status (prev, what it recorded so far)
// and the workspace's pulls now: the artifacts pushed within window before now that a cluster
// asked registry for, each with its pushed-at and first pull from registry, and the figures over
// them. next is when the status changes without any new report: when its oldest artifact leaves
// the window (zero when it has none).
func Observe(registry string, prev v1alpha1.OCIReplicationStatus, pulls []Pull, now time.Time, window time.Duration) (st v1alpha1.OCIReplicationStatus, next time.Time) {
	byKey := map[key]*v1alpha1.ReplicatedArtifact{}
	for i := range prev.Artifacts {
		a := prev.Artifacts[i]
		byKey[key{a.Repository, a.Digest}] = &a
	}
	// What the workspace's pulls tell about each digest, whichever registry served it.
	annotated, served := map[key]time.Time{}, map[key]time.Time{}
	for _, p := range pulls {
		k := key{p.Repository, p.Status.Digest}
		if k.digest == "" {
			continue // a tag not resolved yet: nothing to key it by
		}
		if t := p.Status.PushedAt; t != nil {
			annotated[k] = earliest(annotated[k], t.Time)
		}
		if t := p.Status.LastSuccess; t != nil && p.Status.State == v1alpha1.OCIPullPulled {
			served[k] = earliest(served[k], t.Time)
		}
	}
	for _, p := range pulls {
		k := key{p.Repository, p.Status.Digest}
		if k.digest == "" || !p.asked(registry) {
			continue
		}
		a := byKey[k]
		if a == nil {
			a = &v1alpha1.ReplicatedArtifact{Repository: k.repository, Digest: k.digest}
			byKey[k] = a
		}
		if t := p.pulledFrom(registry); t != nil && (a.FirstPulled == nil || t.Before(a.FirstPulled.Time)) {
			a.FirstPulled = &metav1.Time{Time: *t}
		}
	}
	from := now.Add(-window)
	st = v1alpha1.OCIReplicationStatus{Registry: registry, Window: metav1.Duration{Duration: window}}
	for k, a := range byKey {
		switch t, ok := annotated[k]; {
		case ok:
			a.PushedAt, a.PushedAtFrom = metav1.Time{Time: t}, v1alpha1.PushedAtAnnotation
		case a.PushedAtFrom == v1alpha1.PushedAtAnnotation:
			// the annotation was reported before; the pulls that told it are gone
		default:
			t, ok := served[k]
			if a.PushedAtFrom == v1alpha1.PushedAtFirstServed && (!ok || a.PushedAt.Time.Before(t)) {
				t, ok = a.PushedAt.Time, true
			}
			if !ok {
				continue // neither annotated nor pulled anywhere yet: no pushed-at to count from
			}
			a.PushedAt, a.PushedAtFrom = metav1.Time{Time: t}, v1alpha1.PushedAtFirstServed
		}
		if a.PushedAt.Time.Before(from) {
			continue
		}
		a.Lag = nil
		if a.FirstPulled != nil {
			a.Lag = &metav1.Duration{Duration: max(0, a.FirstPulled.Sub(a.PushedAt.Time))}
		}
		st.Artifacts = append(st.Artifacts, *a)
	}
	slices.SortFunc(st.Artifacts, func(a, b v1alpha1.ReplicatedArtifact) int {
		return cmp.Or(b.PushedAt.Compare(a.PushedAt.Time), cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Digest, b.Digest))
	})
	if len(st.Artifacts) > v1alpha1.MaxReplicatedArtifacts {
		st.Artifacts = st.Artifacts[:v1alpha1.MaxReplicatedArtifacts]
	}
	if len(st.Artifacts) == 0 {
		st.Artifacts = nil
		return st, time.Time{}
	}
	var lags []time.Duration
	for _, a := range st.Artifacts {
		if a.Lag != nil {
			lags = append(lags, a.Lag.Duration)
			continue
		}
		st.Waiting++
		if st.OldestWaiting == nil || a.PushedAt.Before(st.OldestWaiting) {
			st.OldestWaiting = a.PushedAt.DeepCopy()
		}
	}
	st.Measured = int32(min(len(lags), math.MaxInt32)) //nolint:gosec // bounded by MaxReplicatedArtifacts
	if len(lags) > 0 {
		slices.Sort(lags)
		st.P50 = &metav1.Duration{Duration: Percentile(lags, 50)}
		st.P95 = &metav1.Duration{Duration: Percentile(lags, 95)}
	}
	return st, st.Artifacts[len(st.Artifacts)-1].PushedAt.Add(window)
}

// Percentile is the p-th percentile of sorted (ascending, not empty) by nearest rank: the
// smallest value that at least p percent of them do not exceed.
func Percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
