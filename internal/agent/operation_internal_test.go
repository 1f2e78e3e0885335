package agent

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	"k8s.io/apimachinery/pkg/types"

	"github.com/go-logr/logr"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// recoverPending on Helm's in-memory storage: a revision left pending by a dead operation is
// marked failed, then the release is rolled back to its last deployed revision, or uninstalled
// when none was deployed; a pending revision no Lease recorded waits for the Helm timeout; a
// release that is not pending is left as it is.
func TestRecoverPending(t *testing.T) {
	chrt, err := loader.LoadArchive(bytes.NewReader(testbed.HelloChart("hello", "0.1.0")))
	if err != nil {
		t.Fatal(err)
	}
	dead := &operation{previous: "agent-0_dead"}
	for _, tc := range []struct {
		name string
		// history: the statuses of the revisions before the recovery, the last one pending.
		history []release.Status
		op      *operation
		age     time.Duration
		want    []release.Status // after; nil: no history left
		busy    bool
	}{
		{"install interrupted", []release.Status{release.StatusPendingInstall}, dead, 0, nil, false},
		{"upgrade interrupted", []release.Status{release.StatusDeployed, release.StatusPendingUpgrade}, dead, 0,
			[]release.Status{release.StatusSuperseded, release.StatusFailed, release.StatusDeployed}, false},
		{"rollback interrupted", []release.Status{release.StatusDeployed, release.StatusFailed, release.StatusPendingRollback}, dead, 0,
			[]release.Status{release.StatusSuperseded, release.StatusFailed, release.StatusFailed, release.StatusDeployed}, false},
		{"upgrade of a failed install interrupted", []release.Status{release.StatusFailed, release.StatusPendingUpgrade}, dead, 0, nil, false},
		{"not pending", []release.Status{release.StatusDeployed}, dead, 0, []release.Status{release.StatusDeployed}, false},
		{"pending, no Lease, recent", []release.Status{release.StatusDeployed, release.StatusPendingUpgrade}, &operation{absent: true}, time.Minute,
			[]release.Status{release.StatusDeployed, release.StatusPendingUpgrade}, true},
		{"pending, no Lease, past the Helm timeout", []release.Status{release.StatusDeployed, release.StatusPendingUpgrade}, &operation{absent: true}, 6 * time.Minute,
			[]release.Status{release.StatusSuperseded, release.StatusFailed, release.StatusDeployed}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := driver.NewMemory()
			mem.SetNamespace("apps")
			cfg := &action.Configuration{Releases: storage.Init(mem), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard},
				Capabilities: chartutil.DefaultCapabilities, Log: func(string, ...any) {}}
			var last *release.Release
			for i, status := range tc.history {
				last = &release.Release{Name: "web", Namespace: "apps", Version: i + 1, Chart: chrt, Config: map[string]any{},
					Info: &release.Info{Status: status, LastDeployed: helmtime.Time{Time: time.Now().Add(-tc.age)}}}
				if err := cfg.Releases.Create(last); err != nil {
					t.Fatal(err)
				}
			}
			r := &FleetReleaseReconciler{Timeout: 5 * time.Minute}
			rel := &v1alpha1.FleetRelease{Spec: v1alpha1.FleetReleaseSpec{ReleaseName: "web", Namespace: "apps"}}
			got, err := r.recoverPending(cfg, rel, last, tc.op, logr.Discard())
			if busy := errors.As(err, new(busyError)); busy != tc.busy || err != nil && !busy {
				t.Fatalf("err = %v; want busy %v", err, tc.busy)
			}
			history, _ := cfg.Releases.History("web")
			slices.SortFunc(history, func(a, b *release.Release) int { return a.Version - b.Version })
			var statuses []release.Status
			for _, h := range history {
				statuses = append(statuses, h.Info.Status)
			}
			if !slices.Equal(statuses, tc.want) {
				t.Errorf("history after: %v, want %v", statuses, tc.want)
			}
			if !tc.busy && len(tc.want) > 0 && (got == nil || got.Version != len(tc.want)) {
				t.Errorf("returned revision %v, want the last one, %d", got, len(tc.want))
			}
			if !tc.busy && tc.want == nil && got != nil {
				t.Errorf("returned revision %d after an uninstall, want none", got.Version)
			}
		})
	}
}

// The back-off per release: delays double from Initial to Max per failure of the same inputs,
// start over for new inputs and after a success; until due, the release waits.
func TestReleaseBackoff(t *testing.T) {
	r := &FleetReleaseReconciler{Backoff: puller.Backoff{Initial: time.Second, Max: 8 * time.Second, Jitter: func() float64 { return 0.999 }}}
	key := types.NamespacedName{Namespace: "fleet-system", Name: "web"}
	var delays []time.Duration
	for range 6 {
		delays = append(delays, r.recordFailure(key, "1/sha256:a/v").Round(100*time.Millisecond))
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}; !slices.Equal(delays, want) {
		t.Errorf("delays %v, want %v", delays, want)
	}
	if !r.retrying(key, "1/sha256:a/v") || r.backingOff(key, "1/sha256:a/v") < 7*time.Second {
		t.Errorf("after 6 failures: retrying %v, waiting %s; want true, about 8 s", r.retrying(key, "1/sha256:a/v"), r.backingOff(key, "1/sha256:a/v"))
	}
	if r.retrying(key, "2/sha256:a/v") || r.backingOff(key, "2/sha256:a/v") != 0 {
		t.Error("a new generation waits for the old one's back-off")
	}
	if d := r.recordFailure(key, "2/sha256:a/v").Round(100 * time.Millisecond); d != time.Second {
		t.Errorf("first delay for new inputs: %s, want 1s", d)
	}
	r.forgetFailures(key)
	if r.retrying(key, "2/sha256:a/v") || r.backingOff(key, "2/sha256:a/v") != 0 {
		t.Error("a release that deployed still backs off")
	}
	base := &FleetReleaseReconciler{fixedRetry: true}
	if d := base.recordFailure(key, "x"); d != baselineRetry || base.retrying(key, "x") {
		t.Errorf("baseline: delay %s, retrying %v; want %s, false", d, base.retrying(key, "x"), baselineRetry)
	}
}
