package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// The registry helpers follow internal/puller's testbed_test.go: a CNCF distribution registry
// from bin/registry as a child process, plain HTTP, no auth.

// registryBin returns bin/registry, skipping the test when it is missing unless
// FLEET_REQUIRE_TESTBED=1.
func registryBin(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(testbed.EnvBinDir)
	if dir == "" {
		dir = filepath.Join("..", "..", "bin")
	}
	path := filepath.Join(dir, "registry")
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("%s is missing: run `make bin/registry`", path)
		if os.Getenv(testbed.EnvRequire) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// testRegistry is a registry on 127.0.0.1 behind a proxy that counts the requests for content.
type testRegistry struct {
	Addr string // the registry itself, for pushes
	// Proxy is the address agents pull through.
	Proxy string
	// BlobGets and ManifestGets count the GET requests for blobs and manifests through Proxy.
	BlobGets, ManifestGets atomic.Int64
}

func startRegistry(t testing.TB) *testRegistry {
	t.Helper()
	bin := registryBin(t)
	dir := t.TempDir()
	r := &testRegistry{Addr: freeAddr(t)}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"+
		"storage:\n  filesystem:\n    rootdirectory: %s\n  maintenance:\n    uploadpurging:\n      enabled: false\n"+
		"http:\n  addr: %s\n  secret: fleet-test\n", filepath.Join(dir, "data"), r.Addr)
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", config)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("registry %s log:\n%s", r.Addr, logs.String())
		}
	})
	ready := false
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + r.Addr + "/v2/"); err == nil {
			resp.Body.Close()
			ready = true
			break
		}
	}
	if !ready {
		t.Fatalf("registry on %s did not become ready", r.Addr)
	}

	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: r.Addr})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			switch {
			case strings.Contains(req.URL.Path, "/blobs/"):
				r.BlobGets.Add(1)
			case strings.Contains(req.URL.Path, "/manifests/"):
				r.ManifestGets.Add(1)
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Proxy = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// entry is a chain entry pulling from r through its proxy.
func (r *testRegistry) entry(name string) puller.Registry {
	return puller.Registry{Name: name, Reference: r.Proxy, BasicHTTP: true}
}

// push packs layers into an artifact and pushes it to repository:tag; it returns the manifest.
func (r *testRegistry) push(t testing.TB, repository, tag string, layers ...[]byte) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	store := memory.New()
	var descs []ocispec.Descriptor
	for i, data := range layers {
		desc := content.NewDescriptorFromBytes("application/vnd.fleet.test.layer", data)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: fmt.Sprintf("layer-%d", i)}
		if err := store.Push(ctx, desc, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		descs = append(descs, desc)
	}
	m, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "application/vnd.fleet.test", oras.PackManifestOptions{
		Layers: descs, ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "2026-11-30T00:00:00Z"}, // the same artifact everywhere
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := &remote.Repository{Client: http.DefaultClient, Reference: registry.Reference{Registry: r.Addr, Repository: repository}, PlainHTTP: true}
	if err := oras.CopyGraph(ctx, store, repo, m, oras.DefaultCopyGraphOptions); err != nil {
		t.Fatalf("push to %s: %v", repo.Reference, err)
	}
	if err := repo.Tag(ctx, m, tag); err != nil {
		t.Fatalf("tag %s: %v", tag, err)
	}
	return m
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
