package controller_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestReplicationWindow runs the routing and replication reconcilers as a ServiceAccount that
// holds only the generated ClusterRole, with a 10 s window. A pull reported on eu-01's
// ClusterOCIStorage (as the pull-status reconciler lists it: Pulled from mirror-eu 2 s after the
// artifact's pushed-at) makes mirror-eu's OCIReplication with a 2 s lag; with no new report,
// the artifact leaves the window when its pushed-at is 10 s old and the figures go, written once;
// then nothing is written.
func TestReplicationWindow(t *testing.T) {
	const ws = "replication-ws"
	c, _ := replicationHub(t, ws, 10*time.Second)
	pushed := time.Now().Truncate(time.Second)
	reportPull(t, c, ws, "eu-01", "mirror-eu", pushed)
	rep := func() (v1alpha1.OCIReplication, error) {
		var r v1alpha1.OCIReplication
		return r, c.Get(t.Context(), types.NamespacedName{Namespace: ws, Name: "mirror-eu"}, &r)
	}
	testkit.Eventually(t, 8*time.Second, "mirror-eu's lag of 2s", func() error {
		r, err := rep()
		if err == nil && (r.Status.Measured != 1 || r.Status.P95 == nil || r.Status.P95.Duration != 2*time.Second || r.Status.Window.Duration != 10*time.Second) {
			err = fmt.Errorf("status %+v", r.Status)
		}
		return err
	})
	var l v1alpha1.OCIReplicationList
	if err := c.List(t.Context(), &l, client.InNamespace(ws)); err != nil || len(l.Items) != 1 {
		t.Fatalf("OCIReplications %v (%v): want mirror-eu's alone (source was not asked)", l.Items, err)
	}
	testkit.Eventually(t, 15*time.Second, "the artifact out of the window", func() error {
		r, err := rep()
		if err == nil && (r.Status.Measured != 0 || r.Status.P95 != nil || len(r.Status.Artifacts) != 0) {
			err = fmt.Errorf("status %+v", r.Status)
		}
		return err
	})
	if left := time.Since(pushed); left < 10*time.Second {
		t.Fatalf("the artifact left the window %v after its push, before the window's 10s", left)
	}
	r, _ := rep()
	time.Sleep(4 * time.Second)
	if again, _ := rep(); again.ResourceVersion != r.ResourceVersion {
		t.Fatalf("written again after the window emptied: %s then %s", r.ResourceVersion, again.ResourceVersion)
	}
}
