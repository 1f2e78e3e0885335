package packaging_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestImageLayout reads the OCI image layout `make image` writes to dist/image and checks the
// image runs the static controller binary as a non-root user. Without the layout it skips, or
// fails when FLEET_REQUIRE_TESTBED=1 (`make test` builds the image first).
func TestImageLayout(t *testing.T) {
	dir := filepath.Join(repoRoot, "dist", "image")
	if _, err := os.Stat(filepath.Join(dir, specs.ImageIndexFile)); err != nil {
		if os.Getenv(testbed.EnvRequire) == "1" {
			t.Fatalf("no OCI image layout in dist/image: run make image (%v)", err)
		}
		t.Skipf("no OCI image layout in dist/image: run make image (%v)", err)
	}

	var lay specs.ImageLayout
	readJSON(t, filepath.Join(dir, specs.ImageLayoutFile), &lay)
	if lay.Version != specs.ImageLayoutVersion {
		t.Errorf("imageLayoutVersion = %q, want %q", lay.Version, specs.ImageLayoutVersion)
	}
	var index specs.Index
	readJSON(t, filepath.Join(dir, specs.ImageIndexFile), &index)
	if len(index.Manifests) != 1 || index.Manifests[0].MediaType != specs.MediaTypeImageManifest {
		t.Fatalf("index.json manifests = %+v, want one image manifest", index.Manifests)
	}
	var manifest specs.Manifest
	blobJSON(t, dir, index.Manifests[0], &manifest)
	if manifest.Config.MediaType != specs.MediaTypeImageConfig || len(manifest.Layers) != 1 ||
		manifest.Layers[0].MediaType != specs.MediaTypeImageLayerGzip {
		t.Fatalf("manifest = %+v, want an OCI config and one gzip layer", manifest)
	}
	var img specs.Image
	blobJSON(t, dir, manifest.Config, &img)

	cfg := img.Config
	if len(cfg.Entrypoint) != 1 || cfg.Entrypoint[0] != "/fleet-controller" {
		t.Errorf("Entrypoint = %q, want [/fleet-controller]", cfg.Entrypoint)
	}
	if uid, _, _ := strings.Cut(cfg.User, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("User = %q, want a non-root uid", cfg.User)
	} else if cfg.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", cfg.User)
	}
	version := index.Manifests[0].Annotations[specs.AnnotationRefName]
	if cfg.Labels[specs.AnnotationSource] != "https://github.com/umkim/terraform-provider-fleet" ||
		version == "" || cfg.Labels[specs.AnnotationVersion] != version {
		t.Errorf("labels = %v, ref name %q: want the source and the version the layout is named by", cfg.Labels, version)
	}
	if img.OS != "linux" || img.Architecture == "" {
		t.Errorf("platform = %s/%s, want linux/<arch>", img.OS, img.Architecture)
	}

	// The one layer: /fleet-controller, an executable, statically linked linux binary for the
	// image's architecture.
	gz := blob(t, dir, manifest.Layers[0])
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.RootFS.DiffIDs) != 1 || img.RootFS.DiffIDs[0] != digest.FromBytes(layer) {
		t.Errorf("rootfs diff_ids = %v, want the uncompressed layer's %s", img.RootFS.DiffIDs, digest.FromBytes(layer))
	}
	var bin []byte
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimLeft(h.Name, "./") != "fleet-controller" {
			continue
		}
		if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
			t.Errorf("fleet-controller in the layer: type %q, mode %o, want an executable file", h.Typeflag, h.Mode)
		}
		if bin, err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	if bin == nil {
		t.Fatal("no fleet-controller in the image's layer")
	}
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("fleet-controller is not an ELF binary: %v", err)
	}
	if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[img.Architecture]; want != 0 && ef.Machine != want {
		t.Errorf("binary machine = %v, want %v for %s", ef.Machine, want, img.Architecture)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("fleet-controller is dynamically linked (has PT_INTERP); build it with CGO_ENABLED=0")
		}
	}

	// The image has no CA bundle, so the binary carries Mozilla's roots, which crypto/x509 uses
	// when the system has none: the fallback module, at go.mod's version, is linked in.
	const fallback = "golang.org/x/crypto/x509roots/fallback"
	info, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("fleet-controller's build info: %v", err)
	}
	linked := ""
	for _, d := range info.Deps {
		if d.Path == fallback {
			linked = d.Version
		}
	}
	if want := requiredVersion(t, fallback); linked != want {
		t.Errorf("%s in the binary's build info: version %q, want %q (go.mod's): without it the agent trusts no registry certificate", fallback, linked, want)
	}

	// Where the binary can run here, it does: without arguments it prints its usage.
	if runtime.GOOS == "linux" && runtime.GOARCH == img.Architecture {
		path := filepath.Join(t.TempDir(), "fleet-controller")
		if err := os.WriteFile(path, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(t.Context(), path).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "usage: fleet-controller") {
			t.Errorf("fleet-controller without arguments: %v, output %q; want exit 2 and its usage", err, out)
		}
	}
}

// requiredVersion is the version go.mod requires of module path.
func requiredVersion(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	t.Fatalf("go.mod requires no %s", path)
	return ""
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// blob reads a blob of the layout and checks its size and digest against the descriptor.
func blob(t *testing.T, dir string, d specs.Descriptor) []byte {
	t.Helper()
	if err := d.Digest.Validate(); err != nil {
		t.Fatalf("descriptor %+v: %v", d, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, specs.ImageBlobsDir, d.Digest.Algorithm().String(), d.Digest.Encoded()))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != d.Size || d.Digest.Algorithm().FromBytes(data) != d.Digest {
		t.Fatalf("blob %s: %d bytes with digest %s, want %d bytes", d.Digest, len(data), d.Digest.Algorithm().FromBytes(data), d.Size)
	}
	return data
}

func blobJSON(t *testing.T, dir string, d specs.Descriptor, into any) {
	t.Helper()
	if err := json.Unmarshal(blob(t, dir, d), into); err != nil {
		t.Fatalf("blob %s: %v", d.Digest, err)
	}
}
