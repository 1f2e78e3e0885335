package packaging_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestInstallMirror builds the provider into a filesystem mirror as `make install` does
// (hack/install-provider.sh) and runs `init` from it with OpenTofu and, when it is installed,
// Terraform, offline: the CLI configuration the script writes sends umkim/fleet to the mirror
// only. A configuration that pins the provider, in its root and in a module, initialises without
// a development-override warning, records the version in the lock file and validates (the CLI
// starts the installed provider), as do the example configurations; a version the mirror lacks
// fails init.
func TestInstallMirror(t *testing.T) {
	tofu := testbed.BinaryT(t, "tofu")
	clis := map[string]string{"tofu": tofu}
	if tf, err := exec.LookPath("terraform"); err == nil {
		clis["terraform"] = tf
	} else {
		t.Log("terraform not on PATH: init checked with OpenTofu only")
	}

	ca, err := testbed.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mirror, rc := filepath.Join(dir, "mirror"), filepath.Join(dir, "fleet.tfrc")
	script := exec.CommandContext(t.Context(), filepath.Join(repoRoot, "hack", "install-provider.sh"), mirror, rc)
	script.Env = append(os.Environ(), "VERSION=0.1.0")
	if out, err := script.CombinedOutput(); err != nil {
		t.Fatalf("hack/install-provider.sh: %v\n%s", err, out)
	}
	for _, host := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		bin := filepath.Join(mirror, host, "umkim", "fleet", "0.1.0", goTarget(t), "terraform-provider-fleet_v0.1.0")
		if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("mirror: no executable %s (%v)", bin, err)
		}
	}

	run := func(t *testing.T, cli, wd string, args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), cli, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "HOME="+wd)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	config := func(t *testing.T, version string) string {
		wd := t.TempDir()
		write(t, filepath.Join(wd, "main.tf"), fmt.Sprintf(`terraform {
  required_providers {
    fleet = { source = "umkim/fleet", version = %q }
  }
}
module "pinned" { source = "./pinned" }
`, version))
		write(t, filepath.Join(wd, "pinned", "main.tf"), `terraform {
  required_providers {
    fleet = { source = "umkim/fleet", version = ">= 0.1.0, < 1.0.0" }
  }
}
`)
		return wd
	}
	for name, cli := range clis {
		t.Run(name, func(t *testing.T) {
			host := map[string]string{"tofu": "registry.opentofu.org", "terraform": "registry.terraform.io"}[name]
			wd := config(t, "~> 0.1.0")
			out, err := run(t, cli, wd, "init", "-input=false", "-no-color")
			if err != nil {
				t.Fatalf("%s init: %v\n%s", name, err, out)
			}
			if strings.Contains(strings.ToLower(out), "override") {
				t.Errorf("%s init warns about overrides:\n%s", name, out)
			}
			lock, err := os.ReadFile(filepath.Join(wd, ".terraform.lock.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("provider %q {\n  version     = \"0.1.0\"", host+"/umkim/fleet"); !strings.Contains(string(lock), want) {
				t.Errorf("lock file lacks %q:\n%s", want, lock)
			}
			out, err = run(t, cli, wd, "validate", "-no-color")
			if err != nil || !strings.Contains(out, "Success") || strings.Contains(strings.ToLower(out), "override") {
				t.Errorf("%s validate: %v\n%s", name, err, out)
			}

			// The example configurations validate with the installed provider: among others, their
			// ephemeral password variables are used only where ephemeral values may go (write-only
			// attributes). The resource example of fleet_oci_registry gets a required_providers.
			for _, ex := range []string{"quickstart", "local-fleet", "local-app", "local-storage", "resources/fleet_oci_registry"} {
				wd := t.TempDir()
				tfs, _ := filepath.Glob(filepath.Join(repoRoot, "examples", ex, "*.tf"))
				for _, f := range tfs {
					if filepath.Base(f) == "import-by-identity.tf" && name == "terraform" {
						continue // import by identity needs Terraform >= 1.12; this one is 1.11
					}
					data, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					write(t, filepath.Join(wd, filepath.Base(f)), string(data))
				}
				if strings.HasPrefix(ex, "resources/") {
					write(t, filepath.Join(wd, "versions.tf"), "terraform {\n  required_providers {\n    fleet = { source = \"umkim/fleet\" }\n  }\n}\n")
					write(t, filepath.Join(wd, "stores-ca.pem"), ca.PEM) // the private CA the example reads
				}
				if out, err := run(t, cli, wd, "init", "-input=false", "-no-color"); err != nil {
					t.Errorf("examples/%s: %s init: %v\n%s", ex, name, err, out)
					continue
				}
				if out, err := run(t, cli, wd, "validate", "-no-color"); err != nil || !strings.Contains(out, "Success") {
					t.Errorf("examples/%s: %s validate: %v\n%s", ex, name, err, out)
				}
			}

			// A version the mirror does not hold is not found anywhere: the constraint is honoured
			// and no registry is asked.
			wd = config(t, "0.2.0")
			out, err = run(t, cli, wd, "init", "-input=false", "-no-color")
			if err == nil || !strings.Contains(out, "umkim/fleet") || !strings.Contains(out, "0.2.0") {
				t.Errorf("%s init with version 0.2.0: %v, want a failure naming umkim/fleet and 0.2.0\n%s", name, err, out)
			}
		})
	}
}

func goTarget(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOOS", "GOARCH").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	return f[0] + "_" + f[1]
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
