package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
)

func TestAppStatus(t *testing.T) {
	const digest, older = "sha256:new", "sha256:old"
	pull := func(state v1alpha1.OCIPullState, fresh bool) pullwork.Pull {
		return pullwork.Pull{Request: pullwork.Request{Spec: v1alpha1.OCIPullSpec{Repository: "charts/hello", Tag: "0.2.0"}}, Fresh: fresh,
			Status: v1alpha1.OCIPullStatus{State: state, Registry: "mirror-eu", Digest: digest, Reason: "Unauthorized", Message: "401 from mirror-eu"}}
	}
	release := func(phase v1alpha1.ReleasePhase, fresh bool, d string) appwork.Release {
		return appwork.Release{Reported: true, Fresh: fresh, Status: v1alpha1.FleetReleaseStatus{Phase: phase, Revision: 4, Digest: d, Chart: "hello-0.2.0", Message: "helm said so"}}
	}
	for _, tc := range []struct {
		name    string
		rep     appwork.Report
		phase   v1alpha1.AppPhase
		message string
	}{
		{"nothing back", appwork.Report{Pull: pullwork.Pull{Request: pull("", false).Request}}, v1alpha1.AppPending, "waiting for the cluster to report the pull of charts/hello:0.2.0"},
		{"stale pull", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullPulled, false)}, v1alpha1.AppPending, "waiting"},
		{"pulling", appwork.Report{Delivered: true, Pull: pull("Pulling", true)}, v1alpha1.AppPulling, "pulling charts/hello:0.2.0 (Pulling)"},
		{"waiting for the artifact", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullWaitingForArtifact, true)}, v1alpha1.AppWaitingForArtifact, "mirror-eu lacks charts/hello:0.2.0"},
		{"pull failed", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullFailed, true), Release: release(v1alpha1.ReleaseDeployed, true, older)},
			v1alpha1.AppFailed, "401 from mirror-eu"},
		{"release failed", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullPulled, true), Release: release(v1alpha1.ReleaseFailed, true, digest)},
			v1alpha1.AppFailed, "the release failed: helm said so"},
		{"release owned elsewhere", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullPulled, true), Release: release(v1alpha1.ReleaseOwnedElsewhere, true, "")},
			v1alpha1.AppOwnedElsewhere, "the release is left untouched: helm said so"},
		{"pulled, release not reported", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullPulled, true)}, v1alpha1.AppInstalling, "Helm installs it"},
		{"pulled, release behind its generation", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullPulled, true), Release: release(v1alpha1.ReleaseDeployed, false, digest)},
			v1alpha1.AppInstalling, "Helm installs it"},
		{"pulled, the older chart deployed", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullPulled, true), Release: release(v1alpha1.ReleaseDeployed, true, older)},
			v1alpha1.AppInstalling, "Helm installs it"},
		{"deployed", appwork.Report{Delivered: true, Pull: pull(v1alpha1.OCIPullPulled, true), Release: release(v1alpha1.ReleaseDeployed, true, digest)},
			v1alpha1.AppDeployed, "release hello-0.2.0 revision 4 is deployed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.FleetAppStatus{}
			appStatus(st, 3, types.NamespacedName{Namespace: "eu-01", Name: "app.ws.web"}, tc.rep)
			if st.Phase != tc.phase || !strings.Contains(st.Message, tc.message) {
				t.Errorf("phase %s message %q, want %s containing %q", st.Phase, st.Message, tc.phase, tc.message)
			}
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ReadyCondition)
			if ready == nil || ready.Reason != string(tc.phase) || (ready.Status == "True") != (tc.phase == v1alpha1.AppDeployed) || ready.ObservedGeneration != 3 {
				t.Errorf("Ready %+v", ready)
			}
			delivered := meta.FindStatusCondition(st.Conditions, v1alpha1.DeliveredCondition)
			if delivered == nil || (delivered.Status == "True") != tc.rep.Delivered {
				t.Errorf("Delivered %+v", delivered)
			}
			if st.WorkName != "app.ws.web" {
				t.Errorf("workName %q", st.WorkName)
			}
			if tc.rep.Release.Reported && st.Revision != 4 {
				t.Errorf("revision %d, want 4", st.Revision)
			}
			if pulled := tc.rep.Pull.State() == string(v1alpha1.OCIPullPulled); pulled && st.Reason != "" || !pulled && tc.rep.Pull.Fresh && st.Reason != "Unauthorized" {
				t.Errorf("reason %q", st.Reason)
			}
		})
	}
}

// The app shows the drift the agent found for the release of its generation, and none while
// the release is behind (a repair under way), where the agent's last finding is stale.
func TestAppStatusDrift(t *testing.T) {
	found := &v1alpha1.ReleaseDrift{Count: 1, Objects: []v1alpha1.ObjectRef{{Kind: "Deployment", Namespace: "hello", Name: "web"}}}
	pull := pullwork.Pull{Fresh: true, Status: v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Digest: "sha256:d"}}
	for _, tc := range []struct {
		name  string
		fresh bool
		drift *v1alpha1.ReleaseDrift
		want  *v1alpha1.ReleaseDrift
	}{
		{"drifted", true, found, found},
		{"checked, none", true, &v1alpha1.ReleaseDrift{}, &v1alpha1.ReleaseDrift{}},
		{"not checked", true, nil, nil},
		{"release behind its generation", false, found, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.FleetAppStatus{Drift: &v1alpha1.ReleaseDrift{Count: 7}}
			rep := appwork.Report{Delivered: true, Pull: pull, Release: appwork.Release{Reported: true, Fresh: tc.fresh,
				Status: v1alpha1.FleetReleaseStatus{Phase: v1alpha1.ReleaseDeployed, Digest: "sha256:d", Drift: tc.drift}}}
			appStatus(st, 2, types.NamespacedName{Namespace: "eu-01", Name: "app.ws.web"}, rep)
			if !equality.Semantic.DeepEqual(st.Drift, tc.want) {
				t.Errorf("drift %+v, want %+v", st.Drift, tc.want)
			}
		})
	}
}
