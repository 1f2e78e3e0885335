package hub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kubeconfig = `apiVersion: v1
kind: Config
current-context: hub
clusters:
- name: hub
  cluster: {server: "https://hub.example.com:6443", insecure-skip-tls-verify: true}
- name: lab
  cluster: {server: "https://lab.example.com:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: from-kubeconfig}
contexts:
- name: hub
  context: {cluster: hub, user: admin}
- name: lab
  context: {cluster: lab, user: admin}
`

func TestSettingsRESTConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name               string
		settings           Settings
		wantHost, wantTok  string
		wantErr            string
		wantErrIs          error
		wantInsecureVerify bool
	}{
		{name: "current context", settings: Settings{ConfigPath: path}, wantHost: "https://hub.example.com:6443", wantTok: "from-kubeconfig", wantInsecureVerify: true},
		{name: "named context", settings: Settings{ConfigPath: path, ConfigContext: "lab"}, wantHost: "https://lab.example.com:6443", wantTok: "from-kubeconfig", wantInsecureVerify: true},
		{name: "explicit settings override the file", settings: Settings{ConfigPath: path, Host: "https://other:6443", Token: "explicit"},
			wantHost: "https://other:6443", wantTok: "explicit", wantInsecureVerify: true},
		{name: "explicit settings alone", settings: Settings{Host: "https://h:6443", Token: "t", Insecure: true}, wantHost: "https://h:6443", wantTok: "t", wantInsecureVerify: true},
		{name: "nothing configured", settings: Settings{}, wantErrIs: ErrNotConfigured},
		{name: "missing file", settings: Settings{ConfigPath: "/nonexistent/kubeconfig"}, wantErr: `kubeconfig "/nonexistent/kubeconfig"`},
		{name: "unknown context", settings: Settings{ConfigPath: path, ConfigContext: "nope"}, wantErr: `context "nope" does not exist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.settings.RESTConfig()
			switch {
			case tc.wantErrIs != nil:
				if !errors.Is(err, tc.wantErrIs) {
					t.Fatalf("error = %v, want %v", err, tc.wantErrIs)
				}
				return
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("unexpected error: %v", err)
			}
			if cfg.Host != tc.wantHost || cfg.BearerToken != tc.wantTok || cfg.Insecure != tc.wantInsecureVerify {
				t.Fatalf("got host=%q token=%q insecure=%v, want %q %q %v", cfg.Host, cfg.BearerToken, cfg.Insecure, tc.wantHost, tc.wantTok, tc.wantInsecureVerify)
			}
			if cfg.UserAgent != "terraform-provider-fleet" {
				t.Fatalf("user agent = %q", cfg.UserAgent)
			}
		})
	}
}

func TestSettingsUserAgent(t *testing.T) {
	for set, want := range map[string]string{"terraform-provider-fleet/1.2.3": "terraform-provider-fleet/1.2.3", "": "terraform-provider-fleet"} {
		cfg, err := Settings{Host: "https://h:6443", Token: "t", UserAgent: set}.RESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.UserAgent != want {
			t.Errorf("UserAgent %q: rest.Config.UserAgent = %q, want %q", set, cfg.UserAgent, want)
		}
	}
}

func TestExpandHome(t *testing.T) {
	home, _ := os.UserHomeDir()
	for in, want := range map[string]string{"~/.kube/config": filepath.Join(home, ".kube/config"), "/abs/path": "/abs/path", "rel/~x": "rel/~x"} {
		if got, err := expandHome(in); err != nil || got != want {
			t.Errorf("expandHome(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestSettingsExecPlugin(t *testing.T) {
	cfg, err := Settings{Host: "https://h:6443", Exec: &ExecSettings{
		APIVersion: "client.authentication.k8s.io/v1", Command: "hub-login", Args: []string{"token"}, Env: map[string]string{"HUB": "eu"},
	}}.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.ExecProvider
	if e == nil || e.Command != "hub-login" || e.APIVersion != "client.authentication.k8s.io/v1" ||
		len(e.Args) != 1 || e.Args[0] != "token" || len(e.Env) != 1 || e.Env[0].Name != "HUB" || e.Env[0].Value != "eu" {
		t.Fatalf("ExecProvider = %+v", e)
	}
}
