package agent

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
)

// Before Helm runs, a release read from a cache that lags behind the API server (the status the
// last reconcile wrote not in it yet) waits, naming both resourceVersions; one the cache holds
// as the API server does goes on (a fake API server: the rule is the comparison).
func TestCacheCaughtUp(t *testing.T) {
	onServer := &v1alpha1.FleetRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-system", Name: "web"},
		Status: v1alpha1.FleetReleaseStatus{Phase: v1alpha1.ReleaseDeployed}}
	reader := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(onServer).Build()
	r := &FleetReleaseReconciler{Reader: reader}
	var current v1alpha1.FleetRelease
	if err := reader.Get(t.Context(), client.ObjectKeyFromObject(onServer), &current); err != nil {
		t.Fatal(err)
	}

	stale := current.DeepCopy()
	stale.ResourceVersion, stale.Status.Phase = "1", v1alpha1.ReleaseInstalling
	err := r.cacheCaughtUp(t.Context(), stale)
	if kube.KindOf(err) != kube.Waits {
		t.Fatalf("a cache behind the API server: %v (%v), want a wait", err, kube.KindOf(err))
	}
	if msg := err.Error(); !strings.Contains(msg, "resourceVersion 1") || !strings.Contains(msg, current.ResourceVersion) {
		t.Errorf("message %q, want both resourceVersions", msg)
	}
	if err := r.cacheCaughtUp(t.Context(), &current); err != nil {
		t.Errorf("a cache as the API server: %v, want nil", err)
	}
}
