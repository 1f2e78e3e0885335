package provider

// Warnings as the CLI under test shows them. terraform-plugin-testing cannot see warnings, so
// these tests run the CLI themselves (TF_ACC_TERRAFORM_PATH, else terraform on PATH; OpenTofu with
// TF_ACC_PROVIDER_HOST=registry.opentofu.org as in `make testacc-tofu`) against the provider served
// in this process, as terraform-plugin-testing does (TF_REATTACH_PROVIDERS), and read the
// diagnostics of `plan -json`.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
)

// cliWorkdir is one working directory of the CLI under test, with the provider served in-process.
type cliWorkdir struct {
	t        *testing.T
	bin, dir string
	source   string // the provider's source address
	env      []string
}

type cliDiag struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
	Address  string `json:"address"` // the resource or data source instance, when the diagnostic is one's
}

func (d cliDiag) String() string { return d.Severity + ": " + d.Summary + ": " + d.Detail }

func newCLIWorkdir(t *testing.T) *cliWorkdir {
	t.Helper()
	return newCLIWorkdirServing(t, nil)
}

// newCLIWorkdirServing is newCLIWorkdir with the provider's server wrapped by wrap (nil: as it is).
func newCLIWorkdirServing(t *testing.T, wrap func(tfprotov6.ProviderServer) tfprotov6.ProviderServer) *cliWorkdir {
	t.Helper()
	testRESTConfig(t) // skips without TF_ACC
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("terraform"); err != nil {
			t.Skip("no CLI: set TF_ACC_TERRAFORM_PATH or put terraform on PATH")
		}
	}
	host, ns := os.Getenv("TF_ACC_PROVIDER_HOST"), os.Getenv("TF_ACC_PROVIDER_NAMESPACE")
	if host == "" {
		host = "registry.terraform.io"
	}
	if ns == "" {
		ns = "hashicorp"
	}
	source := host + "/" + ns + "/fleet"

	ctx, cancel := context.WithCancel(context.Background())
	configCh := make(chan *plugin.ReattachConfig, 1)
	closeCh := make(chan struct{})
	serveErr := make(chan error, 1)
	go func() {
		server := NewServer("test")
		if wrap != nil {
			inner := server
			server = func() tfprotov6.ProviderServer { return wrap(inner()) }
		}
		serveErr <- tf6server.Serve(source, server,
			tf6server.WithDebug(ctx, configCh, closeCh), tf6server.WithoutLogStderrOverride(),
			tf6server.WithGoPluginLogger(hclog.NewNullLogger()), tf6server.WithLoggingSink(t)) // logs as TF_LOG says
	}()
	var rc *plugin.ReattachConfig
	select {
	case rc = <-configCh:
	case err := <-serveErr:
		cancel()
		t.Fatalf("serve the provider: %v", err)
	}
	t.Cleanup(func() { cancel(); <-closeCh })
	reattach, err := json.Marshal(map[string]any{source: map[string]any{
		"Protocol": string(rc.Protocol), "ProtocolVersion": rc.ProtocolVersion, "Pid": rc.Pid, "Test": true,
		"Addr": map[string]string{"Network": rc.Addr.Network(), "String": rc.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := append(os.Environ(), "TF_REATTACH_PROVIDERS="+string(reattach), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	if os.Getenv("TF_CLI_CONFIG_FILE") == "" {
		empty := filepath.Join(dir, ".cli.tfrc")
		if err := os.WriteFile(empty, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		env = append(env, "TF_CLI_CONFIG_FILE="+empty)
	}
	w := &cliWorkdir{t: t, bin: bin, dir: dir, source: source, env: env}
	w.write("")
	if _, err := w.run("init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	return w
}

// write replaces the configuration.
func (w *cliWorkdir) write(config string) {
	w.t.Helper()
	main := fmt.Sprintf("terraform {\n  required_providers {\n    fleet = { source = %q }\n  }\n}\n%s", w.source, config)
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(main), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *cliWorkdir) run(args ...string) (stdout string, err error) {
	w.t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s\n%s", filepath.Base(w.bin), strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// diags runs a command with -json and returns its diagnostics; failed is true when it failed.
func (w *cliWorkdir) diags(args ...string) (diags []cliDiag, failed bool) {
	w.t.Helper()
	out, err := w.run(append(args, "-json", "-input=false", "-no-color")...)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Type       string  `json:"type"`
			Diagnostic cliDiag `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Type == "diagnostic" {
			diags = append(diags, line.Diagnostic)
		}
	}
	return diags, err != nil
}

// apply applies config and fails the test on error; it returns the apply's diagnostics.
func (w *cliWorkdir) apply(config string) []cliDiag {
	w.t.Helper()
	w.write(config)
	diags, failed := w.diags("apply", "-auto-approve")
	if failed {
		w.t.Fatalf("apply failed: %v", diags)
	}
	return diags
}

// plan plans config and returns its diagnostics.
func (w *cliWorkdir) plan(config string) (diags []cliDiag, failed bool) {
	w.t.Helper()
	w.write(config)
	return w.diags("plan")
}

// destroy destroys what the working directory manages.
func (w *cliWorkdir) destroy() {
	w.t.Helper()
	if diags, failed := w.diags("destroy", "-auto-approve"); failed {
		w.t.Errorf("destroy failed: %v", diags)
	}
}

// only returns the diagnostics whose summary is one of summaries.
// expectWarnings checks that a plan that did not fail gave, of the diagnostics summarised as
// one of summaries, exactly the warnings of want, each detail saying every part listed.
func expectWarnings(t *testing.T, step string, got []cliDiag, failed bool, summaries []string, want map[string][]string) {
	t.Helper()
	if failed {
		t.Fatalf("%s: the plan failed: %v", step, got)
	}
	got = only(got, summaries...)
	if len(got) != len(want) {
		t.Errorf("%s: warnings %v, want %d: %v", step, got, len(want), want)
		return
	}
	for _, d := range got {
		parts, ok := want[d.Summary]
		if !ok || d.Severity != "warning" {
			t.Errorf("%s: unexpected %v", step, d)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(d.Detail, p) {
				t.Errorf("%s: %q does not say %q:\n%s", step, d.Summary, p, d.Detail)
			}
		}
	}
}

func only(diags []cliDiag, summaries ...string) []cliDiag {
	var out []cliDiag
	for _, d := range diags {
		for _, s := range summaries {
			if d.Summary == s {
				out = append(out, d)
			}
		}
	}
	return out
}
