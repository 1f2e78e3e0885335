package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAccMissingWorkspace: a resource whose workspace is not a namespace on the hub is a plan
// error on `workspace` naming it and what to do, not a bare `namespaces "…" not found` at apply;
// the plan fails, so nothing is written: no namespace appears and no Secret is in it.
func TestAccMissingWorkspace(t *testing.T) {
	kube := testHub(t)
	ws := fmt.Sprintf("acc-no-such-workspace-%d", time.Now().UnixMilli()%100000)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: registryConfig(ws, "harbor", `role = "mirror"
  reference = "harbor.example.com"`),
			ExpectError: expectError("Workspace does not exist", fmt.Sprintf(`"harbor" goes to workspace %q, which is not a namespace on the hub`, ws),
				"kubectl create namespace "+ws),
		}},
	})
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Get(ctx, ws, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s: %v, want not found", ws, err)
	}
	if l, err := kube.CoreV1().Secrets(ws).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("Secrets in %s: %v, %v; want none", ws, l, err)
	}
}
