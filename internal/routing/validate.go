package routing

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Path locates a field of a route in Terraform attribute names, for example
// cluster_selectors[0].match_labels["region"]. An empty Path means the route as a whole.
type Path []Step

// Step is one step of a Path: an Attr, an Index or a Key.
type Step interface{ isStep() }

// Attr is an attribute name.
type Attr string

// Index is a position in a list.
type Index int

// Key is a key of a map.
type Key string

func (Attr) isStep()  {}
func (Index) isStep() {}
func (Key) isStep()   {}

func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s := s.(type) {
		case Attr:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(s))
		case Index:
			fmt.Fprintf(&b, "[%d]", int(s))
		case Key:
			fmt.Fprintf(&b, "[%q]", string(s))
		}
	}
	return b.String()
}

// CRD renders the path as the field path of an OCIStorageRoute, for example
// spec.clusterSelectors[0].matchLabels["region"], for conditions and controller messages.
func (p Path) CRD() string {
	var b strings.Builder
	b.WriteString("spec")
	for _, s := range p {
		switch s := s.(type) {
		case Attr:
			if s == "name" && b.Len() == len("spec") {
				return "metadata.name"
			}
			b.WriteByte('.')
			b.WriteString(camel(string(s)))
		case Index:
			fmt.Fprintf(&b, "[%d]", int(s))
		case Key:
			fmt.Fprintf(&b, "[%q]", string(s))
		}
	}
	return b.String()
}

// camel turns a Terraform attribute name into the CRD's field name: cluster_names → clusterNames.
func camel(attr string) string {
	parts := strings.Split(attr, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// ParseCRD reads a field path of an OCIStorageRoute as CRD renders it (for example
// spec.clusterSelectors[1], as a ClusterOCIStorage's matchedBy names it) back into a Path, whose
// String is the Terraform attribute form (cluster_selectors[1]): the inverse of CRD.
func ParseCRD(crd string) (Path, error) {
	if crd == "metadata.name" {
		return Path{Attr("name")}, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%q is not a field path of an OCIStorageRoute: %s", crd, why)
	}
	rest, ok := strings.CutPrefix(crd, "spec")
	if !ok {
		return nil, bad(`it does not start with "spec"`)
	}
	var p Path
	for rest != "" {
		switch {
		case rest[0] == '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			name := rest[1 : 1+end]
			attr, ok := snake(name)
			if !ok {
				return nil, bad(fmt.Sprintf("%q is not a field name", name))
			}
			p = append(p, Attr(attr))
			rest = rest[1+end:]
		case strings.HasPrefix(rest, `["`):
			q, err := strconv.QuotedPrefix(rest[1:])
			if err != nil || !strings.HasPrefix(rest[1+len(q):], "]") {
				return nil, bad("a map key is not a quoted string in brackets")
			}
			key, _ := strconv.Unquote(q)
			p = append(p, Key(key))
			rest = rest[1+len(q)+1:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 2 || strings.Trim(rest[1:end], "0123456789") != "" {
				return nil, bad("a list index is not a number in brackets")
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil {
				return nil, bad(err.Error())
			}
			p = append(p, Index(i))
			rest = rest[end+1:]
		default:
			return nil, bad(fmt.Sprintf("unexpected %q", rest))
		}
	}
	return p, nil
}

// snake turns a CRD field name into the Terraform attribute name, clusterNames → cluster_names:
// the inverse of camel.
func snake(name string) (string, bool) {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return "", false
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			b.WriteByte('_')
			b.WriteRune(r - 'A' + 'a')
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// Problem is one configuration error of a route.
type Problem struct {
	Route   string
	Path    Path
	Message string
}

func (p Problem) Error() string {
	if len(p.Path) == 0 {
		return fmt.Sprintf("route %q: %s", p.Route, p.Message)
	}
	return fmt.Sprintf("route %q: %s: %s", p.Route, p.Path, p.Message)
}

// Problems is a list of configuration errors; it is an error when not empty.
type Problems []Problem

func (ps Problems) Error() string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "\n")
}

// Err returns ps as an error, or nil when there are no problems.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// Validate checks every route with ValidateRoute and that route names are unique. Rules that
// span routes and that a hub can break for a while (shared priorities, several defaults) are not
// problems but Conflicts: routing stays well-defined while they last.
func Validate(routes []Route) Problems {
	var ps Problems
	for _, r := range routes {
		ps = append(ps, ValidateRoute(r)...)
	}
	seen := map[string]bool{}
	for _, r := range routes {
		if r.Name != "" && seen[r.Name] {
			ps = append(ps, Problem{r.Name, Path{Attr("name")}, "more than one route has this name; route names must be unique"})
		}
		seen[r.Name] = true
	}
	return ps
}

// Conflict is a rule spanning routes that a workspace breaks: two non-default routes share a
// priority, or several routes are the default. The tie is broken by name, so routing stays
// deterministic: of routes with one priority the one whose name sorts first is evaluated first,
// and of several defaults the one whose name sorts first is the default; the others catch nothing.
type Conflict struct {
	Field    Attr     // "priority" or "default"
	Priority int64    // the shared priority, when Field is "priority"
	Routes   []string // sorted by name; Routes[0] is the one that takes precedence
}

func (c Conflict) String() string {
	if c.Field == "default" {
		return fmt.Sprintf("%s are all the default; at most one route may be the default, so %q (first by name) is, and the others catch nothing",
			quoteRoutes(c.Routes, "", ""), c.Routes[0])
	}
	return fmt.Sprintf("%s share priority %d; priorities must be unique, so %q (first by name) is evaluated first",
		quoteRoutes(c.Routes, "", ""), c.Priority, c.Routes[0])
}

// Conflicts lists the priority and default conflicts among routes: shared priorities in
// ascending priority, then the default conflict.
func Conflicts(routes []Route) []Conflict {
	byPriority := map[int64][]string{}
	var defaults []string
	for _, r := range routes {
		if r.Default {
			defaults = append(defaults, r.Name)
		} else {
			byPriority[r.Priority] = append(byPriority[r.Priority], r.Name)
		}
	}
	var out []Conflict
	for _, p := range slices.Sorted(maps.Keys(byPriority)) {
		if names := byPriority[p]; len(names) > 1 {
			out = append(out, Conflict{Field: "priority", Priority: p, Routes: slices.Sorted(slices.Values(names))})
		}
	}
	if len(defaults) > 1 {
		out = append(out, Conflict{Field: "default", Routes: slices.Sorted(slices.Values(defaults))})
	}
	return out
}

// quoteRoutes renders `route "a"` or `routes "a", "b"`, followed by the verb for one or many.
func quoteRoutes(names []string, one, many string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	s, verb := "route ", one
	if len(names) > 1 {
		s, verb = "routes ", many
	}
	s += strings.Join(q, ", ")
	if verb != "" {
		s += " " + verb
	}
	return s
}

// ValidateRoute checks one route on its own: name, criteria, default-route rules, the registry
// chain, the replication wait and the label selectors.
func ValidateRoute(r Route) Problems {
	v := routeValidator{route: r.Name}
	if r.Name == "" {
		v.add(Path{Attr("name")}, "must not be empty")
	}
	v.most(Path{Attr("cluster_names")}, len(r.ClusterNames), MaxClusterNames, "cluster names")
	v.most(Path{Attr("cluster_groups")}, len(r.ClusterGroups), MaxClusterGroups, "cluster groups")
	v.most(Path{Attr("cluster_selectors")}, len(r.ClusterSelectors), MaxClusterSelectors, "selectors")
	v.most(Path{Attr("registries")}, len(r.Registries), MaxRegistries, "registries")
	hasCriteria := len(r.ClusterNames)+len(r.ClusterGroups)+len(r.ClusterSelectors) > 0
	switch {
	case r.Default:
		for _, f := range []struct {
			attr string
			n    int
		}{{"cluster_names", len(r.ClusterNames)}, {"cluster_groups", len(r.ClusterGroups)}, {"cluster_selectors", len(r.ClusterSelectors)}} {
			if f.n > 0 {
				v.add(Path{Attr(f.attr)}, "a default route takes no criteria: it catches every cluster no other route matches")
			}
		}
	case !hasCriteria:
		v.add(nil, "a route that is not the default needs at least one of cluster_names, cluster_groups or cluster_selectors")
	}
	v.list("cluster_names", "cluster", r.ClusterNames, dnsLabel)
	v.list("cluster_groups", "cluster group", r.ClusterGroups, dnsSubdomain)
	for i, s := range r.ClusterSelectors {
		v.selector(Path{Attr("cluster_selectors"), Index(i)}, s)
	}
	if len(r.Registries) == 0 {
		v.add(Path{Attr("registries")}, "must name at least one registry")
	}
	v.list("registries", "registry", r.Registries, dnsSubdomain)
	switch {
	case r.ReplicationWait < 0:
		v.add(Path{Attr("replication_wait")}, fmt.Sprintf("must not be negative, got %s", r.ReplicationWait))
	case r.ReplicationWait > MaxReplicationWait:
		v.add(Path{Attr("replication_wait")}, fmt.Sprintf("must be at most %s (a day), got %s", MaxReplicationWait, r.ReplicationWait))
	}
	return v.problems
}

// most reports a list or map at p that holds more than max items.
func (v *routeValidator) most(p Path, n, max int, noun string) {
	if n > max {
		v.add(p, fmt.Sprintf("holds %d %s; at most %d are allowed", n, noun, max))
	}
}

type routeValidator struct {
	route    string
	problems Problems
}

func (v *routeValidator) add(p Path, msg string) {
	v.problems = append(v.problems, Problem{v.route, p, msg})
}

// The two shapes of Kubernetes object names: a ManagedCluster's name is also its namespace's.
var (
	dnsLabel     = nameRule{validation.IsDNS1123Label, "lowercase letters, digits and '-', at most 63 characters, starting and ending with a letter or digit"}
	dnsSubdomain = nameRule{validation.IsDNS1123Subdomain, "lowercase letters, digits, '-' and '.', at most 253 characters, starting and ending with a letter or digit"}
)

type nameRule struct {
	check func(string) []string
	shape string
}

// list checks that a list attribute has no empty, malformed or repeated entries.
func (v *routeValidator) list(attr, noun string, items []string, name nameRule) {
	first := map[string]int{}
	for i, it := range items {
		p := Path{Attr(attr), Index(i)}
		if it == "" {
			v.add(p, "must not be empty")
			continue
		}
		if len(name.check(it)) > 0 {
			v.add(p, fmt.Sprintf("%s %q is not a valid name: use %s", noun, it, name.shape))
			continue
		}
		if j, dup := first[it]; dup {
			v.add(p, fmt.Sprintf("%s %q is already listed at %s[%d]", noun, it, attr, j))
			continue
		}
		first[it] = i
	}
}

func (v *routeValidator) selector(p Path, s Selector) {
	v.most(append(slices.Clip(p), Attr("match_labels")), len(s.MatchLabels), MaxMatchLabels, "labels")
	v.most(append(slices.Clip(p), Attr("match_expressions")), len(s.MatchExpressions), MaxMatchExpressions, "expressions")
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		kp := append(slices.Clip(p), Attr("match_labels"), Key(k))
		v.labelKey(kp, k)
		v.labelValue(kp, s.MatchLabels[k])
	}
	for i, e := range s.MatchExpressions {
		ep := append(slices.Clip(p), Attr("match_expressions"), Index(i))
		v.labelKey(append(slices.Clip(ep), Attr("key")), e.Key)
		vp := append(slices.Clip(ep), Attr("values"))
		v.most(vp, len(e.Values), MaxRequirementValues, "values")
		switch e.Operator {
		case In, NotIn:
			if len(e.Values) == 0 {
				v.add(vp, fmt.Sprintf("operator %s needs at least one value", e.Operator))
			}
			for j, val := range e.Values {
				v.labelValue(append(slices.Clip(vp), Index(j)), val)
			}
		case Exists, DoesNotExist:
			if len(e.Values) > 0 {
				v.add(vp, fmt.Sprintf("operator %s takes no values", e.Operator))
			}
		default:
			v.add(append(slices.Clip(ep), Attr("operator")),
				fmt.Sprintf("unsupported operator %q; use In, NotIn, Exists or DoesNotExist", e.Operator))
		}
	}
}

func (v *routeValidator) labelKey(p Path, k string) {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		v.add(p, fmt.Sprintf("invalid label key %q: %s", k, strings.Join(errs, "; ")))
	}
}

func (v *routeValidator) labelValue(p Path, val string) {
	if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
		v.add(p, fmt.Sprintf("invalid label value %q: %s", val, strings.Join(errs, "; ")))
	}
}
