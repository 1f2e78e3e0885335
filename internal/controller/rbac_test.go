package controller_test

import (
	"testing"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// TestGeneratedRBACSuffices runs the controller as a ServiceAccount that holds only the
// ClusterRole `make generate` writes to config/rbac/role.yaml, and checks that a workspace
// converges: every read and write the reconciler needs is granted.
func TestGeneratedRBACSuffices(t *testing.T) {
	const ws, sa, ns = "rbac-ws", "fleet-controller", "kube-system"
	h, c, v := seededWorkspace(t, ws)
	cfg := roleConfig(t, h, c, "rbac-test-fleet-controller-hub", sa, ns)

	runControllers(t, cfg, "routing")
	v.converged()
	for cl := range map[string]bool{"eu-01": true, "us-01": true} {
		if _, err := v.work(cl); err != nil {
			t.Errorf("work of %s: %v", cl, err)
		}
		if st, err := v.storage(cl); err != nil || condition(st.Status.Conditions, v1alpha1.WrittenCondition) != "True/Written" {
			t.Errorf("ClusterOCIStorage of %s: %v", cl, err)
		}
	}
}
