package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
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
		{"registries:\n  - name: a\n    referense: r.example\n", `unknown field "referense"`}, //nolint:misspell // the misspelt field is the test
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

// TestRunHelp: asking for help is not bad usage: `fleet-controller --help` and
// `fleet-controller <mode> --help` print the usage and exit 0; an unknown flag still exits 2.
func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"hub", "--help"}, {"agent", "-h"}, {"pull", "--help"}} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if out := stdout.String() + stderr.String(); code != 0 || !strings.Contains(out, "usage: fleet-controller") {
			t.Errorf("fleet-controller %s: exit %d, output %q; want 0 and the usage", strings.Join(args, " "), code, out)
		}
	}
	for _, args := range [][]string{{}, {"hub", "--no-such-flag"}, {"agent", "--no-such-flag"}, {"pull", "--no-such-flag"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("fleet-controller %s: exit %d, stderr %q; want 2", strings.Join(args, " "), code, stderr.String())
		}
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

// emptyRegistry is a registry that has nothing: it answers 404 to every request, and records the
// User-Agent of each.
func emptyRegistry(t *testing.T) (addr string, userAgents func() []string) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.UserAgent())
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func TestPullNotFoundAdvice(t *testing.T) {
	addr, _ := emptyRegistry(t)
	const (
		replication = "NotFound (the artifact has not been replicated to this registry within the replication wait)"
		push        = "NotFound (the artifact is not in the source registry: push it (tag 1.0 of apps/web))"
	)
	tests := []struct {
		name, roleA, roleB string
		wantA, wantB       string
	}{
		{name: "no roles: the last registry is the source", wantA: replication, wantB: push},
		{name: "role source first", roleA: "source", roleB: "mirror", wantA: push, wantB: replication},
		{name: "mirrors only", roleA: "mirror", roleB: "mirror", wantA: replication, wantB: replication},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var chain strings.Builder
			chain.WriteString("registries:\n")
			for _, r := range []struct{ name, role string }{{"eu", tt.roleA}, {"central", tt.roleB}} {
				fmt.Fprintf(&chain, "  - name: %s\n    reference: %s\n    basicHTTP: true\n", r.name, addr)
				if r.role != "" {
					fmt.Fprintf(&chain, "    role: %s\n", r.role)
				}
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"pull", "--chain", writeChain(t, chain.String()), "--artifact", "apps/web:1.0", "--dest", t.TempDir()}, &stdout, &stderr)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %s", code, stderr.String())
			}
			for _, want := range []string{"; eu: " + tt.wantA + ": ", "; central: " + tt.wantB + ": "} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

func TestPullSendsVersionInUserAgent(t *testing.T) {
	addr, userAgents := emptyRegistry(t)
	defer func(v string) { version = v }(version)
	version = "1.2.3"
	chain := writeChain(t, "registries:\n  - name: r\n    reference: "+addr+"\n    basicHTTP: true\n")
	var stdout, stderr bytes.Buffer
	run([]string{"pull", "--chain", chain, "--artifact", "apps/web:1.0", "--dest", t.TempDir()}, &stdout, &stderr)
	if got, want := userAgents(), []string{"fleet-controller/1.2.3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests carried User-Agent %q, want %q", got, want)
	}
}
