package controller

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
)

func TestStorageStatus(t *testing.T) {
	drafted := storagework.Draft{Exists: true, Phase: "Draft", NodeRefs: []string{"w1", "w2"}}
	approvedDraft := storagework.Draft{Exists: true, Phase: "Expanding", Approved: true, NodeRefs: []string{"w1", "w2"}, ClusterRef: "sc"}
	for _, tc := range []struct {
		name     string
		approved bool
		rep      storagework.Report
		phase    storagev1alpha2.Phase
		// want is the status of each condition: Delivered, Discovered, Approved, Ready, as
		// "True"/"False" and its reason.
		want    [4]string
		message string
	}{
		{"nothing back yet", false, storagework.Report{}, storagev1alpha2.PhasePending,
			[4]string{"False WorkPending", "False WaitingForSite", "False NotApproved", "False WaitingForSite"}, "waiting for the site's work agent"},
		{"discovery running", false, storagework.Report{Delivered: true, Run: storagework.Run{Name: "run", Phase: "Probing"}}, storagev1alpha2.PhaseDiscovering,
			[4]string{"True WorkApplied", "False WaitingForSite", "False NotApproved", "False WaitingForSite"}, "discovery run runs on the site (Probing)"},
		{"draft names nodes", false, storagework.Report{Delivered: true, Draft: drafted}, storagev1alpha2.PhaseDrafted,
			[4]string{"True WorkApplied", "True DraftHasNodes", "False NotApproved", "False WaitingForSite"}, "names 2 nodes"},
		{"draft with omitted parts", false, storagework.Report{Delivered: true, Draft: storagework.Draft{Exists: true, Phase: "Draft", NodeRefs: []string{"w1"},
			Omitted: []string{"nodeSets[0].groups[1].workers"}}}, storagev1alpha2.PhaseDrafted,
			[4]string{"True WorkApplied", "True DraftHasNodes", "False NotApproved", "False WaitingForSite"}, "names 1 nodes"},
		{"approved, not on the draft yet", true, storagework.Report{Delivered: true, Draft: drafted}, storagev1alpha2.PhaseDeploying,
			[4]string{"True WorkApplied", "True DraftHasNodes", "False ApprovalDelivered", "False Deploying"}, "approved and expanding"},
		{"expanding", true, storagework.Report{Delivered: true, Draft: approvedDraft}, storagev1alpha2.PhaseDeploying,
			[4]string{"True WorkApplied", "True DraftHasNodes", "True DraftApproved", "False Deploying"}, "approved and expanding"},
		{"online", true, storagework.Report{Delivered: true, Draft: approvedDraft, Storage: storagework.Storage{Name: "sc", Phase: "Online", UUID: "u-1", Pool: "p",
			Nodes: []storagev1alpha2.StorageNodeStatus{{Name: "w1", Phase: "Online"}}}}, storagev1alpha2.PhaseOnline,
			[4]string{"True WorkApplied", "True DraftHasNodes", "True DraftApproved", "True Online"}, "uuid u-1, pool p"},
		{"draft failed", false, storagework.Report{Delivered: true, Draft: storagework.Draft{Exists: true, Phase: "Failed", Message: "node w2: no NVMe"}},
			storagev1alpha2.PhaseFailed, [4]string{"True WorkApplied", "False DraftFailed", "False NotApproved", "False DraftFailed"}, "node w2: no NVMe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Name: "site-a", Namespace: "storage", Generation: 2},
				Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: "eu-01", DraftName: "site-draft", Approved: tc.approved}}
			st := storageStatus(d, tc.rep, "sbsd.storage.site-a")
			if st.Phase != tc.phase || !strings.Contains(st.Message, tc.message) {
				t.Errorf("phase %s message %q, want %s containing %q", st.Phase, st.Message, tc.phase, tc.message)
			}
			for i, typ := range []string{storagev1alpha2.DeliveredCondition, storagev1alpha2.DiscoveredCondition, storagev1alpha2.ApprovedCondition, storagev1alpha2.ReadyCondition} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil || string(c.Status)+" "+c.Reason != tc.want[i] || c.ObservedGeneration != 2 {
					t.Errorf("%s: %+v, want %s", typ, c, tc.want[i])
				}
			}
			if st.ObservedGeneration != 2 || st.WorkName != "sbsd.storage.site-a" {
				t.Errorf("observedGeneration %d work %q", st.ObservedGeneration, st.WorkName)
			}
			if (st.Draft != nil) != tc.rep.Draft.Exists || (st.StorageCluster != nil) != (tc.rep.Storage.Name != "") {
				t.Errorf("draft %+v storage %+v", st.Draft, st.StorageCluster)
			}
			if st.Draft != nil && (len(st.Draft.NodeRefs) != len(tc.rep.Draft.NodeRefs) || !slices.Equal(st.Draft.Omitted, tc.rep.Draft.Omitted)) {
				t.Errorf("draft nodes %v omitted %v", st.Draft.NodeRefs, st.Draft.Omitted)
			}
			if c := meta.FindStatusCondition(st.Conditions, storagev1alpha2.DiscoveredCondition); len(tc.rep.Draft.Omitted) > 0 &&
				!strings.Contains(c.Message, "status.draft.omitted): "+tc.rep.Draft.Omitted[0]) {
				t.Errorf("Discovered message %q does not name the omitted %v", c.Message, tc.rep.Draft.Omitted)
			}
			if tc.phase == storagev1alpha2.PhaseOnline && (st.StorageCluster.UUID != "u-1" || st.StorageCluster.Pool != "p" || len(st.StorageCluster.Nodes) != 1) {
				t.Errorf("storage cluster %+v", st.StorageCluster)
			}
		})
	}
}
