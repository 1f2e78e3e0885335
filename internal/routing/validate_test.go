package routing_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// problems renders Problems as "path: message" lines, route-level problems as ": message".
func problems(ps routing.Problems, route string, t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range ps {
		if p.Route != route {
			t.Errorf("problem %q is on route %q, want %q", p.Message, p.Route, route)
		}
		out = append(out, p.Path.String()+": "+p.Message)
	}
	return out
}

func TestValidateRoute(t *testing.T) {
	eu := withSelectors(route("r", 1), sel(ml("region", "eu")))
	withChain := func(r routing.Route, regs ...string) routing.Route {
		r.Registries = regs
		return r
	}
	expr := func(e ...routing.Requirement) routing.Route { return withSelectors(route("r", 1), sel(nil, e...)) }
	const keyErr = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	const valErr = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"

	tests := []struct {
		name  string
		route routing.Route
		want  []string
	}{
		{"valid selector route", eu, nil},
		{"valid names route", withNames(route("r", 1), "a", "b"), nil},
		{"valid groups route", withGroups(route("r", 1), "g"), nil},
		{"valid default route", asDefault(route("r", 0)), nil},
		{"valid empty selector", withSelectors(route("r", 1), sel(nil)), nil},
		{"valid prefixed key", withSelectors(route("r", 1), sel(ml("topology.kubernetes.io/region", "eu-west-1"))), nil},
		{"valid empty label value", withSelectors(route("r", 1), sel(ml("edge", ""))), nil},
		{"valid every operator", expr(req("a", routing.In, "x"), req("b", routing.NotIn, "y"), req("c", routing.Exists), req("d", routing.DoesNotExist)), nil},
		{"valid replication wait", func() routing.Route { r := eu; r.ReplicationWait = time.Minute; return r }(), nil},
		{"empty name", withNames(route("", 1), "a"), []string{"name: must not be empty"}},
		{"no criteria", route("r", 1), []string{": a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors"}},
		{"empty criteria lists", withSelectors(withGroups(withNames(route("r", 1)))), []string{": a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors"}},
		{"default with names", asDefault(withNames(route("r", 1), "a")), []string{"cluster_names: a default route takes no criteria: it catches every cluster no other route matches"}},
		{"default with groups", asDefault(withGroups(route("r", 1), "g")), []string{"cluster_groups: a default route takes no criteria: it catches every cluster no other route matches"}},
		{"default with selectors", asDefault(withSelectors(route("r", 1), sel(nil))), []string{"cluster_selectors: a default route takes no criteria: it catches every cluster no other route matches"}},
		{"default with every criterion", asDefault(withSelectors(withGroups(withNames(route("r", 1), "a"), "g"), sel(nil))), []string{
			"cluster_names: a default route takes no criteria: it catches every cluster no other route matches",
			"cluster_groups: a default route takes no criteria: it catches every cluster no other route matches",
			"cluster_selectors: a default route takes no criteria: it catches every cluster no other route matches",
		}},
		{"empty cluster name", withNames(route("r", 1), "a", ""), []string{"cluster_names[1]: must not be empty"}},
		{"repeated cluster name", withNames(route("r", 1), "a", "b", "a"), []string{`cluster_names[2]: cluster "a" is already listed at cluster_names[0]`}},
		{"empty group", withGroups(route("r", 1), ""), []string{"cluster_groups[0]: must not be empty"}},
		{"repeated group", withGroups(route("r", 1), "g", "g"), []string{`cluster_groups[1]: cluster group "g" is already listed at cluster_groups[0]`}},
		{"empty chain", withChain(eu), []string{"registries: must name at least one registry"}},
		{"empty registry name", withChain(eu, "a", ""), []string{"registries[1]: must not be empty"}},
		{"duplicate registry", withChain(eu, "harbor-eu", "harbor-central", "harbor-eu"), []string{`registries[2]: registry "harbor-eu" is already listed at registries[0]`}},
		{"duplicate registry twice", withChain(eu, "a", "a", "a"), []string{`registries[1]: registry "a" is already listed at registries[0]`, `registries[2]: registry "a" is already listed at registries[0]`}},
		{"negative replication wait", func() routing.Route { r := eu; r.ReplicationWait = -time.Second; return r }(), []string{"replication_wait: must not be negative, got -1s"}},
		{"bad match labels key", withSelectors(route("r", 1), sel(ml("bad key", "x"))), []string{`cluster_selectors[0].match_labels["bad key"]: invalid label key "bad key": ` + keyErr}},
		{"bad match labels prefix", withSelectors(route("r", 1), sel(ml("Bad_Prefix/k", "x"))), []string{`cluster_selectors[0].match_labels["Bad_Prefix/k"]: invalid label key "Bad_Prefix/k": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"empty match labels key", withSelectors(route("r", 1), sel(ml("", "x"))), []string{`cluster_selectors[0].match_labels[""]: invalid label key "": name part must be non-empty; ` + keyErr}},
		{"bad match labels value", withSelectors(route("r", 1), sel(nil), sel(ml("region", "eu west"))), []string{`cluster_selectors[1].match_labels["region"]: invalid label value "eu west": ` + valErr}},
		{"too long label value", withSelectors(route("r", 1), sel(ml("region", strings.Repeat("a", 64)))), []string{`cluster_selectors[0].match_labels["region"]: invalid label value "` + strings.Repeat("a", 64) + `": must be no more than 63 bytes`}},
		{"bad expression key", expr(req("-k", routing.Exists)), []string{`cluster_selectors[0].match_expressions[0].key: invalid label key "-k": ` + keyErr}},
		{"bad expression value", expr(req("k", routing.In, "ok", "not ok")), []string{`cluster_selectors[0].match_expressions[0].values[1]: invalid label value "not ok": ` + valErr}},
		{"unknown operator", expr(req("k", routing.In, "a"), req("k", "Gt", "1")), []string{`cluster_selectors[0].match_expressions[1].operator: unsupported operator "Gt"; use In, NotIn, Exists or DoesNotExist`}},
		{"operator is case sensitive", expr(req("k", "in", "a")), []string{`cluster_selectors[0].match_expressions[0].operator: unsupported operator "in"; use In, NotIn, Exists or DoesNotExist`}},
		{"empty operator", expr(req("k", "")), []string{`cluster_selectors[0].match_expressions[0].operator: unsupported operator ""; use In, NotIn, Exists or DoesNotExist`}},
		{"in without values", expr(req("k", routing.In)), []string{"cluster_selectors[0].match_expressions[0].values: operator In needs at least one value"}},
		{"not in without values", expr(req("k", routing.NotIn)), []string{"cluster_selectors[0].match_expressions[0].values: operator NotIn needs at least one value"}},
		{"exists with values", expr(req("k", routing.Exists, "a")), []string{"cluster_selectors[0].match_expressions[0].values: operator Exists takes no values"}},
		{"does not exist with values", expr(req("k", routing.DoesNotExist, "a", "b")), []string{"cluster_selectors[0].match_expressions[0].values: operator DoesNotExist takes no values"}},
		{"several problems in field order", func() routing.Route {
			r := withSelectors(route("", 1), sel(ml("b/", "x")))
			r.Registries = nil
			return r
		}(), []string{
			"name: must not be empty",
			`cluster_selectors[0].match_labels["b/"]: invalid label key "b/": name part must be non-empty; ` + keyErr,
			"registries: must name at least one registry",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := problems(routing.ValidateRoute(tt.route), tt.route.Name, t); !slices.Equal(got, tt.want) {
				t.Fatalf("ValidateRoute =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestValidate(t *testing.T) {
	a := withNames(route("a", 10), "x")
	b := withNames(route("b", 10), "y")
	tests := []struct {
		name   string
		routes []routing.Route
		want   []string // Problem.Error()
	}{
		{"no routes", nil, nil},
		{"a shared priority is a conflict, not a problem", []routing.Route{a, b}, nil},
		{"two defaults are a conflict, not a problem", []routing.Route{asDefault(route("d1", 0)), asDefault(route("d2", 1))}, nil},
		{"duplicate route name", []routing.Route{a, withNames(route("a", 11), "y")}, []string{
			`route "a": name: more than one route has this name; route names must be unique`,
		}},
		{"per-route problems come first", []routing.Route{withNames(route("e", 1)), a, a}, []string{
			`route "e": a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors`,
			`route "a": name: more than one route has this name; route names must be unique`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range routing.Validate(tt.routes) {
				got = append(got, p.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Validate =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	a := withNames(route("a", 10), "x")
	b := withNames(route("b", 10), "y")
	c := withNames(route("c", 10), "z")
	tests := []struct {
		name   string
		routes []routing.Route
		want   []string // Conflict.String()
	}{
		{"distinct priorities", []routing.Route{a, withNames(route("b", 11), "y")}, nil},
		{"priority tie, in any input order", []routing.Route{b, a}, []string{
			`routes "a", "b" share priority 10; priorities must be unique, so "a" (first by name) is evaluated first`,
		}},
		{"three-way tie", []routing.Route{c, a, b}, []string{
			`routes "a", "b", "c" share priority 10; priorities must be unique, so "a" (first by name) is evaluated first`,
		}},
		{"default may share a priority", []routing.Route{a, asDefault(route("d", 10))}, nil},
		{"two defaults", []routing.Route{asDefault(route("d2", 0)), asDefault(route("d1", 1))}, []string{
			`routes "d1", "d2" are all the default; at most one route may be the default, so "d1" (first by name) is, and the others catch nothing`,
		}},
		{"ties in ascending priority, then defaults", []routing.Route{
			withNames(route("z", 20), "q"), withNames(route("y", 20), "r"), b, a, asDefault(route("d2", 0)), asDefault(route("d1", 1)),
		}, []string{
			`routes "a", "b" share priority 10; priorities must be unique, so "a" (first by name) is evaluated first`,
			`routes "y", "z" share priority 20; priorities must be unique, so "y" (first by name) is evaluated first`,
			`routes "d1", "d2" are all the default; at most one route may be the default, so "d1" (first by name) is, and the others catch nothing`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range routing.Conflicts(tt.routes) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Conflicts =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// While a conflict lasts, every cluster still has exactly one route, whatever order the routes
// are given in: ties go to the name that sorts first.
func TestConflictsResolveByName(t *testing.T) {
	a := withNames(route("a", 10), "c1")
	b := withNames(route("b", 10), "c1", "c2")
	d1, d2 := asDefault(route("d1", 0)), asDefault(route("d2", 0))
	clusters := []routing.Cluster{cluster("c1", nil), cluster("c2", nil), cluster("c3", nil)}
	for _, order := range [][]routing.Route{{a, b, d1, d2}, {d2, b, d1, a}} {
		rep := mustCompile(t, order...).ResolveAll(clusters)
		var got []string
		for _, r := range rep.Clusters {
			got = append(got, r.Cluster+"="+r.Route)
		}
		if want := []string{"c1=a", "c2=b", "c3=d1"}; !slices.Equal(got, want) {
			t.Fatalf("order %v: resolutions %v, want %v", routeNames(order), got, want)
		}
		var routes []string
		for _, r := range rep.Routes {
			routes = append(routes, fmt.Sprintf("%s:%v:%t", r.Route, r.Clusters, r.Conflict != ""))
		}
		if want := []string{"a:[c1]:true", "b:[c2]:true", "d1:[c3]:true", "d2:[]:true"}; !slices.Equal(routes, want) {
			t.Fatalf("order %v: report routes %v, want %v", routeNames(order), routes, want)
		}
		if len(rep.Conflicts) != 2 {
			t.Fatalf("report conflicts = %v, want the priority and the default conflict", rep.Conflicts)
		}
	}
}

func routeNames(routes []routing.Route) []string {
	var out []string
	for _, r := range routes {
		out = append(out, r.Name)
	}
	return out
}

func TestCompileReturnsProblems(t *testing.T) {
	_, err := routing.Compile([]routing.Route{route("a", 1)})
	var ps routing.Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Route != "a" || len(ps[0].Path) != 0 {
		t.Fatalf("Compile error = %#v, want one route-level problem on a", err)
	}
	want := `route "a": a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors`
	if err.Error() != want {
		t.Fatalf("Compile error = %q, want %q", err, want)
	}
	if routing.Problems(nil).Err() != nil {
		t.Fatal("no problems must be a nil error")
	}
}

func TestProblemPath(t *testing.T) {
	tests := []struct {
		name  string
		route routing.Route
		steps routing.Path
		text  string
	}{
		{"map key", withSelectors(route("r", 1), sel(nil), sel(ml("a b", "x"))),
			routing.Path{routing.Attr("cluster_selectors"), routing.Index(1), routing.Attr("match_labels"), routing.Key("a b")},
			`cluster_selectors[1].match_labels["a b"]`},
		{"expression value", withSelectors(route("r", 1), sel(nil, req("k", routing.In, "ok", "no t"))),
			routing.Path{routing.Attr("cluster_selectors"), routing.Index(0), routing.Attr("match_expressions"), routing.Index(0), routing.Attr("values"), routing.Index(1)},
			"cluster_selectors[0].match_expressions[0].values[1]"},
		{"cluster name that is no object name", withNames(route("r", 1), "US_02"),
			routing.Path{routing.Attr("cluster_names"), routing.Index(0)}, "cluster_names[0]"},
		{"chain entry", func() routing.Route { r := withNames(route("r", 1), "c"); r.Registries = []string{"a", "a"}; return r }(),
			routing.Path{routing.Attr("registries"), routing.Index(1)}, "registries[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := routing.ValidateRoute(tt.route)
			if len(ps) != 1 || !reflect.DeepEqual(ps[0].Path, tt.steps) || ps[0].Path.String() != tt.text {
				t.Fatalf("problems = %v, want one at %s", ps, tt.text)
			}
			if got, want := ps[0].Path.CRD(), crdPath(tt.text); got != want {
				t.Fatalf("CRD path = %s, want %s", got, want)
			}
		})
	}
}

// crdPath is the OCIStorageRoute field path of a Terraform path, spelled out for the tests above.
func crdPath(tf string) string {
	r := strings.NewReplacer("cluster_selectors", "clusterSelectors", "match_labels", "matchLabels",
		"match_expressions", "matchExpressions", "cluster_names", "clusterNames", "registries", "registries")
	return "spec." + r.Replace(tf)
}

func TestParseCRD(t *testing.T) {
	for crd, want := range map[string]string{
		// What the controller writes to status.matchedBy, one per criterion.
		"spec.clusterNames":        "cluster_names",
		"spec.clusterGroups":       "cluster_groups",
		"spec.clusterSelectors[0]": "cluster_selectors[0]",
		"spec.clusterSelectors[1]": "cluster_selectors[1]",
		"spec.default":             "default",
		// Any other field path of a route, as condition messages name them.
		"spec":                                  "",
		"metadata.name":                         "name",
		"spec.replicationWait":                  "replication_wait",
		"spec.clusterSelectors[12].matchLabels": "cluster_selectors[12].match_labels",
		`spec.clusterSelectors[0].matchLabels["a.b"]`:            `cluster_selectors[0].match_labels["a.b"]`,
		`spec.clusterSelectors[0].matchLabels["x]y"]`:            `cluster_selectors[0].match_labels["x]y"]`,
		"spec.clusterSelectors[2].matchExpressions[0].values[3]": "cluster_selectors[2].match_expressions[0].values[3]",
	} {
		p, err := routing.ParseCRD(crd)
		if err != nil {
			t.Errorf("routing.ParseCRD(%q): %v", crd, err)
			continue
		}
		if p.String() != want {
			t.Errorf("routing.ParseCRD(%q) = %q, want %q", crd, p.String(), want)
		}
		if back := p.CRD(); back != crd {
			t.Errorf("routing.ParseCRD(%q).CRD() = %q: not the inverse of Path.CRD", crd, back)
		}
	}
	for _, bad := range []string{
		"", "status.route", "specs.default", "spec.", "spec..default", "spec.Default", "spec.cluster_names", "spec.default.",
		"spec[0]x", "spec.clusterSelectors[]", "spec.clusterSelectors[-1]", "spec.clusterSelectors[+1]", "spec.clusterSelectors[1",
		"spec.clusterSelectors[x]", `spec.clusterSelectors[0].matchLabels["a"`, `spec.clusterSelectors[0].matchLabels["a]`,
		"spec.clusterSelectors[99999999999999999999]",
	} {
		if p, err := routing.ParseCRD(bad); err == nil {
			t.Errorf("routing.ParseCRD(%q) = %q, want an error", bad, p)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("routing.ParseCRD(%q): error %q does not quote the path", bad, err)
		}
	}
}

// Every criterion the router reports reads back from its CRD form to the matched_by the data
// source shows without the controller.
func TestParseCRDMatchedBy(t *testing.T) {
	for _, m := range []routing.MatchedBy{
		{Criterion: routing.ByName}, {Criterion: routing.ByGroup}, {Criterion: routing.ByDefault},
		{Criterion: routing.BySelector, Selector: 0}, {Criterion: routing.BySelector, Selector: 7},
	} {
		p, err := routing.ParseCRD(m.Path().CRD())
		if err != nil || p.String() != m.String() {
			t.Errorf("%s → %s → %q, %v", m, m.Path().CRD(), p, err)
		}
	}
}
