package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// protoV6Providers serves the provider in-process to the Terraform or OpenTofu CLI under test.
var protoV6Providers = map[string]func() (tfprotov6.ProviderServer, error){
	"fleet": func() (tfprotov6.ProviderServer, error) { return NewServer("test")(), nil },
}

// testRESTConfig is the admin configuration of the hub the acceptance tests run against
// (KUBE_CONFIG_PATH, as the provider reads it).
func testRESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make testacc) to run it on the local hub")
	}
	path := os.Getenv("KUBE_CONFIG_PATH")
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("hub client from %q: %v", path, err)
	}
	return cfg
}

// testHub is a typed client of that hub, for out-of-band changes and assertions on hub objects.
func testHub(t testing.TB) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(testRESTConfig(t))
}

var workspaceSeq atomic.Int64

// testWorkspace creates a fresh namespace so that each test sees only its own objects.
func testWorkspace(t testing.TB, kube kubernetes.Interface) string {
	t.Helper()
	testName := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	name := fmt.Sprintf("acc-%s-%d-%d", testName, time.Now().UnixMilli()%100000, workspaceSeq.Add(1))
	if len(name) > 63 {
		name = name[len(name)-63:]
		name = strings.TrimLeft(name, "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create workspace %s: %v", name, err)
	}
	return name
}

// checkNoSecretInState fails when any attribute of any resource in state contains one of the
// given values: credentials must never reach state.
func checkNoSecretInState(secrets ...string) func(*terraform.State) error {
	return func(s *terraform.State) error {
		for addr, rs := range s.RootModule().Resources {
			for k, v := range rs.Primary.Attributes {
				for _, secret := range secrets {
					if strings.Contains(v, secret) {
						return fmt.Errorf("%s attribute %s holds a credential", addr, k)
					}
				}
			}
		}
		return nil
	}
}

// expectError matches CLI output that contains the parts in order, whatever the CLI's line
// wrapping did to the spaces inside them.
func expectError(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = strings.Join(strings.Fields(regexp.QuoteMeta(p)), `\s+`)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(quoted, ".*"))
}
