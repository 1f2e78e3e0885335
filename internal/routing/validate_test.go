package routing_test

import (
	"errors"
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
	c := withNames(route("c", 10), "z")
	tests := []struct {
		name   string
		routes []routing.Route
		want   []string // Problem.Error()
	}{
		{"no routes", nil, nil},
		{"distinct priorities", []routing.Route{a, withNames(route("b", 11), "y")}, nil},
		{"priority tie names both routes", []routing.Route{a, b}, []string{
			`route "a": priority: 10 is also the priority of route "b"; priorities must be unique`,
			`route "b": priority: 10 is also the priority of route "a"; priorities must be unique`,
		}},
		{"three-way tie", []routing.Route{a, b, c}, []string{
			`route "a": priority: 10 is also the priority of routes "b", "c"; priorities must be unique`,
			`route "b": priority: 10 is also the priority of routes "a", "c"; priorities must be unique`,
			`route "c": priority: 10 is also the priority of routes "a", "b"; priorities must be unique`,
		}},
		{"default may share a priority", []routing.Route{a, asDefault(route("d", 10))}, nil},
		{"two defaults", []routing.Route{asDefault(route("d1", 0)), asDefault(route("d2", 1))}, []string{
			`route "d1": default: route "d2" is also the default; at most one route may be the default`,
			`route "d2": default: route "d1" is also the default; at most one route may be the default`,
		}},
		{"three defaults", []routing.Route{asDefault(route("d1", 0)), asDefault(route("d2", 1)), asDefault(route("d3", 2))}, []string{
			`route "d1": default: routes "d2", "d3" are also the default; at most one route may be the default`,
			`route "d2": default: routes "d1", "d3" are also the default; at most one route may be the default`,
			`route "d3": default: routes "d1", "d2" are also the default; at most one route may be the default`,
		}},
		{"duplicate route name", []routing.Route{a, withNames(route("a", 11), "y")}, []string{
			`route "a": name: more than one route has this name; route names must be unique`,
		}},
		{"duplicate name and priority", []routing.Route{a, a}, []string{
			`route "a": name: more than one route has this name; route names must be unique`,
			`route "a": priority: 10 is also the priority of route "a"; priorities must be unique`,
			`route "a": priority: 10 is also the priority of route "a"; priorities must be unique`,
		}},
		{"per-route problems come first", []routing.Route{withNames(route("e", 1)), a, b}, []string{
			`route "e": a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors`,
			`route "a": priority: 10 is also the priority of route "b"; priorities must be unique`,
			`route "b": priority: 10 is also the priority of route "a"; priorities must be unique`,
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
		{"chain entry", func() routing.Route { r := withNames(route("r", 1), "c"); r.Registries = []string{"a", "a"}; return r }(),
			routing.Path{routing.Attr("registries"), routing.Index(1)}, "registries[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := routing.ValidateRoute(tt.route)
			if len(ps) != 1 || !reflect.DeepEqual(ps[0].Path, tt.steps) || ps[0].Path.String() != tt.text {
				t.Fatalf("problems = %v, want one at %s", ps, tt.text)
			}
		})
	}
}
