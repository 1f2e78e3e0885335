package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
)

// TestGeneratedRBACSuffices runs the controller as a ServiceAccount that holds only the
// ClusterRole `make generate` writes to config/rbac/role.yaml, and checks that a workspace
// converges: every read and write the reconciler needs is granted.
func TestGeneratedRBACSuffices(t *testing.T) {
	const ws, sa, ns = "rbac-ws", "fleet-controller", "kube-system"
	h, c, v := seededWorkspace(t, ws)
	ctx := t.Context()

	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	role.Name = "rbac-test-" + role.Name
	if err := c.Create(ctx, &role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(h.Config)
	cfg.BearerToken = tok.Status.Token

	mgr, err := controller.NewHubManager(cfg, controller.HubOptions{Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: "routing"})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	v.converged()
	for cl := range map[string]bool{"eu-01": true, "us-01": true} {
		if _, err := v.work(cl); err != nil {
			t.Errorf("work of %s: %v", cl, err)
		}
		if st, err := v.storage(cl); err != nil || condition(st.Status.Conditions, v1alpha1.ReadyCondition) != "True/Delivered" {
			t.Errorf("ClusterOCIStorage of %s: %v", cl, err)
		}
	}
}
