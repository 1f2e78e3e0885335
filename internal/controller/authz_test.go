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
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestWorkspaceAuthorization: three workspaces, authz-a and authz-b bound to the set authz-edge
// and authz-c bound to none of the sets that hold its cluster — only to a label-selector set
// (fleet.site=berlin) that its own join's labels would pull the cluster into. Authz-c's join
// labels nothing and its app, route and storage request write no ManifestWork; all four are
// NotBound, naming the set to bind. Binding authz-edge in authz-c makes them proceed. In the
// bound workspaces, a join leaves a hand-set label value alone (LabelConflict), a second
// workspace's join of the same cluster is refused, and deleting the first removes only what it
// set.
func TestWorkspaceAuthorization(t *testing.T) {
	const set, selSet, c1, c2 = "authz-edge", "authz-berlin", "authz-01", "authz-02"
	_, c := startHub(t)
	ctx := t.Context()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "authz-a"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "authz-b"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "authz-c"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c1}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c2}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: selSet}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.SiteLabel: "berlin"}}}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c1, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set, "team": "retail"}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c2, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set, v1alpha1.SiteLabel: "paris"}}},
		bindingOf("authz-a", set), bindingOf("authz-b", set), bindingOf("authz-c", selSet),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	defer runControllers(t, sharedHub.Config, "cluster-joins,apps,app-routes,storage-site")()
	defer cleanJoins(t, c, "authz-c")
	defer cleanJoins(t, c, "authz-b")
	defer cleanJoins(t, c, "authz-a")

	start := time.Now()
	cv := siteView{t, c, "authz-c"}
	av := routeView{appView{t, c, "authz-c", c1}}
	sd := &storagev1alpha2.StorageSiteDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "authz-c", Name: "sd"},
		Spec: storagev1alpha2.StorageSiteDeploymentSpec{Cluster: c1}}
	cv.create(cv.site("berlin", siteSpec()), cv.join("j", c1, "berlin", "wan", "gpu"),
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: "authz-c", Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		av.app("web", "hello"), av.route("web", "web", v1alpha1.RouteSite, "authz.example.com", nil), sd)

	notBound := "cluster authz-01 is in no ManagedClusterSet bound to workspace authz-c: bind one of its sets (authz-edge) with a ManagedClusterSetBinding in authz-c"
	cv.joinCondition("j", v1alpha1.JoinedCondition, "False/NotBound", notBound)
	cv.joinCondition("j", v1alpha1.ReadyCondition, "False/NotBound", notBound)
	av.appIs("web", v1alpha1.AppPending, "NotBound", func(a *v1alpha1.FleetApp) error {
		if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.DeliveredCondition); c == nil || c.Reason != v1alpha1.ReasonNotBound || c.Message != notBound {
			return fmt.Errorf("Delivered %+v", c)
		}
		return nil
	})
	av.routeIs("web", "False/NotBound", "", "", notBound)
	storageIs(t, c, "authz-c", "sd", "False/NotBound", notBound)
	// Nothing was written for the cluster: no label, no annotation, no work of authz-c.
	var mc clusterv1.ManagedCluster
	if err := c.Get(ctx, types.NamespacedName{Name: c1}, &mc); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(mc.Labels) != fmt.Sprint(map[string]string{clusterv1beta2.ClusterSetLabel: set, "team": "retail"}) || len(mc.Annotations) != 0 {
		t.Errorf("unbound join changed cluster %s: labels %v annotations %v", c1, mc.Labels, mc.Annotations)
	}
	worksOf := func(ws string) []string {
		var works workv1.ManifestWorkList
		if err := c.List(ctx, &works, client.InNamespace(c1), client.MatchingLabels{hub.WorkspaceLabel: ws}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, w := range works.Items {
			names = append(names, w.Name)
		}
		return names
	}
	if got := worksOf("authz-c"); len(got) != 0 {
		t.Errorf("unbound workspace has works in %s: %v", c1, got)
	}
	var storageWork workv1.ManifestWork
	if err := c.Get(ctx, types.NamespacedName{Namespace: c1, Name: storagework.WorkName("authz-c", "sd")}, &storageWork); !apierrors.IsNotFound(err) {
		t.Errorf("storage work of the unbound request: %v", err)
	}
	t.Logf("unbound objects NotBound in %v", time.Since(start))

	// Binding the set: all four proceed.
	cv.create(bindingOf("authz-c", set))
	cv.joinCondition("j", v1alpha1.JoinedCondition, "True/Labelled")
	cv.labelsAre(c1, map[string]string{v1alpha1.SiteLabel: "berlin", v1alpha1.CapabilityLabelPrefix + "gpu": "true"}, map[string]string{"team": "retail"})
	av.work("web", nil)
	routeWork := c1 + "/" + controller.RouteWorkName(&v1alpha1.FleetAppRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "authz-c", Name: "web"}})
	av.routeIs("web", "False/WorkPending", routeWork, "http://authz.example.com/")
	av.applied("web")
	av.routeIs("web", "True/Published", routeWork, "http://authz.example.com/")
	testkit.Eventually(t, converge, "storage work of authz-c/sd", func() error {
		return c.Get(ctx, types.NamespacedName{Namespace: c1, Name: storagework.WorkName("authz-c", "sd")}, &storageWork)
	})
	t.Logf("bound objects delivered in %v", time.Since(start))

	// A bound join leaves a hand-set value alone, and sets the rest.
	a, b := siteView{t, c, "authz-a"}, siteView{t, c, "authz-b"}
	a.create(a.site("berlin", v1alpha1.FleetSiteSpec{}), a.join("j", c2, "berlin", "", "gpu"))
	a.joinCondition("j", v1alpha1.JoinedCondition, "False/LabelConflict", "fleet.site=paris")
	a.labelsAre(c2, map[string]string{v1alpha1.SiteLabel: "paris", v1alpha1.CapabilityLabelPrefix + "gpu": "true"}, nil)
	// A join of the other workspace bound to the set: the cluster is authz-a's join's.
	b.create(b.site("berlin", v1alpha1.FleetSiteSpec{}), b.join("j", c2, "berlin", "", "storage"))
	b.joinCondition("j", v1alpha1.JoinedCondition, "False/ClusterAlreadyJoined", "authz-a/j")
	// Deleting authz-a's join removes its capability and leaves the hand-set fleet.site; authz-b's
	// join takes the cluster over and leaves the value too.
	if err := c.Delete(ctx, a.join("j", "", "", "")); err != nil {
		t.Fatal(err)
	}
	b.joinCondition("j", v1alpha1.JoinedCondition, "False/LabelConflict", "fleet.site=paris")
	b.labelsAre(c2, map[string]string{v1alpha1.SiteLabel: "paris", v1alpha1.CapabilityLabelPrefix + "storage": "true"}, nil)
	if err := c.Get(ctx, types.NamespacedName{Name: c2}, &mc); err != nil {
		t.Fatal(err)
	}
	if got := mc.Annotations[v1alpha1.JoinLabelsAnnotation] + " " + mc.Annotations[v1alpha1.JoinedByAnnotation]; got != v1alpha1.CapabilityLabelPrefix+"storage authz-b/j" {
		t.Errorf("join annotations %q", got)
	}

	// Unbinding again: authz-c's join takes its labels away; its works stay as they are.
	if err := c.Delete(ctx, bindingOf("authz-c", set)); err != nil {
		t.Fatal(err)
	}
	cv.joinCondition("j", v1alpha1.JoinedCondition, "False/NotBound", notBound)
	cv.labelsAre(c1, map[string]string{}, map[string]string{"team": "retail"})
	av.appIs("web", v1alpha1.AppPending, "NotBound", nil)
	t.Logf("done in %v", time.Since(start))
}

// storageIs waits until the request's Ready condition is statusReason with a message containing
// each of parts.
func storageIs(t *testing.T, c client.Client, ws, name, statusReason string, parts ...string) {
	t.Helper()
	testkit.Eventually(t, converge, "StorageSiteDeployment "+name+" "+statusReason, func() error {
		var d storagev1alpha2.StorageSiteDeployment
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: ws, Name: name}, &d); err != nil {
			return err
		}
		r := meta.FindStatusCondition(d.Status.Conditions, storagev1alpha2.ReadyCondition)
		if r == nil || string(r.Status)+"/"+r.Reason != statusReason || r.ObservedGeneration != d.Generation {
			return fmt.Errorf("Ready %+v, want %s", r, statusReason)
		}
		for _, p := range parts {
			if !strings.Contains(r.Message, p) {
				return fmt.Errorf("Ready message %q lacks %q", r.Message, p)
			}
		}
		return nil
	})
}
