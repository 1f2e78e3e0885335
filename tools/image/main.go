// Command image-build packs a static fleet-controller binary into a FROM-scratch container image
// without Docker: one layer holding /fleet-controller, run as 65532:65532. It writes the image as
// an OCI image layout and, with -push, also pushes it to a registry.
//
//	image-build -binary dist/linux_amd64/fleet-controller -arch amd64 -version 0.1.0 -out dist/image
//	image-build ... -push 127.0.0.1:5000/fleet-controller:dev
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	entrypoint = "/fleet-controller"
	user       = "65532:65532" // the "nonroot" user of distroless and Chainguard images
)

func main() {
	binary := flag.String("binary", "", "static linux fleet-controller binary to pack (required)")
	out := flag.String("out", "dist/image", "OCI image layout folder to (re)write")
	arch := flag.String("arch", runtime.GOARCH, "architecture the binary was built for")
	version := flag.String("version", "dev", "image version: org.opencontainers.image.version and the layout's ref name")
	source := flag.String("source", "https://github.com/umkim/terraform-provider-fleet", "org.opencontainers.image.source")
	push := flag.String("push", "", "also push the image to this reference, e.g. 127.0.0.1:5000/fleet-controller:dev")
	flag.Parse()
	if *binary == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*binary, *out, *arch, *version, *source, *push); err != nil {
		fmt.Fprintln(os.Stderr, "image-build:", err)
		os.Exit(1)
	}
}

func run(binary, out, arch, version, source, push string) error {
	created, err := creationTime()
	if err != nil {
		return err
	}
	layer, err := binaryLayer(binary, created)
	if err != nil {
		return err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "image-build: " + entrypoint,
	}})
	if err != nil {
		return err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint: []string{entrypoint},
		User:       user,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.source":  source,
			"org.opencontainers.image.version": version,
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}

	// A fresh layout each time, so blobs of earlier builds do not pile up.
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	})); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: linux/%s image %s\n", out, arch, digest)

	if push != "" {
		ref, err := name.ParseReference(push)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Printf("pushed %s@%s\n", ref.Context(), digest)
	}
	return nil
}

// binaryLayer is a layer holding the binary as an executable, root-owned file at the image's
// root; go-containerregistry gzips it.
func binaryLayer(path string, mtime time.Time) (v1.Layer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     entrypoint[1:],
		Mode:     0o755,
		Size:     int64(len(data)),
		ModTime:  mtime,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// creationTime is $SOURCE_DATE_EPOCH, or else the Unix epoch, so that the same binary always
// gives the same image digest.
func creationTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
