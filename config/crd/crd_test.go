package crd

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestCRDs(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range crds {
		if got[c.Name] {
			t.Errorf("%s is embedded twice", c.Name)
		}
		got[c.Name] = true
		if len(c.Spec.Versions) == 0 {
			t.Errorf("%s has no versions", c.Name)
		}
	}
	for _, name := range []string{
		"managedclusters.cluster.open-cluster-management.io",
		"managedclustersets.cluster.open-cluster-management.io",
		"managedclustersetbindings.cluster.open-cluster-management.io",
		"placements.cluster.open-cluster-management.io",
		"placementdecisions.cluster.open-cluster-management.io",
		"manifestworks.work.open-cluster-management.io",
	} {
		if !got[name] {
			t.Errorf("missing %s; embedded: %v", name, got)
		}
	}
	if crds[0].Spec.Group != "cluster.open-cluster-management.io" {
		t.Errorf("first CRD is %s, want OCM's first", crds[0].Name)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "leading separator", in: "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: as.x.io\n", want: []string{"as.x.io"}},
		{name: "two documents", in: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: as.x.io\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bs.x.io\n", want: []string{"as.x.io", "bs.x.io"}},
		{name: "other kind", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", wantErr: true},
		{name: "bad yaml", in: "metadata: [", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crds, err := Parse([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			var names []string
			for _, c := range crds {
				names = append(names, c.Name)
			}
			if len(names) != len(tc.want) {
				t.Fatalf("names = %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Errorf("names = %v, want %v", names, tc.want)
				}
			}
		})
	}
}

// routeSchema returns the spec schema of the OCIStorageRoute CRD as embedded.
func routeSchema(t *testing.T) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == "ocistorageroutes.fleet.umkim.io" {
			if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Schema == nil {
				t.Fatalf("%s: want one version with a schema, got %+v", c.Name, c.Spec.Versions)
			}
			return c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		}
	}
	t.Fatal("no ocistorageroutes.fleet.umkim.io CRD embedded")
	return apiextensionsv1.JSONSchemaProps{}
}

// replicationWaitPattern compiles spec.replicationWait's pattern the way kube-apiserver does:
// with Go's regexp.
func replicationWaitPattern(t *testing.T) *regexp.Regexp {
	t.Helper()
	p := routeSchema(t).Properties["replicationWait"].Pattern
	if p == "" {
		t.Fatal("spec.replicationWait has no pattern: the API server would accept any string, e.g. 1d")
	}
	return regexp.MustCompile(p)
}

// goAccepts is what the pattern must match: what time.ParseDuration reads as zero or more,
// written without a minus sign. Go reads "-0s" (and "-0.5ns") as zero; the pattern refuses any
// minus sign rather than spell out negative zeros.
func goAccepts(s string) bool {
	d, err := time.ParseDuration(s)
	return err == nil && d >= 0 && !strings.HasPrefix(s, "-")
}

func TestReplicationWaitPattern(t *testing.T) {
	re := replicationWaitPattern(t)
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"0s", true}, {"0", true}, {"+0", true}, {"90s", true}, {"10m", true}, {"1h30m", true},
		{"1.5h", true}, {"300ms", true}, {"1h1h", true}, {"30m1h", true}, {".5s", true}, {"1.s", true},
		{"+5m", true}, {"007s", true}, {"2us", true}, {"2µs", true}, {"2μs", true}, {"1ns", true},
		{"1h30m0s", true}, {"1.000000001s", true}, {"24h", true},
		{"1d", false}, {"-5m", false}, {"10", false}, {"abc", false}, {"", false}, {"00", false},
		{"-0s", false}, {"-0", false}, {"+", false}, {"s", false}, {".s", false}, {"1..5s", false},
		{"1.5.5s", false}, {"1hm", false}, {"1H", false}, {"1 h", false}, {" 1h", false}, {"1h ", false},
		{"1h\n", false}, {"10M", false}, {"1w", false}, {"1y", false}, {"P1D", false}, {"1e3s", false},
		{"1,5h", false}, {"++1s", false}, {"+-1s", false}, {"1sec", false}, {"1mss", false},
	} {
		if got := re.MatchString(tc.in); got != tc.want {
			t.Errorf("pattern matches %q = %v, want %v", tc.in, got, tc.want)
		}
		if got := goAccepts(tc.in); got != tc.want && tc.in != "-0s" && tc.in != "-0" {
			t.Errorf("table is wrong: time.ParseDuration accepts %q as non-negative = %v, the table says %v", tc.in, got, tc.want)
		}
	}

	// Every string of up to five characters over the duration alphabet, plus a few letters
	// that are not units: the pattern and Go must agree on each.
	alphabet := []string{"0", "1", "9", ".", "+", "-", "h", "m", "s", "n", "u", "µ", "μ", "d", " "}
	var walk func(prefix string, n int)
	checked := 0
	walk = func(prefix string, n int) {
		if strings.HasPrefix(prefix, "-") {
			if re.MatchString(prefix) {
				t.Errorf("pattern matches %q, which has a minus sign", prefix)
			}
		} else if got, want := re.MatchString(prefix), goAccepts(prefix); got != want {
			t.Errorf("pattern matches %q = %v, but time.ParseDuration accepts it = %v", prefix, got, want)
		}
		checked++
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			walk(prefix+c, n-1)
		}
	}
	walk("", 5)
	if checked < 750000 {
		t.Fatalf("checked only %d strings", checked)
	}

	// What Go writes, e.g. a metav1.Duration marshalled by a typed client, must be accepted.
	for _, d := range []time.Duration{0, 1, 1500, 1500 * time.Microsecond, 90 * time.Second,
		90 * time.Minute, 36 * time.Hour, 1<<63 - 1} {
		if !re.MatchString(d.String()) {
			t.Errorf("pattern rejects %q, time.Duration(%d).String()", d.String(), int64(d))
		}
	}
}

func TestRouteSchema(t *testing.T) {
	spec := routeSchema(t)
	name := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

	// With listType=set, elements another field manager adds (kubectl patch) survive the
	// provider's server-side apply and the route never converges; atomic lists are replaced.
	for _, field := range []string{"clusterNames", "clusterGroups", "clusterSelectors", "registries"} {
		p := spec.Properties[field]
		if got := p.XListType; got == nil || *got != "atomic" {
			t.Errorf("spec.%s: x-kubernetes-list-type %s, want atomic", field, deref(got))
		}
	}
	for _, field := range []string{"clusterNames", "clusterGroups", "registries"} {
		p := spec.Properties[field]
		if p.Items == nil || p.Items.Schema == nil {
			t.Fatalf("spec.%s has no items schema", field)
		}
		items := p.Items.Schema
		if items.Pattern != name.String() {
			t.Errorf("spec.%s items pattern %q, want the DNS subdomain pattern %q", field, items.Pattern, name)
		}
		if got := items.MaxLength; got == nil || *got != 253 {
			t.Errorf("spec.%s items maxLength %s, want 253", field, deref(got))
		}
	}
	for in, want := range map[string]bool{
		"edge-1": true, "berlin.edge-1": true, "a": true, "0": true,
		"Edge-1": false, "edge_1": false, "-edge": false, "edge-": false, "edge..1": false, "": false, ".edge": false,
	} {
		if got := name.MatchString(in); got != want {
			t.Errorf("name pattern matches %q = %v, want %v", in, got, want)
		}
	}

	if len(spec.XValidations) != 1 {
		t.Fatalf("spec has %d CEL rules, want 1 (default route names no clusters): %+v", len(spec.XValidations), spec.XValidations)
	}
	rule := spec.XValidations[0]
	for _, field := range []string{"self.default", "self.clusterNames", "self.clusterGroups", "self.clusterSelectors"} {
		if !strings.Contains(rule.Rule, "has("+field+")") {
			t.Errorf("CEL rule %q does not guard %s with has(): an absent field would be an evaluation error", rule.Rule, field)
		}
	}
	if !strings.Contains(rule.Message, "default route") {
		t.Errorf("CEL rule message %q does not say it is about the default route", rule.Message)
	}
}

func deref[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
