package provider

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestAccFaultDestroyOnOfflineCluster destroys apps and a storage deployment on a real fleet whose
// cluster's work agent is gone, through the CLI:
//   - with force_destroy = true, an app and a storage deployment go at once, and destroy warns
//     with what may be left on the cluster (the Helm release; the draft);
//   - without it, while the hub still sees the cluster available, destroy ends at its delete
//     timeout with an error saying what it waits for (the app's finalizer) and what to do
//     (force_destroy);
//   - once the cluster is not available (as OCM marks a cluster whose lease stops), destroy
//     completes after the controller's --orphan-after bound, within its timeout, and warns with
//     what was orphaned.
func TestAccFaultDestroyOnOfflineCluster(t *testing.T) {
	const bound = 5 * time.Second
	fl := startAccFleetWith(t, controller.Options{OrphanAfter: bound}, []string{"routing", "apps", "storage-site"})
	ws, cluster, reg := fl.ws, fl.cluster, fl.registry
	reg.PushChartT(t, "fleet/charts/hello", testbed.HelloChart("hello", "0.1.0"))
	ctx := t.Context()

	app := func(label, force, timeout string) string {
		return fmt.Sprintf(`
resource "fleet_app" %[1]q {
  name          = %[1]q
  workspace     = %[2]q
  chart         = fleet_chart.c.name
  cluster       = %[3]q
  namespace     = "hello"
  release_name  = "rel-%[1]s"
  wait_for      = "deployed"
  %[4]s
  timeouts {
    create = "2m"
    delete = %[5]q
  }
}
`, label, ws, cluster, force, timeout)
	}
	chart := fmt.Sprintf(`
resource "fleet_chart" "c" {
  name       = "hello"
  workspace  = %q
  repository = "charts/hello"
  version    = "0.1.0"
}
`, ws)
	storage := fmt.Sprintf(`
resource "fleet_storage_site_deployment" "s" {
  name          = "site-a"
  workspace     = %q
  cluster       = %q
  draft_name    = "draft-a"
  force_destroy = true
}
`, ws, cluster)
	w := newCLIWorkdir(t)
	w.apply(chart + app("a", "", "20s") + app("b", "force_destroy = true", "1m") + app("c", "", "1m") + storage)
	for _, name := range []string{"a", "b", "c"} {
		var a v1alpha1.FleetApp
		if err := fl.hub.Get(ctx, types.NamespacedName{Namespace: ws, Name: name}, &a); err != nil || a.Status.Phase != v1alpha1.AppDeployed {
			t.Fatalf("app %s: %v, phase %q; want Deployed", name, err, a.Status.Phase)
		}
	}

	// The cluster's work agent goes away: nothing on the cluster confirms a deletion any more.
	if err := fl.spoke.StopAgent(); err != nil {
		t.Fatal(err)
	}
	gone := func(obj client.Object, name string) {
		t.Helper()
		if err := fl.hub.Get(ctx, types.NamespacedName{Namespace: ws, Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after destroy: %v, want not found", obj, name, err)
		}
	}
	orphanWarned := func(step string, diags []cliDiag, kind, name string, parts ...string) {
		t.Helper()
		for _, d := range diags {
			if d.Severity == "warning" && d.Summary == fmt.Sprintf("%s %s/%s went without its cluster's confirmation", kind, ws, name) && containsAll(d.Detail, parts...) {
				return
			}
		}
		t.Errorf("%s: no warning that %s %s went without its cluster, naming %q, among %v", step, kind, name, parts, diags)
	}

	// force_destroy: app b and the storage deployment go at once.
	start := time.Now()
	diags := w.apply(chart + app("a", "", "20s") + app("c", "", "1m"))
	took := time.Since(start)
	t.Logf("force_destroy of an app and a storage deployment on the offline cluster: %v", took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("force_destroy took %v, want well under the 1m delete timeout", took)
	}
	gone(&v1alpha1.FleetApp{}, "b")
	gone(&storagev1alpha2.StorageSiteDeployment{}, "site-a")
	forced := "annotation fleet.umkim.io/orphan-on-delete=true (the provider's force_destroy)"
	orphanWarned("force_destroy", diags, "FleetApp", "b", forced, "Helm release rel-b in namespace hello", fmt.Sprintf("left on cluster %q", cluster))
	orphanWarned("force_destroy", diags, "StorageSiteDeployment", "site-a", forced, "draft draft-a", fmt.Sprintf("stay on cluster %q", cluster))

	// Without it, on a cluster the hub still sees available: destroy ends at its 20s timeout,
	// saying what it waits for and what to do.
	start = time.Now()
	diags, failed := w.diags("destroy", "-auto-approve", "-target=fleet_app.a")
	took = time.Since(start)
	t.Logf("destroy of an app on an offline cluster the hub sees available: failed=%v after %v", failed, took.Round(time.Millisecond))
	if !failed || took > 45*time.Second {
		t.Fatalf("destroy: failed=%v after %v, want it to fail at the 20s delete timeout: %v", failed, took, diags)
	}
	found := false
	for _, d := range diags {
		if d.Severity == "error" && d.Summary == "FleetApp "+ws+"/a is not deleted yet" &&
			containsAll(d.Detail, "waiting for its finalizers fleet.umkim.io/app", "--orphan-after", "set force_destroy = true on the resource, apply, and destroy again") {
			found = true
		}
	}
	if !found {
		t.Errorf("destroy: no error saying what it waits for and what to do, among %v", diags)
	}

	// The hub marks the cluster unavailable, as OCM does once its lease stops (the test bed runs
	// no registration controller): destroy completes after the controller's bound.
	var mc clusterv1.ManagedCluster
	if err := fl.hub.Get(ctx, types.NamespacedName{Name: cluster}, &mc); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
		Reason: "ManagedClusterLeaseUpdateStopped", Message: "Registration agent stopped updating its lease."})
	if err := fl.hub.Status().Update(ctx, &mc); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	diags, failed = w.diags("destroy", "-auto-approve", "-target=fleet_app.c")
	took = time.Since(start)
	t.Logf("destroy of an app on an unavailable cluster (bound %v): failed=%v after %v", bound, failed, took.Round(time.Millisecond))
	if failed || took > time.Minute {
		t.Fatalf("destroy: failed=%v after %v, want it done within its 1m timeout: %v", failed, took, diags)
	}
	gone(&v1alpha1.FleetApp{}, "c")
	orphanWarned("unavailable", diags, "FleetApp", "c", fmt.Sprintf("ManagedCluster %q is not available", cluster), "Helm release rel-c in namespace hello")
	// The rest goes too: app a, whose deletion is older than the bound, and the chart.
	if diags, failed := w.diags("destroy", "-auto-approve"); failed {
		t.Fatalf("the last destroy failed: %v", diags)
	}
	gone(&v1alpha1.FleetApp{}, "a")
}

// containsAll tells whether s contains every part.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
