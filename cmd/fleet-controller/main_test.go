package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

func writeChain(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chain.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadChainResolvesEnvReferences(t *testing.T) {
	t.Setenv("EU_AGENT_PASSWORD", "from-env")
	path := writeChain(t, `
registries:
  - name: harbor-eu
    reference: harbor-eu.example.com/fleet
    agentUsername: robot$agent
    agentPassword: ${EU_AGENT_PASSWORD}
    insecureSkipTLS: true
  - name: central
    reference: 10.0.0.5:5000
    username: ci
    password: literal-$value
    basicHTTP: true
`)
	got, err := loadChain(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []puller.Registry{
		{Name: "harbor-eu", Reference: "harbor-eu.example.com/fleet", AgentUsername: "robot$agent", AgentPassword: "from-env", InsecureSkipTLS: true},
		{Name: "central", Reference: "10.0.0.5:5000", Username: "ci", Password: "literal-$value", BasicHTTP: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("loadChain = %+v, want %+v", got, want)
	}
}

func TestLoadChainErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"registries:\n  - name: a\n    reference: r.example\n    password: ${UNSET_FLEET_TEST_VAR}\n", "password refers to environment variable UNSET_FLEET_TEST_VAR, which is not set"},
		{"registries:\n  - name: a\n    referense: r.example\n", `unknown field "referense"`},
		{"registries: []\n", "lists no registries"},
	}
	for _, tt := range tests {
		if _, err := loadChain(writeChain(t, tt.text)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("loadChain(%q) error = %v, want one containing %q", tt.text, err, tt.want)
		}
	}
}

func TestRunUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"frobnicate"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "pull ") {
		t.Errorf("unknown command: exit %d, stderr %q; want 2 and the command list", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"pull", "--chain", "c.yaml"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--artifact") {
		t.Errorf("pull without artifact: exit %d, stderr %q; want 2 and the usage", code, stderr.String())
	}
}

func TestPullFailureNeverPrintsCredentials(t *testing.T) {
	t.Setenv("FLEET_TEST_PASSWORD", "s3cret-from-env")
	chain := writeChain(t, "registries:\n  - name: down\n    reference: 127.0.0.1:1\n    basicHTTP: true\n    username: u\n    password: ${FLEET_TEST_PASSWORD}\n")
	var stdout, stderr bytes.Buffer
	code := run([]string{"pull", "--chain", chain, "--artifact", "apps/web:1.0", "--dest", t.TempDir()}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), `"reason": "Unreachable"`) {
		t.Errorf("exit %d, stdout %s; want 1 and an Unreachable status", code, stdout.String())
	}
	if out := stdout.String() + stderr.String(); strings.Contains(out, "s3cret") {
		t.Errorf("output leaks the password: %s", out)
	}
}
