package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestAccExamplesWarnings plans every example configuration on a hub seeded as `make demo` seeds
// it (internal/demoseed, workspace fleet-default) with the CLI under test, and checks the exact
// warnings each shows, as "<address>: <summary> @<attribute>" with their multiplicity: the
// examples are written as the docs recommend, so each warning left is one the example is about.
//
//   - examples/resources, examples/data-sources and examples/functions, which refer to one
//     another, as one configuration, at the default parallelism and at -parallelism=1;
//   - the guides' examples (the ```terraform blocks of each guide, one configuration a guide);
//   - examples/quickstart as `make demo` runs it: apply, then the two plans of a staging route,
//     shadowed at priority 50 and capturing eu-staging-01 at 5, then destroy;
//   - examples/local-fleet, local-app and local-storage, planned with the variables the demo gives.
//
// examples/provider is left out: it configures a connection to another hub.
func TestAccExamplesWarnings(t *testing.T) {
	seedDemoHub(t)
	rec := &diagRecorder{paths: map[string]string{}}
	w := newCLIWorkdirServing(t, rec.wrap)
	root := filepath.Join("..", "..")

	// The docs' examples. The registry example reads its CA bundle from a file.
	ca, err := testbed.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w.dir, "stores-ca.pem"), ca.PEM)
	writeFile(t, filepath.Join(w.dir, "cosign.pub"), testbed.NewCosignKey(t).PublicPEM) // the signed route's key
	var docs []string
	for _, glob := range []string{"resources/*/resource.tf", "data-sources/*/data-source.tf", "functions/*/function.tf"} {
		files, _ := filepath.Glob(filepath.Join(root, "examples", glob))
		for _, f := range files {
			docs = append(docs, exampleConfig(t, f))
		}
	}
	if len(docs) < 13 {
		t.Fatalf("found %d example files, want the 8 resources', 4 data sources' and 1 function's", len(docs))
	}
	// Only the CLI's own: the check blocks of the data sources' examples read what this plan
	// creates, so the CLI evaluates them at apply and says so.
	docsWant := []string{
		"fleet_oci_route.signed_eu: Route verifies signatures @verify", // the example is about it
		": Check block assertion known after apply @",
		": Check block assertion known after apply @",
		": Check block assertion known after apply @",
	}
	passwords := []string{"-var", "harbor_push_password=push", "-var", "harbor_pull_password=pull"}
	for _, args := range [][]string{nil, {"-parallelism=1"}} {
		w.write(strings.Join(docs, "\n"))
		got, failed := w.diags(append(append([]string{"plan"}, passwords...), args...)...)
		expectExactWarnings(t, "examples/{resources,data-sources,functions} "+strings.Join(args, " "), rec, got, failed, docsWant)
	}

	// The guides' examples.
	guides, _ := filepath.Glob(filepath.Join(root, "templates", "guides", "*.tmpl"))
	for _, g := range guides {
		text, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		var blocks []string
		for _, b := range terraformBlocks(g, string(text)) {
			blocks = append(blocks, string(b.src))
		}
		if len(blocks) == 0 {
			continue
		}
		w.write(strings.Join(blocks, "\n"))
		got, failed := w.diags("plan")
		expectExactWarnings(t, filepath.Base(g), rec, got, failed, nil)
	}

	// The quick start, as make demo runs it.
	w.write(exampleConfig(t, filepath.Join(root, "examples", "quickstart", "main.tf")))
	got, failed := w.diags("apply", "-auto-approve")
	expectExactWarnings(t, "quickstart: apply", rec, got, failed, nil)
	got, failed = w.diags("plan", "-var", "staging_route_priority=50")
	expectExactWarnings(t, "quickstart: plan -var staging_route_priority=50", rec, got, failed, []string{
		"fleet_oci_route.staging[0]: Route shadowed @",
	})
	got, failed = w.diags("plan", "-var", "staging_route_priority=5")
	expectExactWarnings(t, "quickstart: plan -var staging_route_priority=5", rec, got, failed, []string{
		"fleet_oci_route.staging[0]: Clusters change route @",
	})
	w.destroy()

	// The local fleet's stories, planned on the seeded hub (make demo applies them on the fleet
	// it starts, with its registries and agents).
	fleetVars := []string{"-var", "source_address=127.0.0.1:5001", "-var", "mirror_address=127.0.0.1:5002",
		"-var", "source_push_password=a", "-var", "source_pull_password=b", "-var", "mirror_push_password=c", "-var", "mirror_pull_password=d"}
	for _, v := range []struct {
		example string
		args    []string
		want    []string
	}{
		{"local-fleet", fleetVars, nil},
		// Step 4 of the pull story turns verification on; step 3's wait below the mirror's lag
		// warns only on the demo's hub, where the lag was measured.
		{"local-fleet", append(slices.Clone(fleetVars), "-var", "cosign_public_key="+testbed.NewCosignKey(t).PublicPEM, "-var", "replication_wait=1s"),
			[]string{"fleet_oci_route.eu_01: Route verifies signatures @verify"}},
		{"local-app", nil, nil},
		{"local-storage", nil, nil},
	} {
		w.write(exampleConfig(t, filepath.Join(root, "examples", v.example, "main.tf")))
		got, failed := w.diags(append([]string{"plan"}, v.args...)...)
		expectExactWarnings(t, "examples/"+v.example, rec, got, failed, v.want)
	}
}

// seedDemoHub adds internal/demoseed's sample fleet to the test's hub, as `make demo` does, and
// removes the cluster-scoped part when the test ends.
func seedDemoHub(t *testing.T) {
	t.Helper()
	c, err := client.New(testRESTConfig(t), client.Options{Scheme: testbed.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := demoseed.Seed(context.Background(), c, demoseed.Workspace); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range demoseed.Objects(demoseed.Workspace) {
			if o.GetNamespace() == "" && o.GetObjectKind().GroupVersionKind().Kind == "Namespace" {
				continue
			}
			if err := c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clean up %T %s: %v", o, o.GetName(), err)
			}
		}
	})
}

// exampleConfig is an example file without its terraform block: the test's working directory
// declares the provider under the address it is served at.
func exampleConfig(t *testing.T, path string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclwrite.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", path, diags)
	}
	for _, b := range f.Body().Blocks() {
		if b.Type() == "terraform" {
			f.Body().RemoveBlock(b)
		}
	}
	return string(f.Bytes())
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// expectExactWarnings checks that a command did not fail and that its warnings, as
// "<address>: <summary> @<attribute path>", are exactly want (in any order, with multiplicity).
func expectExactWarnings(t *testing.T, step string, rec *diagRecorder, got []cliDiag, failed bool, want []string) {
	t.Helper()
	if failed {
		t.Errorf("%s: failed: %v", step, got)
		return
	}
	var have []string
	for _, d := range got {
		if d.Severity == "warning" {
			have = append(have, fmt.Sprintf("%s: %s @%s", d.Address, d.Summary, rec.path(d.Summary, d.Detail)))
		}
	}
	slices.Sort(have)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		var details []string
		for _, d := range got {
			details = append(details, d.String())
		}
		t.Errorf("%s: warnings\n  %s\nwant\n  %s\nall diagnostics:\n%s", step, strings.Join(have, "\n  "), strings.Join(want, "\n  "), strings.Join(details, "\n"))
	}
}

// diagRecorder records the attribute path of every diagnostic the provider returns, by summary
// and detail, since the CLIs' JSON output does not carry it.
type diagRecorder struct {
	mu    sync.Mutex
	paths map[string]string
}

func (r *diagRecorder) wrap(s tfprotov6.ProviderServer) tfprotov6.ProviderServer {
	return recordingServer{s, r}
}

func (r *diagRecorder) add(diags []*tfprotov6.Diagnostic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range diags {
		r.paths[d.Summary+"\x00"+d.Detail] = attributePath(d.Attribute)
	}
}

func (r *diagRecorder) path(summary, detail string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paths[summary+"\x00"+detail]
}

// attributePath writes p as Terraform does: registries[0], cluster_selectors[1].match_labels["a"].
func attributePath(p *tftypes.AttributePath) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for _, s := range p.Steps() {
		switch s := s.(type) {
		case tftypes.AttributeName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(s))
		case tftypes.ElementKeyInt:
			fmt.Fprintf(&b, "[%d]", int64(s))
		case tftypes.ElementKeyString:
			fmt.Fprintf(&b, "[%q]", string(s))
		default:
			b.WriteString("[…]")
		}
	}
	return b.String()
}

// recordingServer is the provider's server, recording the diagnostics of the calls that check.
type recordingServer struct {
	tfprotov6.ProviderServer
	rec *diagRecorder
}

func (s recordingServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateResourceConfig(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateDataResourceConfig(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp, err := s.ProviderServer.ApplyResourceChange(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp, err := s.ProviderServer.ReadResource(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	resp, err := s.ProviderServer.ReadDataSource(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}
