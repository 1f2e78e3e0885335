package controller_test

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestReplicationLeavesChains runs the routing and replication reconcilers as a ServiceAccount
// that holds only the generated ClusterRole. Pulls reported from mirror-eu (eu-01, chain
// mirror-eu, source) and legacy (lab-sandbox) make both OCIReplications. Route eu stops naming
// mirror-eu: no chain has it any more, so its OCIReplication is deleted, while legacy's, still in
// lab-sandbox's chain, is left as it was; and eu-01's pull, which still reports mirror-eu, does
// not bring it back. Route eu names it again: it comes back. Route eu is deleted (eu-01 falls to
// route shadowed, source only): it goes again.
func TestReplicationLeavesChains(t *testing.T) {
	const ws = "replication-gone-ws"
	c, v := replicationHub(t, ws, 0)
	pushed := time.Now().Truncate(time.Second)
	report := func(cluster, registry string) { t.Helper(); reportPull(t, c, ws, cluster, registry, pushed) }
	get := func(name string) (*v1alpha1.OCIReplication, error) {
		var r v1alpha1.OCIReplication
		return &r, c.Get(t.Context(), types.NamespacedName{Namespace: ws, Name: name}, &r)
	}
	present := func(name string) {
		t.Helper()
		testkit.Eventually(t, 10*time.Second, name+"'s OCIReplication with its lag", func() error {
			r, err := get(name)
			if err == nil && r.Status.Measured != 1 {
				err = fmt.Errorf("status %+v", r.Status)
			}
			return err
		})
	}
	gone := func(name string) {
		t.Helper()
		testkit.Eventually(t, 10*time.Second, name+"'s OCIReplication deleted", func() error {
			if _, err := get(name); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
	}
	setEU := func(registries ...string) {
		t.Helper()
		rt := v.route("eu")
		patch := client.MergeFrom(rt.DeepCopy())
		rt.Spec.Registries = registries
		if err := c.Patch(t.Context(), rt, patch); err != nil {
			t.Fatal(err)
		}
	}

	report("eu-01", "mirror-eu")
	report("lab-sandbox", "legacy")
	present("mirror-eu")
	present("legacy")
	legacy, _ := get("legacy")

	setEU("source")
	gone("mirror-eu")
	time.Sleep(3 * time.Second) // eu-01 still reports its pull from mirror-eu
	if _, err := get("mirror-eu"); !apierrors.IsNotFound(err) {
		t.Fatalf("mirror-eu's OCIReplication came back, though no chain has it: %v", err)
	}
	if again, err := get("legacy"); err != nil || again.UID != legacy.UID || again.ResourceVersion != legacy.ResourceVersion {
		t.Fatalf("legacy's OCIReplication, still in lab-sandbox's chain, was touched: %v (%v)", again.ObjectMeta, err)
	}

	setEU("mirror-eu", "source")
	present("mirror-eu")

	if err := c.Delete(t.Context(), v.route("eu")); err != nil {
		t.Fatal(err)
	}
	gone("mirror-eu")
	if _, err := get("legacy"); err != nil {
		t.Fatalf("legacy's OCIReplication: %v", err)
	}
}

// replicationHub seeds workspace ws and runs the routing and replication reconcilers (with
// window; 0 for the default) as a ServiceAccount that holds only the generated ClusterRole,
// until their routes converge.
func replicationHub(t *testing.T, ws string, window time.Duration) (client.Client, hubView) {
	t.Helper()
	h, c, v := seededWorkspace(t, ws)
	cfg := roleConfig(t, h, c, ws+"-fleet-controller-hub", "fleet-controller-"+ws, "kube-system")
	mgr, err := controller.NewHubManager(cfg, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "routing,replication", QPS: 500, Burst: 1000,
		Options: controller.Options{ReplicationWindow: window},
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, mgr)
	v.converged()
	return c, v
}

// reportPull lists on cluster's ClusterOCIStorage, as the pull-status reconciler would, one pull
// of apps/web:v1 Pulled from registry 2 s after the artifact's pushed-at.
func reportPull(t *testing.T, c client.Client, ws, cluster, registry string, pushed time.Time) {
	t.Helper()
	var storage v1alpha1.ClusterOCIStorage
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: ws, Name: cluster}, &storage); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(storage.DeepCopy())
	storage.Status.Pulls = []v1alpha1.ClusterPull{{Work: "pull-web", Name: "web", State: "Pulled",
		Pull: v1alpha1.OCIPullSpec{Workspace: ws, Repository: "apps/web", Tag: "v1"},
		Status: &v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Registry: registry, Digest: "sha256:0123",
			LastSuccess: &metav1.Time{Time: pushed.Add(2 * time.Second)}, PushedAt: &metav1.Time{Time: pushed}, Size: 1234}}}
	if err := c.Status().Patch(t.Context(), &storage, patch); err != nil {
		t.Fatal(err)
	}
}
