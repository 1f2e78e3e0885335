package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	testPushPassword  = "push-S3cret-7f1c"
	testAgentPassword = "agent-S3cret-9b2e"
)

func registryConfig(ws, name, body string) string {
	return fmt.Sprintf(`
resource "fleet_oci_registry" %[2]q {
  name      = %[2]q
  workspace = %[1]q
%[3]s
}
`, ws, name, body)
}

func getSecret(t *testing.T, kube kubernetes.Interface, ws, name string) *corev1.Secret {
	t.Helper()
	s, err := kube.CoreV1().Secrets(ws).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Secret %s/%s: %v", ws, name, err)
	}
	return s
}

// checkSecret asserts the hub Secret's type, role label and exactly the given data keys.
func checkSecret(t *testing.T, kube kubernetes.Interface, ws, name, role string, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s := getSecret(t, kube, ws, name)
		if s.Type != OCIRegistrySecretType {
			return fmt.Errorf("Secret type = %q, want %q", s.Type, OCIRegistrySecretType)
		}
		if got := s.Labels[OCIRegistryRoleLabel]; got != role {
			return fmt.Errorf("role label = %q, want %q", got, role)
		}
		if len(s.Data) != len(want) {
			keys := []string{}
			for k := range s.Data {
				keys = append(keys, k)
			}
			return fmt.Errorf("Secret keys = %v, want %d keys", keys, len(want))
		}
		for k, v := range want {
			if got, ok := s.Data[k]; !ok || string(got) != v {
				if strings.Contains(strings.ToLower(k), "password") { // never print a credential
					return fmt.Errorf("Secret data[%s] (present %v) is not the expected credential", k, ok)
				}
				return fmt.Errorf("Secret data[%s] = %q (present %v), want %q", k, got, ok, v)
			}
		}
		return nil
	}
}

// TestAccOCIRegistry_convergesAndKeepsCredentials: a key another field manager adds is removed
// by the next apply; a password changes on the hub only when its version does, and goes when
// the configuration removes it and its version.
func TestAccOCIRegistry_convergesAndKeepsCredentials(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	addr := "fleet_oci_registry.m"
	config := func(password string, version int) string {
		creds := ""
		if password != "" {
			creds = fmt.Sprintf("  password_wo = %q\n  password_wo_version = %d\n", password, version)
		}
		return registryConfig(ws, "m", "  role      = \"mirror\"\n  reference = \"m.example.com\"\n  username  = \"u\"\n"+creds)
	}
	base := map[string]string{"reference": "m.example.com", "username": "u", "basicHTTP": "false", "insecureSkipTLS": "false"}
	with := func(password string) map[string]string {
		out := maps.Clone(base)
		if password != "" {
			out["password"] = password
		}
		return out
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{Config: config("first-secret", 1), Check: checkSecret(t, kube, ws, "m", "mirror", with("first-secret"))},
			{
				// kubectl adds agentUsername and rotates the password by hand.
				PreConfig: func() {
					s := getSecret(t, kube, ws, "m")
					s.Data["agentUsername"] = []byte("intruder")
					s.Data["password"] = []byte("rotated-by-hand")
					if _, err := kube.CoreV1().Secrets(ws).Update(context.Background(), s, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
						t.Fatalf("out-of-band update: %v", err)
					}
				},
				Config: config("first-secret", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("agent_username"), knownvalue.Null()),
				}},
				Check: checkSecret(t, kube, ws, "m", "mirror", with("rotated-by-hand")),
			},
			{Config: config("first-secret", 1), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{Config: config("second-secret", 2), Check: checkSecret(t, kube, ws, "m", "mirror", with("second-secret"))},
			{Config: config("", 0), Check: checkSecret(t, kube, ws, "m", "mirror", with(""))},
			{Config: config("", 0), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}

func TestAccOCIRegistry_lifecycle(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	addr := "fleet_oci_registry.central"

	created := registryConfig(ws, "central", `
  role                      = "source"
  reference                 = "harbor.example.com/fleet"
  username                  = "pusher"
  password_wo               = "`+testPushPassword+`"
  password_wo_version       = 1
  agent_username            = "puller"
  agent_password_wo         = "`+testAgentPassword+`"
  agent_password_wo_version = 1
`)
	updated := registryConfig(ws, "central", `
  role                      = "source"
  reference                 = "harbor.example.com:8443/fleet/bundles"
  username                  = "pusher"
  password_wo               = "`+testPushPassword+`"
  password_wo_version       = 1
  agent_username            = "puller"
  agent_password_wo         = "`+testAgentPassword+`"
  agent_password_wo_version = 1
  basic_http                = true
  ca_certs                  = <<-PEM
`+testCA+`  PEM
`)
	checkUpdated := checkSecret(t, kube, ws, "central", "source", map[string]string{
		"reference": "harbor.example.com:8443/fleet/bundles", "username": "pusher", "password": testPushPassword,
		"agentUsername": "puller", "agentPassword": testAgentPassword,
		"basicHTTP": "true", "insecureSkipTLS": "false", "cacerts": testCA,
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(*terraform.State) error {
			_, err := kube.CoreV1().Secrets(ws).Get(context.Background(), "central", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("Secret %s/central still on the hub after destroy (err=%v)", ws, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: created,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", ws+"/central"),
					resource.TestCheckResourceAttr(addr, "workspace", ws),
					resource.TestCheckResourceAttr(addr, "role", "source"),
					resource.TestCheckResourceAttr(addr, "reference", "harbor.example.com/fleet"),
					resource.TestCheckResourceAttr(addr, "insecure_skip_tls", "false"),
					resource.TestCheckResourceAttr(addr, "basic_http", "false"),
					resource.TestCheckNoResourceAttr(addr, "password_wo"),
					resource.TestCheckNoResourceAttr(addr, "agent_password_wo"),
					checkNoSecretInState(testPushPassword, testAgentPassword),
					checkSecret(t, kube, ws, "central", "source", map[string]string{
						"reference": "harbor.example.com/fleet", "username": "pusher", "password": testPushPassword,
						"agentUsername": "puller", "agentPassword": testAgentPassword,
						"basicHTTP": "false", "insecureSkipTLS": "false",
					}),
				),
			},
			{
				Config: updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "reference", "harbor.example.com:8443/fleet/bundles"),
					resource.TestCheckResourceAttr(addr, "basic_http", "true"),
					checkNoSecretInState(testPushPassword, testAgentPassword),
					checkSecret(t, kube, ws, "central", "source", map[string]string{
						"reference": "harbor.example.com:8443/fleet/bundles", "username": "pusher", "password": testPushPassword,
						"agentUsername": "puller", "agentPassword": testAgentPassword,
						"basicHTTP": "true", "insecureSkipTLS": "false", "cacerts": testCA,
					}),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ws + "/central",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"password_wo_version", "agent_password_wo_version", "timeouts"},
			},
			driftStep(t, kube, ws, "central", updated, "reference", knownvalue.StringExact("harbor.example.com:8443/fleet/bundles"), func(s *corev1.Secret) {
				s.Data["reference"] = []byte("elsewhere.example.com")
			}, checkUpdated),
			driftStep(t, kube, ws, "central", updated, "role", knownvalue.StringExact("source"), func(s *corev1.Secret) {
				s.Labels[OCIRegistryRoleLabel] = "mirror"
			}, checkUpdated),
			{
				// Drift: the Secret is deleted out of band; the plan creates it again.
				PreConfig: func() {
					if err := kube.CoreV1().Secrets(ws).Delete(context.Background(), "central", metav1.DeleteOptions{}); err != nil {
						t.Fatalf("out-of-band delete: %v", err)
					}
				},
				Config: updated,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: resource.TestCheckResourceAttr(addr, "reference", "harbor.example.com:8443/fleet/bundles"),
			},
		},
	})
}

// driftStep changes the registry's Secret ws/name out of band and expects the plan to update
// attr back to want, and the apply to restore the hub object (check).
func driftStep(t *testing.T, kube kubernetes.Interface, ws, name, config, attr string, want knownvalue.Check,
	change func(*corev1.Secret), check resource.TestCheckFunc) resource.TestStep {
	return resource.TestStep{
		PreConfig: func() {
			s := getSecret(t, kube, ws, name)
			change(s)
			if _, err := kube.CoreV1().Secrets(ws).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("out-of-band update: %v", err)
			}
		},
		Config: config,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction("fleet_oci_registry."+name, plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue("fleet_oci_registry."+name, tfjsonpath.New(attr), want),
		}},
		Check: check,
	}
}

func TestAccOCIRegistry_invalidInputWritesNothing(t *testing.T) {
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	source := registryConfig(ws, "central", `
  role      = "source"
  reference = "harbor.example.com/fleet"
`)
	invalid := []struct {
		name, body string
		want       *regexp.Regexp
	}{
		{"scheme", `role = "mirror"
  reference = "oci://harbor.example.com/fleet"`, expectError("Invalid registry reference", "has a scheme (oci://)")},
		{"port", `role = "mirror"
  reference = "harbor.example.com:99999"`, expectError(`port "99999" must be a number from 1 to 65535`)},
		{"uppercase path", `role = "mirror"
  reference = "harbor.example.com/Fleet"`, expectError(`path component "Fleet"`)},
		{"role", `role = "primary"
  reference = "harbor.example.com"`, expectError("role", "value must be one of")},
		{"pem", `role = "mirror"
  reference = "harbor.example.com"
  ca_certs  = "not a certificate"`, expectError("Invalid CA bundle", "no PEM certificate found")},
		{"pem key", `role = "mirror"
  reference = "harbor.example.com"
  ca_certs  = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"`, expectError(`is a "PRIVATE KEY", not a CERTIFICATE`)},
		{"password without user", `role = "mirror"
  reference = "harbor.example.com"
  password_wo = "x"
  password_wo_version = 1`, expectError("password_wo is set but username is not")},
		{"password without version", `role = "mirror"
  reference = "harbor.example.com"
  username = "u"
  password_wo = "x"`, expectError("Missing password_wo_version", "set password_wo_version = 1 with it")},
		{"name", `role = "mirror"
  reference = "harbor.example.com"`, expectError(`"Bad_Name" is not a valid Kubernetes name`)},
	}
	var steps []resource.TestStep
	for _, tc := range invalid {
		name := "bad"
		if tc.name == "name" {
			name = "Bad_Name"
		}
		steps = append(steps, resource.TestStep{Config: registryConfig(ws, name, tc.body), ExpectError: tc.want, PlanOnly: true})
	}
	steps = append(steps,
		resource.TestStep{Config: source},
		resource.TestStep{
			// A second source is refused at plan time when no Terraform configuration manages the
			// first (here made with kubectl), naming it.
			PreConfig:   func() { newHubFixtures(t, ws).Registry("kubectl-source", "source", "harbor.example.com/kubectl") },
			Config:      source + registryConfig(ws, "second", `role = "source"`+"\n  reference = \"zot.example.com\""),
			ExpectError: expectError("Second source registry", `already has the source registry "kubectl-source", which no Terraform configuration manages`),
		},
		resource.TestStep{
			Config: source,
			Check: func(*terraform.State) error {
				list, err := kube.CoreV1().Secrets(ws).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					return err
				}
				if len(list.Items) != 2 || list.Items[0].Name != "central" || list.Items[1].Name != "kubectl-source" {
					names := []string{}
					for _, s := range list.Items {
						names = append(names, s.Name)
					}
					return fmt.Errorf("workspace holds Secrets %v, want only central and kubectl-source: invalid input wrote to the hub", names)
				}
				return nil
			},
		},
	)
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: steps})
}

func TestAccProvider_unreachableHub(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: `
provider "fleet" {
  host            = "https://127.0.0.1:1"
  insecure        = true
  token           = "unused"
  request_timeout = "2s" # how long a refused connection is retried
}
resource "fleet_oci_registry" "r" {
  name      = "r"
  role      = "mirror"
  reference = "harbor.example.com"
}`,
			ExpectError: expectError("hub unreachable at https://127.0.0.1:1", "check the hub's address and credentials"),
		}, {
			Config: `
provider "fleet" {
  config_path = "/nonexistent/kubeconfig"
}
resource "fleet_oci_registry" "r" {
  name      = "r"
  role      = "mirror"
  reference = "harbor.example.com"
}`,
			ExpectError: expectError("Invalid hub connection settings", `kubeconfig "/nonexistent/kubeconfig"`, "check config_path"),
		}},
	})
}
