package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// TestEveryFeatureIsDocumented checks that each resource, data source and function has an
// example and generated docs that are current with its description (make generate).
func TestEveryFeatureIsDocumented(t *testing.T) {
	ctx := context.Background()
	p := New("test")().(*fleetProvider)
	root := filepath.Join("..", "..")
	type feature struct {
		name, description, doc string
		examples               []string
	}
	var features []feature

	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "fleet"}, &meta)
		var s resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &s)
		features = append(features, feature{meta.TypeName, s.Schema.MarkdownDescription,
			filepath.Join("docs", "resources", strings.TrimPrefix(meta.TypeName, "fleet_")+".md"),
			[]string{filepath.Join("examples", "resources", meta.TypeName, "resource.tf"), filepath.Join("examples", "resources", meta.TypeName, "import.sh"),
				filepath.Join("examples", "resources", meta.TypeName, "import-by-identity.tf")}})
	}
	for _, newDataSource := range p.DataSources(ctx) {
		d := newDataSource()
		var meta datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "fleet"}, &meta)
		var s datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &s)
		features = append(features, feature{meta.TypeName, s.Schema.MarkdownDescription,
			filepath.Join("docs", "data-sources", strings.TrimPrefix(meta.TypeName, "fleet_")+".md"),
			[]string{filepath.Join("examples", "data-sources", meta.TypeName, "data-source.tf")}})
	}
	for _, newFunction := range p.Functions(ctx) {
		f := newFunction()
		var meta function.MetadataResponse
		f.Metadata(ctx, function.MetadataRequest{}, &meta)
		var def function.DefinitionResponse
		f.Definition(ctx, function.DefinitionRequest{}, &def)
		features = append(features, feature{meta.Name, def.Definition.MarkdownDescription,
			filepath.Join("docs", "functions", meta.Name+".md"),
			[]string{filepath.Join("examples", "functions", meta.Name, "function.tf")}})
	}
	if len(features) < 5 {
		t.Fatalf("found %d features, want the 2 resources, 2 data sources and 1 function at least", len(features))
	}
	for _, f := range features {
		if len(f.description) < 80 {
			t.Errorf("%s: description %q is too short to tell a newcomer what it is", f.name, f.description)
		}
		for _, ex := range f.examples {
			if _, err := os.Stat(filepath.Join(root, ex)); err != nil {
				t.Errorf("%s: example %s is missing", f.name, ex)
			}
		}
		doc, err := os.ReadFile(filepath.Join(root, f.doc))
		if err != nil {
			t.Errorf("%s: %v (run make generate)", f.name, err)
			continue
		}
		firstLine := strings.SplitN(f.description, "\n", 2)[0]
		if !strings.Contains(string(doc), firstLine) {
			t.Errorf("%s: %s does not carry the current description (run make generate)", f.name, f.doc)
		}
		if strings.HasPrefix(f.doc, filepath.Join("docs", "resources")) && !strings.Contains(string(doc), "identity = { workspace = ") {
			t.Errorf("%s: %s does not show import by identity (run make generate)", f.name, f.doc)
		}
	}
}
