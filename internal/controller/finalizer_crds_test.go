package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestFinalizersWhenTheCRDsAreGone removes the ManifestWork and ManagedCluster CRDs from a hub of
// its own while an app, a storage deployment, an app route and a cluster join are being deleted,
// each held by its finalizer, and reconciles each once with a client that finds no such kinds:
// every one goes (a missing kind counts as gone, meta.IsNoMatchError). Before the change, the
// storage deployment, the route and the join returned the no-match error on every reconcile and
// never went.
func TestFinalizersWhenTheCRDsAreGone(t *testing.T) {
	const ws, cluster = "nocrd-ws", "nocrd-01"
	h := testbed.StartT(t)
	ctx := t.Context()
	c, err := client.New(h.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	objMeta := func(name, finalizer string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ws, Name: name, Finalizers: []string{finalizer}}
	}
	objs := []client.Object{
		&v1alpha1.FleetApp{ObjectMeta: objMeta("app", "fleet.umkim.io/app"), Spec: v1alpha1.FleetAppSpec{Chart: "hello", Cluster: cluster, Namespace: "shop"}},
		&storagev1alpha2.StorageSiteDeployment{ObjectMeta: objMeta("storage", "storage.simplyblock.io/hub-deploy"), Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: cluster}},
		&v1alpha1.FleetAppRoute{ObjectMeta: objMeta("route", "fleet.umkim.io/app-route"), Spec: v1alpha1.FleetAppRouteSpec{App: "app", Mode: v1alpha1.RouteSite,
			Host: "app.example.test", Path: "/", Service: v1alpha1.RouteBackend{Name: "app", Port: 80}}},
		&v1alpha1.FleetClusterJoin{ObjectMeta: objMeta("join", "fleet.umkim.io/cluster-join"), Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}},
	}
	for _, o := range append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}}}, objs...) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		if err := c.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := h.Client() // knows CustomResourceDefinitions
	if err != nil {
		t.Fatal(err)
	}
	crds := []string{"manifestworks.work.open-cluster-management.io", "managedclusters.cluster.open-cluster-management.io"}
	for _, name := range crds {
		if err := admin.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	// Where the API server's CRD finalizer is, should it not finish.
	crdStates := func() string {
		var s strings.Builder
		for _, name := range crds {
			var crd apiextensionsv1.CustomResourceDefinition
			err := admin.Get(ctx, client.ObjectKey{Name: name}, &crd)
			fmt.Fprintf(&s, "%s: err=%v deleting=%v finalizers=%v", name, err, crd.DeletionTimestamp, crd.Finalizers)
			for _, cond := range crd.Status.Conditions {
				fmt.Fprintf(&s, " %s=%s(%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
			s.WriteString("\n")
		}
		return s.String()
	}
	// A client made once the hub stopped serving the kinds finds none of them. The API server's own
	// CRD finalizer decides when: about a second here, but it waits up to a minute on instances
	// and its informers back off under load (CI once saw the CRDs served a minute on), so the
	// wait is generous and its failure says where the finalizer is.
	var fresh client.Client
	testkit.Eventually(t, 3*time.Minute, "the hub serves neither ManifestWork nor ManagedCluster", func() error {
		var err error
		if fresh, err = client.New(h.Config, client.Options{Scheme: controller.Scheme()}); err != nil {
			return err
		}
		for _, l := range []client.ObjectList{&workv1.ManifestWorkList{}, &clusterv1.ManagedClusterList{}} {
			if err := fresh.List(ctx, l); !meta.IsNoMatchError(err) {
				return fmt.Errorf("listing %T: %v, want no match", l, err)
			}
		}
		return nil
	}, crdStates)

	reconcilers := []reconcile.Reconciler{
		&controller.AppReconciler{Client: fresh, Reader: fresh},
		&controller.StorageSiteReconciler{Client: fresh, Reader: fresh},
		&controller.AppRouteReconciler{Client: fresh, Reader: fresh},
		&controller.ClusterJoinReconciler{Client: fresh},
	}
	for i, o := range objs {
		key := client.ObjectKeyFromObject(o)
		if _, err := reconcilers[i].Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Errorf("%T %s: %v", o, key, err)
			continue
		}
		err := c.Get(ctx, key, o.DeepCopyObject().(client.Object))
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after one reconcile without the CRDs: %v, want it gone", o, key, err)
		}
	}
}
