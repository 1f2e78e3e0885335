package provider

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
)

// TestExamplesNameSeededClusters checks that the examples and guides run against the hub of
// `make demo`: every cluster and cluster group they name is one that hack/demohub seeds
// (internal/demoseed). It reads every .tf file under examples/ and the ```terraform blocks of
// the guide templates and of README.md, and checks
//
//   - each element of `cluster_names = [...]` and of `cluster_groups = [...]`, as attributes of
//     blocks and as keys of object values (routes passed to resolve_route);
//   - `cluster = "..."` of each `data "fleet_oci_chain"` block;
//   - the cluster object passed to provider::fleet::resolve_route: its `name`, and its `labels`
//     against the seeded cluster's.
//
// Values must be literals, so that this test can read them. It needs no hub.
func TestExamplesNameSeededClusters(t *testing.T) {
	root := filepath.Join("..", "..")
	sources := exampleSources(t, root)
	if len(sources) == 0 {
		t.Fatal("found no example configuration")
	}
	c := &seedChecker{counts: map[string]int{}}
	for _, s := range sources {
		f, diags := hclsyntax.ParseConfig(s.src, s.name, s.start)
		if diags.HasErrors() {
			t.Errorf("%s does not parse: %v", s.name, diags)
			continue
		}
		c.body(f.Body.(*hclsyntax.Body), nil)
	}
	for _, e := range c.errs {
		t.Error(e)
	}
	// Each kind of reference occurs in the examples today; finding none means this test reads
	// them wrongly, not that they are right.
	for _, kind := range []string{"cluster_names", "cluster_groups", "fleet_oci_chain cluster", "resolve_route cluster",
		"fleet_cluster_join cluster", "fleet_storage_site_deployment cluster", "fleet_oci_pull_status cluster", "fleet_app cluster"} {
		if c.counts[kind] == 0 {
			t.Errorf("found no %s in the examples: the test no longer finds what it checks", kind)
		}
	}
	t.Logf("checked %v in %d sources", c.counts, len(sources))
}

// exampleSource is one piece of Terraform configuration: a file, or a block of a document.
type exampleSource struct {
	name  string // path relative to the repository root
	src   []byte
	start hcl.Pos // where src starts in that file
}

func exampleSources(t *testing.T, root string) []exampleSource {
	t.Helper()
	var out []exampleSource
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".tf" {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, exampleSource{rel, src, hcl.InitialPos})
		return nil
	})
	if err != nil {
		t.Fatalf("reading examples: %v", err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "templates", "guides", "*.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, p := range docs {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, terraformBlocks(rel, string(text))...)
	}
	return out
}

// terraformBlocks returns the ```terraform fenced blocks of a Markdown document. Blocks fenced
// as hcl (the CLI configuration, which is not Terraform language) are left out.
func terraformBlocks(name, text string) []exampleSource {
	var out []exampleSource
	var block []string
	start, in := 0, false
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```terraform":
			in, start, block = true, i+2, nil // the block's first line is line i+2, counting from 1
		case in && trimmed == "```":
			in = false
			out = append(out, exampleSource{name, []byte(strings.Join(block, "\n") + "\n"), hcl.Pos{Line: start, Column: 1}})
		case in:
			// A guide is a Go template, which writes "{{" as {{"{{"}}: read it as the page shows it.
			block = append(block, strings.ReplaceAll(line, `{{"{{"}}`, "{{"))
		}
	}
	return out
}

// seedChecker collects what the examples name that the demo seed lacks.
type seedChecker struct {
	errs   []string
	counts map[string]int
}

func (c *seedChecker) errorf(rng hcl.Range, format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf("%s: %s", rng, fmt.Sprintf(format, args...)))
}

// clusterArgument are the blocks whose `cluster` argument names a ManagedCluster.
var clusterArgument = map[string]bool{
	"data fleet_oci_chain": true, "resource fleet_cluster_join": true, "resource fleet_storage_site_deployment": true,
	"data fleet_oci_pull_status": true, "resource fleet_app": true,
}

func (c *seedChecker) body(b *hclsyntax.Body, block *hclsyntax.Block) {
	attrs := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].SrcRange.Start.Byte < attrs[j].SrcRange.Start.Byte })
	for _, a := range attrs {
		switch {
		case a.Name == "cluster_names" || a.Name == "cluster_groups":
			c.list(a.Name, a.Expr)
		case a.Name == "cluster" && block != nil && len(block.Labels) == 2 && block.Labels[0] == "fleet_app" && isJoinCluster(a.Expr):
			c.counts["fleet_app cluster"]++ // the join's literal cluster is checked where the join is declared
		case a.Name == "cluster" && block != nil && len(block.Labels) == 2 && clusterArgument[block.Type+" "+block.Labels[0]]:
			if name, ok := c.literal(a.Expr); ok {
				c.counts[block.Labels[0]+" cluster"]++
				c.cluster(a.Expr.Range(), name)
			}
		}
		_ = hclsyntax.VisitAll(a.Expr, c.visit)
	}
	for _, blk := range b.Blocks {
		c.body(blk.Body, blk)
	}
}

// visit checks routes written as object values and the cluster argument of resolve_route.
func (c *seedChecker) visit(n hclsyntax.Node) hcl.Diagnostics {
	switch e := n.(type) {
	case *hclsyntax.ObjectConsExpr:
		for _, item := range e.Items {
			if key := objectKey(item.KeyExpr); key == "cluster_names" || key == "cluster_groups" {
				c.list(key, item.ValueExpr)
			}
		}
	case *hclsyntax.FunctionCallExpr:
		if e.Name == "provider::fleet::resolve_route" && len(e.Args) >= 2 {
			c.resolveRouteCluster(e.Args[1])
		}
	}
	return nil
}

// list checks the elements of cluster_names or cluster_groups.
func (c *seedChecker) list(attr string, expr hclsyntax.Expression) {
	tuple, ok := expr.(*hclsyntax.TupleConsExpr)
	if !ok {
		c.errorf(expr.Range(), "%s is not a literal list, so it cannot be checked against the demo seed", attr)
		return
	}
	for _, el := range tuple.Exprs {
		name, ok := c.literal(el)
		if !ok {
			continue
		}
		c.counts[attr]++
		if attr == "cluster_groups" {
			if !demoseed.HasSet(name) {
				c.errorf(el.Range(), "cluster group %q is not a cluster set of the demo seed (internal/demoseed: %s)",
					name, strings.Join(demoseed.Sets, ", "))
			}
			continue
		}
		c.cluster(el.Range(), name)
	}
}

// resolveRouteCluster checks the cluster object passed to resolve_route.
func (c *seedChecker) resolveRouteCluster(expr hclsyntax.Expression) {
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		c.errorf(expr.Range(), "the cluster passed to resolve_route is not a literal object, so it cannot be checked against the demo seed")
		return
	}
	var name string
	var labels *hclsyntax.ObjectConsExpr
	var nameRange hcl.Range
	for _, item := range obj.Items {
		switch objectKey(item.KeyExpr) {
		case "name":
			name, ok = c.literal(item.ValueExpr)
			if !ok {
				return
			}
			nameRange = item.ValueExpr.Range()
		case "labels":
			if labels, ok = item.ValueExpr.(*hclsyntax.ObjectConsExpr); !ok {
				c.errorf(item.ValueExpr.Range(), "labels of the cluster passed to resolve_route are not a literal object")
				return
			}
		}
	}
	if name == "" {
		c.errorf(expr.Range(), "the cluster passed to resolve_route has no name")
		return
	}
	c.counts["resolve_route cluster"]++
	seeded, ok := c.cluster(nameRange, name)
	if !ok || labels == nil {
		return
	}
	for _, item := range labels.Items {
		key := objectKey(item.KeyExpr)
		value, ok := c.literal(item.ValueExpr)
		if !ok {
			continue
		}
		if got, has := seeded.Labels[key]; !has || got != value {
			c.errorf(item.ValueExpr.Range(), "label %s=%q of cluster %q: the demo seed gives it labels %v", key, value, name, seeded.Labels)
		}
	}
}

// cluster checks that a cluster is seeded and returns it.
func (c *seedChecker) cluster(rng hcl.Range, name string) (demoseed.Cluster, bool) {
	seeded, ok := demoseed.Find(name)
	if !ok {
		names := make([]string, len(demoseed.Clusters))
		for i, sc := range demoseed.Clusters {
			names[i] = sc.Name
		}
		c.errorf(rng, "cluster %q is not a cluster of the demo seed (internal/demoseed: %s): name a seeded one or add it to the seed",
			name, strings.Join(names, ", "))
	}
	return seeded, ok
}

// literal returns the value of a string literal, or records that it is not one.
func (c *seedChecker) literal(expr hclsyntax.Expression) (string, bool) {
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		c.errorf(expr.Range(), "not a literal string, so it cannot be checked against the demo seed")
		return "", false
	}
	return v.AsString(), true
}

// isJoinCluster tells whether expr is fleet_cluster_join.<label>.cluster: an app that names its
// cluster through its join, as the examples do so that Terraform joins the cluster first.
func isJoinCluster(expr hclsyntax.Expression) bool {
	st, ok := expr.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(st.Traversal) != 3 || st.Traversal.RootName() != "fleet_cluster_join" {
		return false
	}
	attr, ok := st.Traversal[2].(hcl.TraverseAttr)
	return ok && attr.Name == "cluster"
}

// objectKey returns the key of an object item: a bare name or a literal string, else "".
func objectKey(expr hclsyntax.Expression) string {
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return ""
	}
	return v.AsString()
}
