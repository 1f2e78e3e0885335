package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/config/rbac"
)

// TestAccTenantRole: a tenant that holds only the shipped tenant roles (fleet-tenant bound in
// its workspace, fleet-tenant-clusters hub-wide) plans and applies a registry and a route in its
// workspace, reads its pulls, and can read neither another workspace's registries (their
// credentials) nor its pulls, nor any ManifestWork (every workspace's chains).
func TestAccTenantRole(t *testing.T) {
	kube := testHub(t)
	own, other := testWorkspace(t, kube), testWorkspace(t, kube)
	ctx := context.Background()
	user := "tenant-" + own
	suffix := own[len(own)-12:]

	roles := tenantRoles(t)
	for _, r := range roles {
		r.Name += "-" + suffix
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(context.Background(), r.Name, metav1.DeleteOptions{}) })
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	if _, err := kube.RbacV1().RoleBindings(own).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleet-tenant-" + suffix}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-clusters-" + suffix}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleet-tenant-clusters-" + suffix}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})

	// The other workspace's registry, with its push credentials.
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "source", Namespace: other}, Type: OCIRegistrySecretType,
		Data: map[string][]byte{"reference": []byte("other.example/fleet"), "username": []byte("pusher"), "password": []byte("their-s3cret")}}
	if _, err := kube.CoreV1().Secrets(other).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig, tenantCfg := impersonating(t, user)
	tenant := kubernetes.NewForConfigOrDie(tenantCfg)
	provider := fmt.Sprintf("provider \"fleet\" {\n  config_path = %q\n}\n", kubeconfig)
	config := provider + registryConfig(own, "source", "  role = \"source\"\n  reference = \"harbor.example.com/fleet\"\n") +
		routeConfig(own, "all", "  priority = 10\n  default = true\n  registries = [fleet_oci_registry.source.name]\n") +
		fmt.Sprintf("data \"fleet_oci_pull_status\" \"own\" {\n  workspace = %q\n}\n", own)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("fleet_oci_route.all", "workspace", own),
					resource.TestCheckResourceAttr("data.fleet_oci_pull_status.own", "pulls.#", "0"),
					func(*terraform.State) error {
						_, err := kube.CoreV1().Secrets(own).Get(ctx, "source", metav1.GetOptions{})
						return err
					},
				),
			},
			{
				Config:      config + fmt.Sprintf("data \"fleet_oci_pull_status\" \"theirs\" {\n  workspace = %q\n}\n", other),
				ExpectError: expectError("Cannot read the controller's view", "forbidden"),
			},
		},
	})

	if _, err := tenant.CoreV1().Secrets(other).Get(ctx, "source", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant reads the other workspace's registry Secret: %v", err)
	}
	if _, err := tenant.CoreV1().Secrets(other).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant lists the other workspace's Secrets: %v", err)
	}
	works := &workv1.ManifestWorkList{}
	err := tenant.CoreV1().RESTClient().Get().AbsPath("/apis", workv1.GroupName, "v1", "manifestworks").Do(ctx).Into(works)
	if !apierrors.IsForbidden(err) {
		t.Errorf("the tenant lists ManifestWorks: %v", err)
	}
}

// tenantRoles reads the shipped tenant ClusterRoles.
func tenantRoles(t *testing.T) []rbacv1.ClusterRole {
	t.Helper()
	roles, err := rbac.Tenant()
	if err != nil {
		t.Fatal(err)
	}
	if len(roles) != 2 || roles[0].Name != "fleet-tenant" || roles[1].Name != "fleet-tenant-clusters" {
		t.Fatalf("config/rbac/tenant/roles.yaml holds %d roles", len(roles))
	}
	return roles
}

// impersonating writes a kubeconfig of the hub that acts as user (impersonated by the admin
// credentials, as `kubectl --as` does) and returns its path and REST config.
func impersonating(t *testing.T, user string) (string, *rest.Config) {
	t.Helper()
	path := os.Getenv("KUBE_CONFIG_PATH")
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	out := filepath.Join(t.TempDir(), "tenant.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", out)
	if err != nil {
		t.Fatal(err)
	}
	return out, rc
}
