package testbed

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
)

// helloTemplate is the one template of HelloChart: a ConfigMap <release>-hello whose key
// greeting is .Values.greeting, and a Service <release> on port 80.
const helloTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hello
data:
  greeting: {{ .Values.greeting | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    app: {{ .Release.Name }}
  ports:
    - port: 80
`

// HelloChart returns the packaged chart (.tgz, as `helm package` makes it) of a tiny chart
// name at version: its template is a ConfigMap <release>-hello with data.greeting from
// .Values.greeting (default "hello") and a Service <release> on port 80, both in the release's
// namespace. The same name and version make the same bytes, hence the same digest once pushed.
func HelloChart(name, version string) []byte {
	return PackageChart(name, version, helloTemplate)
}

// hookTemplate is a pre-install and pre-upgrade hook of HookedChart: a Pod <release>-hook that
// no kubelet runs on a test-bed cluster, so that Helm waits on it until its phase is set to
// Succeeded by hand (or until Helm's timeout). Helm deletes it before it creates the next one.
const hookTemplate = `---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  restartPolicy: Never
  containers:
    - name: hook
      image: busybox
      command: [sleep, "3600"]
`

// HookedChart is HelloChart with a hook that blocks: before each install and upgrade Helm
// creates the Pod <release>-hook and waits until its phase is Succeeded, which on a test-bed
// cluster (no kubelet) happens only when a test sets it. A test can stop the agent while Helm
// waits there.
func HookedChart(name, version string) []byte {
	return PackageChart(name, version, helloTemplate+hookTemplate)
}

// FailingChart is a chart name 0.1.0 that always fails to render, with the message "this chart
// always fails": each Helm install of it fails at once, the same way.
func FailingChart(name string) []byte {
	return PackageChart(name, "0.1.0", `{{ fail "this chart always fails" }}`)
}

// PackageChart returns the packaged chart (.tgz) name at version whose templates are the YAML
// documents of templates, with the values greeting: hello. The same arguments make the same
// bytes.
func PackageChart(name, version, templates string) []byte {
	files := []struct{ name, data string }{
		{"Chart.yaml", fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ndescription: A test chart of the fleet test bed.\ntype: application\n", name, version)},
		{"values.yaml", "greeting: hello\n"},
		{"templates/hello.yaml", templates},
	}
	created, _ := time.Parse(time.RFC3339, ArtifactCreated)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: path.Join(name, f.name), Mode: 0o644, Size: int64(len(f.data)), ModTime: created, Typeflag: tar.TypeReg}
		// Writes to a bytes.Buffer do not fail.
		_ = tw.WriteHeader(hdr)
		_, _ = tw.Write([]byte(f.data))
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

// PushChart pushes a packaged chart (.tgz) to repository as `helm push` stores it: tagged with
// the chart's version, a config of media type application/vnd.cncf.helm.config.v1+json holding
// Chart.yaml's metadata as JSON, and one layer application/vnd.cncf.helm.chart.content.v1.tar+gzip,
// the .tgz. It returns the manifest's descriptor, whose digest an OCIPull reports once pulled.
// Pull it with `helm pull oci://<Addr>/<repository> --version <version>`.
func (r *Registry) PushChart(ctx context.Context, repository string, tgz []byte) (ocispec.Descriptor, error) {
	chart, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push chart to %s: %w", repository, err)
	}
	meta := chart.Metadata
	config, err := json.Marshal(meta)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	a := &Artifact{store: memory.New()}
	layer, err := oras.PushBytes(ctx, a.store, helmregistry.ChartLayerMediaType, tgz)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	configDesc, err := oras.PushBytes(ctx, a.store, helmregistry.ConfigMediaType, config)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	a.Layers = []ocispec.Descriptor{layer}
	a.Manifest, err = oras.PackManifest(ctx, a.store, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor: &configDesc,
		Layers:           a.Layers,
		ManifestAnnotations: map[string]string{
			ocispec.AnnotationTitle:   meta.Name,
			ocispec.AnnotationVersion: meta.Version,
			ocispec.AnnotationCreated: ArtifactCreated,
		},
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	// OCI tags cannot hold "+", which SemVer build metadata uses: helm push writes "_".
	return a.Manifest, r.PushArtifact(ctx, repository, strings.ReplaceAll(meta.Version, "+", "_"), a)
}

// PushChartT is PushChart for a test, failing it on error.
func (r *Registry) PushChartT(tb testing.TB, repository string, tgz []byte) ocispec.Descriptor {
	tb.Helper()
	m, err := r.PushChart(tb.Context(), repository, tgz)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
