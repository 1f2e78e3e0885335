package testbed

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A pushed HelloChart is what `helm push` stores: the helm CLI pulls it back byte for byte and
// renders it with the values given; the same chart makes the same bytes and the same digest.
func TestPushChartPulledByHelm(t *testing.T) {
	helm := BinaryT(t, "helm")
	tgz := HelloChart("hello", "0.2.0")
	if again := HelloChart("hello", "0.2.0"); !bytes.Equal(tgz, again) {
		t.Error("HelloChart made different bytes for the same chart")
	}
	r := StartRegistryT(t, RegistryOptions{})
	m := r.PushChartT(t, "charts/hello", tgz)
	if again := r.PushChartT(t, "charts/hello", tgz); again.Digest != m.Digest {
		t.Errorf("digest of the same chart pushed again: %s, want %s", again.Digest, m.Digest)
	}

	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(helm, args...)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+dir, "HELM_CACHE_HOME="+dir, "HELM_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("pull", "oci://"+r.Addr+"/charts/hello", "--version", "0.2.0", "--plain-http", "--destination", dir)
	if !strings.Contains(out, "Digest: "+m.Digest.String()) {
		t.Errorf("helm pull output %q does not report the pushed digest %s", out, m.Digest)
	}
	if pulled, err := os.ReadFile(filepath.Join(dir, "hello-0.2.0.tgz")); err != nil || !bytes.Equal(pulled, tgz) {
		t.Errorf("helm pull wrote other bytes than the pushed chart (%v)", err)
	}

	manifest := run("template", "web", filepath.Join(dir, "hello-0.2.0.tgz"), "--namespace", "apps", "--set", "greeting=hi")
	for _, want := range []string{"name: web-hello", `greeting: "hi"`, "kind: Service", "name: web\n", "port: 80"} {
		if !strings.Contains(manifest, want) {
			t.Errorf("helm template lacks %q:\n%s", want, manifest)
		}
	}
}
