package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// TestTraefikRule: the rule quotes host and path so that neither changes its structure, and a
// value that no Traefik string can hold, or that is no strict path, is refused.
func TestTraefikRule(t *testing.T) {
	for _, c := range []struct {
		host, path, want, err string
	}{
		{"shop.example.com", "/", "Host(`shop.example.com`) && PathPrefix(`/`)", ""},
		{"shop.example.com", "/a$b*c+d;e=f:g@h/%20", "Host(`shop.example.com`) && PathPrefix(`/a$b*c+d;e=f:g@h/%20`)", ""},
		{"shop.example.com", "/x`) || Host(`victim.example.com`) && PathPrefix(`/", "", "not allowed"},
		{"shop.example.com", "/a/../b", "", ".."},
		{"shop.example.com`) || Host(`victim.example.com", "/", "", "cannot be quoted"},
		{"shop.example.com\n", "/", "", "cannot be quoted"},
	} {
		got, err := traefikRule(c.host, c.path)
		if got != c.want || c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("traefikRule(%q, %q) = %q, %v; want %q, error containing %q", c.host, c.path, got, err, c.want, c.err)
		}
	}
}

// TestRouteWithInvalidPathIsNotPublished: defence in depth behind the CRD, which refuses such a
// path (so this test writes through a fake client, which does not validate): a route whose path
// fleetrules.CheckRoutePath refuses publishes nothing and says why, before anything else is
// read.
func TestRouteWithInvalidPathIsNotPublished(t *testing.T) {
	route := &v1alpha1.FleetAppRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "inject"},
		Spec: v1alpha1.FleetAppRouteSpec{App: "web", Mode: v1alpha1.RouteHub, Host: "web.b.example.com",
			Path: "/x`) || Host(`shop.a.example.com`) && PathPrefix(`/", Service: v1alpha1.RouteBackend{Name: "web", Port: 80}}}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(route).WithStatusSubresource(route).Build()
	r := &AppRouteReconciler{Client: c, Reader: c}
	if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(route)}); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.FleetAppRoute
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(route), &got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != reasonInvalidPath || !strings.Contains(cond.Message, "fix spec.path") ||
		got.Status.Published != "" || got.Status.URL != "" {
		t.Errorf("status %+v, want not Ready, InvalidPath, nothing published", got.Status)
	}
	var cms corev1.ConfigMapList
	var works workv1.ManifestWorkList
	if err := c.List(t.Context(), &cms); err != nil || len(cms.Items) != 0 {
		t.Errorf("ConfigMaps %v (%v), want none", cms.Items, err)
	}
	if err := c.List(t.Context(), &works); err != nil || len(works.Items) != 0 {
		t.Errorf("works %v (%v), want none", works.Items, err)
	}
}
