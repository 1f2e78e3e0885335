package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// setAvailable sets cluster's ManagedClusterConditionAvailable as OCM's hub does.
func setAvailable(t *testing.T, c client.Client, cluster string, s metav1.ConditionStatus, reason string) {
	t.Helper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
	testkit.Eventually(t, converge, "availability of "+cluster, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(mc), mc); err != nil {
			return err
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: s, Reason: reason, Message: "set by the test"})
		return c.Status().Update(t.Context(), mc)
	})
}

// TestStorageShowsClusterNotReporting: a storage deployment whose cluster's ManagedCluster goes
// Available=Unknown (OCM: the lease is not renewed) shows Delivered and Ready
// Unknown/ClusterNotReporting, naming the cluster, with Ready repeating what the site last
// reported; while it stays so, neither the deployment nor its work is written (their
// resourceVersions hold past the deployment's requeue); once the cluster reports again, it clears.
func TestStorageShowsClusterNotReporting(t *testing.T) {
	const ws, cluster, name = "storage-silent", "storage-silent-01", "site"
	_, c := startHub(t)
	ctx := t.Context()
	v := appView{t, c, ws, cluster}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "")
	setAvailable(t, c, cluster, metav1.ConditionTrue, "ManagedClusterAvailable")
	defer runControllers(t, sharedHub.Config, "storage-site")()
	v.create(&storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: cluster, SiteNamespace: "simplyblock", DraftName: "draft"}})
	key := types.NamespacedName{Namespace: ws, Name: name}
	workKey := types.NamespacedName{Namespace: cluster, Name: "sbsd." + ws + "." + name}

	var d storagev1alpha2.StorageSiteDeployment
	is := func(what string, check func() error) {
		t.Helper()
		testkit.Eventually(t, converge, what, func() error {
			if err := c.Get(ctx, key, &d); err != nil {
				return err
			}
			return check()
		})
	}
	// No work agent answers here: the work is written and waits to be applied.
	is("delivered to the hub", func() error {
		if got := condition(d.Status.Conditions, storagev1alpha2.DeliveredCondition); got != "False/"+storagev1alpha2.ReasonWorkPending {
			return fmt.Errorf("Delivered %s", got)
		}
		return c.Get(ctx, workKey, &workv1.ManifestWork{})
	})

	setAvailable(t, c, cluster, metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped")
	is("ClusterNotReporting", func() error {
		for _, typ := range []string{storagev1alpha2.DeliveredCondition, storagev1alpha2.ReadyCondition} {
			if got := condition(d.Status.Conditions, typ); got != "Unknown/"+v1alpha1.ReasonClusterNotReporting {
				return fmt.Errorf("%s %s", typ, got)
			}
		}
		return nil
	})
	ready := meta.FindStatusCondition(d.Status.Conditions, storagev1alpha2.ReadyCondition)
	for _, want := range []string{`cluster "` + cluster + `" has not reported since`, "is Unknown (ManagedClusterLeaseUpdateStopped)",
		"it last reported: " + string(storagev1alpha2.PhasePending) + ": waiting for the site's work agent"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready's message %q lacks %q", ready.Message, want)
		}
	}
	if d.Status.Phase != storagev1alpha2.PhasePending {
		t.Errorf("phase %s, want what the site last reported (Pending)", d.Status.Phase)
	}

	// Settled: nothing is written, past the first requeue of a deployment that is not Online
	// (storageRequeueInProgress, 15 s at most).
	var w workv1.ManifestWork
	if err := c.Get(ctx, workKey, &w); err != nil {
		t.Fatal(err)
	}
	rv, wrv := d.ResourceVersion, w.ResourceVersion
	time.Sleep(16 * time.Second)
	if err := c.Get(ctx, key, &d); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, workKey, &w); err != nil {
		t.Fatal(err)
	}
	if d.ResourceVersion != rv || w.ResourceVersion != wrv {
		t.Errorf("settled for 16 s, yet written: deployment resourceVersion %s → %s, work %s → %s", rv, d.ResourceVersion, wrv, w.ResourceVersion)
	}

	setAvailable(t, c, cluster, metav1.ConditionTrue, "ManagedClusterAvailable")
	is("reporting again", func() error {
		if got := condition(d.Status.Conditions, storagev1alpha2.DeliveredCondition); got != "False/"+storagev1alpha2.ReasonWorkPending {
			return fmt.Errorf("Delivered %s", got)
		}
		if got := condition(d.Status.Conditions, storagev1alpha2.ReadyCondition); strings.HasSuffix(got, v1alpha1.ReasonClusterNotReporting) {
			return fmt.Errorf("Ready %s", got)
		}
		return nil
	})
}
