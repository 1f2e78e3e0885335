package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// presetWork creates, in cluster's namespace, a work of that name carrying one ConfigMap, as a
// controller of another version or another writer would have: labels and annotations as given
// (nil: none, so that fleet-controller's cache does not hold it).
func presetWork(t *testing.T, c client.Client, cluster, name string, labels, annotations map[string]string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name, Labels: labels, Annotations: annotations},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"preset","namespace":"default"}}`)}}}}},
	}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// fleetLabels are the labels fleet-controller puts on a work of ws and component.
func fleetLabels(ws, component string) map[string]string {
	return map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.WorkspaceLabel: ws, hub.ComponentLabel: component}
}

func owner(o string) map[string]string { return map[string]string{hub.OwnerAnnotation: o} }

// untouched fails unless w is still on the hub as it was (same resourceVersion and owner).
func untouched(t *testing.T, c client.Client, w *workv1.ManifestWork) {
	t.Helper()
	var now workv1.ManifestWork
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), &now); err != nil {
		t.Fatalf("work %s/%s: %v", w.Namespace, w.Name, err)
	}
	if now.ResourceVersion != w.ResourceVersion || now.Annotations[hub.OwnerAnnotation] != w.Annotations[hub.OwnerAnnotation] || !now.DeletionTimestamp.IsZero() {
		t.Errorf("work %s/%s written: resourceVersion %s → %s, owner %q → %q, deleting %v", w.Namespace, w.Name, w.ResourceVersion, now.ResourceVersion,
			w.Annotations[hub.OwnerAnnotation], now.Annotations[hub.OwnerAnnotation], !now.DeletionTimestamp.IsZero())
	}
}

// absent fails if a work of that name exists in cluster's namespace.
func absent(t *testing.T, c client.Client, cluster, name string) {
	t.Helper()
	var w workv1.ManifestWork
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: cluster, Name: name}, &w); !apierrors.IsNotFound(err) {
		t.Errorf("work %s/%s: %v, want none", cluster, name, err)
	}
}

// TestAppNamesAreInjective: app web of workspace team-a and app a-web of workspace team, whose
// works were both app-team-a-web, get works of their own on one cluster and, once Deployed, write
// nothing for 15 s. A work already holding an app's name (another app's, or nobody's and not in
// the cache) leaves the app NameTaken naming the holder, and is neither written nor deleted with
// the app. An app's legacy work is adopted (no second work; deleting the app deletes it); a
// legacy work of the same name that another app owns is left alone.
func TestAppNamesAreInjective(t *testing.T) {
	const cluster = "names-app-01"
	_, c := startHub(t)
	ctx := t.Context()
	a, b := appView{t, c, "team-a", cluster}, appView{t, c, "team", cluster}
	for _, v := range []appView{a, b} {
		v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v.ws}},
			&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: v.ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}})
	}
	managedCluster(t, c, a.ws, cluster, "")
	b.create(bindingOf(b.ws, cluster)) // both workspaces may use the cluster
	// One join, of team-a, joins the cluster to a site: both workspaces' apps are delivered.
	a.create(&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: a.ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}})
	// Preset before the reconciler starts, as an upgrade finds them.
	takenByApp := presetWork(t, c, cluster, "app.team.api", fleetLabels("team-a", "app"), owner("team-a/api"))
	takenByNobody := presetWork(t, c, cluster, "app.team.lab", nil, nil)
	legacy := presetWork(t, c, cluster, "app-team-old", fleetLabels("team", "app"), owner("team/old"))
	legacyOfAnother := presetWork(t, c, cluster, "app-team-b-x", fleetLabels("team-b", "app"), owner("team-b/x"))
	defer runControllers(t, sharedHub.Config, "apps")()

	start := time.Now()
	a.create(a.app("web", "hello"))
	b.create(b.app("a-web", "hello"))
	wa, wb := a.work("web", nil), b.work("a-web", nil)
	for _, tc := range []struct {
		w            *workv1.ManifestWork
		owner, rel   string
		releaseNamed string
	}{{wa, "team-a/web", "web", "app.team-a.web"}, {wb, "team/a-web", "a-web", "app.team.a-web"}} {
		pulls, releases, _ := manifests(t, tc.w)
		if tc.w.Annotations[hub.OwnerAnnotation] != tc.owner || pulls[0].Name != tc.releaseNamed || releases[0].Name != tc.releaseNamed || releases[0].Spec.ReleaseName != tc.rel {
			t.Errorf("work %s: owner %q, pull %s, release %s of %s", tc.w.Name, tc.w.Annotations[hub.OwnerAnnotation], pulls[0].Name, releases[0].Name, releases[0].Spec.ReleaseName)
		}
	}
	absent(t, c, cluster, "app-team-a-web")
	release := &v1alpha1.FleetReleaseStatus{ObservedGeneration: 1, Phase: v1alpha1.ReleaseDeployed, Revision: 1, Digest: chartDigest, Chart: "hello-0.1.0"}
	a.report(wa, v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Registry: "mirror-eu", Digest: chartDigest}, release)
	b.report(wb, v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Registry: "mirror-eu", Digest: chartDigest}, release)
	appA := a.appIs("web", v1alpha1.AppDeployed, "Deployed", nil)
	appB := b.appIs("a-web", v1alpha1.AppDeployed, "Deployed", nil)
	t.Logf("both apps Deployed in %v", time.Since(start))

	// Taken names: nothing written, the holder named.
	b.create(b.app("api", "hello"), b.app("lab", "hello"))
	for name, holder := range map[string]string{"api": "FleetApp team-a/api", "lab": "no fleet.umkim.io/owner annotation"} {
		b.appIs(name, v1alpha1.AppPending, v1alpha1.ReasonNameTaken, func(app *v1alpha1.FleetApp) error {
			d := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.DeliveredCondition)
			if d == nil || d.Reason != v1alpha1.ReasonNameTaken || !strings.Contains(d.Message, holder) || !strings.Contains(app.Status.Message, "ManifestWork "+cluster+"/app.team."+name) {
				return fmt.Errorf("Delivered %+v, message %q; want NameTaken naming %s", d, app.Status.Message, holder)
			}
			return nil
		})
	}

	// The legacy work is adopted under all its names; another app's legacy work is left alone.
	b.create(b.app("old", "hello"), b.app("b-x", "hello"))
	testkit.Eventually(t, converge, "legacy work app-team-old adopted", func() error {
		var w workv1.ManifestWork
		if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), &w); err != nil {
			return err
		}
		if len(w.Spec.Workload.Manifests) != 2 {
			return fmt.Errorf("%d manifests", len(w.Spec.Workload.Manifests))
		}
		pulls, releases, _ := manifests(t, &w)
		if pulls[0].Name != "app-team-old" || releases[0].Name != "app-team-old" || releases[0].Spec.ReleaseName != "old" {
			return fmt.Errorf("pull %s release %s", pulls[0].Name, releases[0].Name)
		}
		return nil
	})
	b.appIs("old", v1alpha1.AppPending, "Pending", func(app *v1alpha1.FleetApp) error {
		if app.Status.WorkName != "app-team-old" {
			return fmt.Errorf("workName %q", app.Status.WorkName)
		}
		return nil
	})
	b.work("b-x", nil)

	testkit.Settled(t, c, 15*time.Second, wa, wb, appA, appB, takenByApp, takenByNobody, legacyOfAnother)
	untouched(t, c, takenByApp)
	untouched(t, c, takenByNobody)
	untouched(t, c, legacyOfAnother)
	absent(t, c, cluster, "app.team.old")

	// Deleting apps deletes their works, the adopted one included, never another's.
	for _, name := range []string{"api", "lab", "old"} {
		app := b.app(name, "")
		if err := c.Delete(ctx, app); err != nil {
			t.Fatal(err)
		}
		routeView{b}.gone(app)
	}
	routeView{b}.gone(legacy)
	untouched(t, c, takenByApp)
	untouched(t, c, takenByNobody)
	t.Logf("done in %v", time.Since(start))
}

// TestRouteNamesAreInjective: a route's work of the legacy name is replaced by its injective one;
// a work already holding a route's name (another route's) leaves it NameTaken, untouched.
func TestRouteNamesAreInjective(t *testing.T) {
	const ws, cluster = "names-routes", "names-route-01"
	_, c := startHub(t)
	v := routeView{appView{t, c, ws, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "https://192.0.2.30:6443")
	legacy := presetWork(t, c, cluster, "route-"+ws+"-web", fleetLabels(ws, controller.RouteComponent), owner(ws+"/web"))
	taken := presetWork(t, c, cluster, "route."+ws+".api", fleetLabels("other", controller.RouteComponent), owner("other/api"))
	defer runControllers(t, sharedHub.Config, "app-routes")()

	v.create(v.app("web", "hello"), v.app("api", "hello"),
		&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "berlin"}, Spec: siteSpec()},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster},
			Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin", Edge: &v1alpha1.ClusterJoinEdge{IngressID: "wan"}}},
		v.route("web", "web", v1alpha1.RouteSite, "web.names.example.com", nil),
		v.route("api", "api", v1alpha1.RouteSite, "api.names.example.com", nil))
	v.routeIs("web", "False/WorkPending", cluster+"/route."+ws+".web", "http://web.names.example.com/")
	v.applied("web")
	v.routeIs("web", "True/Published", cluster+"/route."+ws+".web", "http://web.names.example.com/")
	if ing := v.ingress("web"); ing.Name != "route."+ws+".web" {
		t.Errorf("ingress %s", ing.Name)
	}
	v.gone(legacy)
	v.routeIs("api", "False/NameTaken", "", "", "ManifestWork "+cluster+"/route."+ws+".api", "FleetAppRoute other/api")
	untouched(t, c, taken)

	route := v.route("api", "", "", "", nil)
	if err := c.Delete(t.Context(), route); err != nil {
		t.Fatal(err)
	}
	v.gone(route)
	untouched(t, c, taken)
}

// TestStorageNamesAreInjective: a deployment's legacy work (which named it by labels only) is
// replaced by sbsd.<namespace>.<name> carrying the owner annotation; a legacy work of the same
// name that another deployment owns is left alone; a work already holding a deployment's name
// leaves it NameTaken, untouched, also when the deployment is deleted.
func TestStorageNamesAreInjective(t *testing.T) {
	const ns, cluster = "names-storage", "names-site-01"
	_, c := startHub(t)
	ctx := t.Context()
	v := routeView{appView{t, c, ns, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	managedCluster(t, c, ns, cluster, "")
	storageLabels := func(namespace, name string) map[string]string {
		return map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.ComponentLabel: storagework.Component,
			storagework.DeploymentNamespaceLabel: namespace, storagework.DeploymentNameLabel: name}
	}
	legacy := presetWork(t, c, cluster, "sbsd-"+ns+"-site-a", storageLabels(ns, "site-a"), nil)
	legacyOfAnother := presetWork(t, c, cluster, "sbsd-"+ns+"-site-c", storageLabels("names", "storage-site-c"), nil)
	taken := presetWork(t, c, cluster, "sbsd."+ns+".site-b", storageLabels("other", "site-b"), owner("other/site-b"))
	defer runControllers(t, sharedHub.Config, "storage-site")()

	deployment := func(name string) *storagev1alpha2.StorageSiteDeployment {
		return &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: cluster, Discover: storagev1alpha2.DiscoverSpec{NodeSelector: map[string]string{"pool": "good"}}}}
	}
	v.create(deployment("site-a"), deployment("site-b"), deployment("site-c"))
	for _, name := range []string{"site-a", "site-c"} {
		testkit.Eventually(t, converge, "work of "+name, func() error {
			var w workv1.ManifestWork
			if err := c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "sbsd." + ns + "." + name}, &w); err != nil {
				return err
			}
			if w.Annotations[hub.OwnerAnnotation] != ns+"/"+name || w.Labels[storagework.DeploymentNameLabel] != name {
				return fmt.Errorf("annotations %v labels %v", w.Annotations, w.Labels)
			}
			return nil
		})
	}
	v.gone(legacy)
	testkit.Eventually(t, converge, "site-b NameTaken", func() error {
		var d storagev1alpha2.StorageSiteDeployment
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "site-b"}, &d); err != nil {
			return err
		}
		for _, typ := range []string{storagev1alpha2.DeliveredCondition, storagev1alpha2.ReadyCondition} {
			cond := meta.FindStatusCondition(d.Status.Conditions, typ)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonNameTaken || !strings.Contains(cond.Message, "StorageSiteDeployment other/site-b") {
				return fmt.Errorf("%s %+v", typ, cond)
			}
		}
		if d.Status.WorkName != "" {
			return fmt.Errorf("workName %q", d.Status.WorkName)
		}
		return nil
	})
	testkit.Settled(t, c, 5*time.Second, taken, legacyOfAnother)
	untouched(t, c, taken)
	untouched(t, c, legacyOfAnother)

	d := deployment("site-b")
	if err := c.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	v.gone(d)
	untouched(t, c, taken)
}
