package routing

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/umkim/terraform-provider-fleet/internal/registryref"
)

// A registry's reference may name cluster labels, so that one registry entry serves every site
// that runs its own registry: zot.{{ .labels.site }}.stores.internal:5000/fleet is, for a cluster
// labelled site=berlin, zot.berlin.stores.internal:5000/fleet. The syntax is that one form,
// {{ .labels.<key> }} (spaces inside the braces optional), with <key> a Kubernetes label key; there
// is no other template syntax.
//
// A label fills part of one DNS label of the host, or part of one path component, never a port
// or an IP address, and the host names a fixed parent domain of at least two DNS labels after the
// last label it uses (".stores.internal" above). A label value resolves only when it keeps that
// shape: letters, digits and '-' in the host; lowercase letters, digits, '.', '_' and '-' in the
// path, and the result a valid registry reference (registryref). So whatever a cluster's labels
// say, its host is one the reference's author named, under the domain they wrote: a value cannot
// add a path, a port, an '@', a '..' or another host.

// Reference is a parsed registry reference, possibly naming cluster labels. Parse it once with
// ParseReference and resolve it per cluster with ResolveChain.
type Reference struct {
	raw   string
	parts []refPart // literals and labels, in order; one literal when it names no label
	keys  []string  // the label keys it names, in order of first use
	// domain is the fixed parent domain after the host's last label, e.g. ".stores.internal";
	// "" when the host names no label.
	domain string
}

type refPart struct {
	literal string
	key     string // the label key when not a literal
	inHost  bool   // the label fills part of the host, else part of the path
}

// MinFixedDomainLabels is how many DNS labels a templated host must fix after its last label:
// a parent domain of its own (stores.internal), not a top-level one.
const MinFixedDomainLabels = 2

var (
	placeholder = regexp.MustCompile(`\{\{\s*\.labels\.([^\s{}]*)\s*\}\}`)
	hostValue   = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
	pathValue   = regexp.MustCompile(`^[a-z0-9._-]+$`)
)

// Templated reports whether s uses the label syntax (or tries to: it holds "{{" or "}}").
func Templated(s string) bool { return strings.Contains(s, "{{") || strings.Contains(s, "}}") }

// ParseReference checks a registry reference, literal or naming labels, and parses it. Errors say
// what is wrong and how to write it.
func ParseReference(s string) (*Reference, error) {
	if !Templated(s) {
		if _, err := registryref.Parse(s); err != nil {
			return nil, err
		}
		return LiteralReference(s), nil
	}
	r := &Reference{raw: s}
	seen := map[string]bool{}
	var sample strings.Builder // s with every label replaced by a value of the right shape
	rest, offset, hostEnd := s, 0, -1
	for _, m := range placeholder.FindAllStringSubmatchIndex(s, -1) {
		lit := s[offset:m[0]]
		if Templated(lit) {
			return nil, badSyntax(s)
		}
		key := s[m[2]:m[3]]
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("reference %q: %q is not a valid label key: %s", s, key, strings.Join(errs, "; "))
		}
		authority, _, inPath := strings.Cut(sample.String()+lit, "/")
		switch {
		case !inPath && strings.HasPrefix(authority, "["):
			return nil, fmt.Errorf("reference %q: a label cannot fill an IP address; write a host name such as zot.{{ .labels.%s }}.example.com", s, key)
		case !inPath && strings.Contains(authority, ":"):
			return nil, fmt.Errorf("reference %q: a label cannot fill the port; name a label in the host or the path", s)
		}
		if lit != "" {
			r.parts = append(r.parts, refPart{literal: lit})
		}
		r.parts = append(r.parts, refPart{key: key, inHost: !inPath})
		if !seen[key] {
			seen[key] = true
			r.keys = append(r.keys, key)
		}
		sample.WriteString(lit)
		sample.WriteString("x0")
		if !inPath {
			hostEnd = sample.Len()
		}
		offset, rest = m[1], s[m[1]:]
	}
	if Templated(rest) {
		return nil, badSyntax(s)
	}
	if rest != "" {
		r.parts = append(r.parts, refPart{literal: rest})
	}
	sample.WriteString(rest)
	parsed, err := registryref.Parse(sample.String())
	if err != nil {
		return nil, fmt.Errorf("reference %q, with each label replaced by a value: %w", s, err)
	}
	if hostEnd >= 0 {
		if r.domain, err = fixedDomain(s, sample.String()[hostEnd:], parsed); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func badSyntax(s string) error {
	return fmt.Errorf("reference %q: the only template syntax is {{ .labels.<key> }}, e.g. zot.{{ .labels.site }}.stores.internal:5000/fleet", s)
}

// fixedDomain is the literal domain that follows the last label of a templated host (after, the
// text after that label, up to the end of the reference), checked to have at least
// MinFixedDomainLabels DNS labels.
func fixedDomain(s, after string, sample registryref.Ref) (string, error) {
	host, _, _ := strings.Cut(after, "/")
	host, _, _ = strings.Cut(host, ":")
	domain := host
	if i := strings.Index(domain, "."); i >= 0 {
		domain = domain[i:]
	} else {
		domain = ""
	}
	if strings.Count(domain, ".") < MinFixedDomainLabels {
		return "", fmt.Errorf("reference %q: a host that names a label must end in a fixed domain of at least %d DNS labels after it, e.g. zot.{{ .labels.site }}.stores.internal, "+
			"so that a label value can only choose among hosts of your domain", s, MinFixedDomainLabels)
	}
	if !strings.HasSuffix(sample.Host, domain) {
		return "", fmt.Errorf("reference %q: a host that names a label must end in a fixed domain", s)
	}
	return domain, nil
}

// LiteralReference is s as it is, naming no label and not checked (a hub object's reference that
// does not parse is the agent's to report, as before references named labels).
func LiteralReference(s string) *Reference {
	return &Reference{raw: s, parts: []refPart{{literal: s}}}
}

// String is the reference as written.
func (r *Reference) String() string { return r.raw }

// Labels are the label keys the reference names, in order of first use; none for a literal one.
func (r *Reference) Labels() []string { return r.keys }

// Why a label keeps a registry out of a cluster's chain.
const (
	LabelMissing = "LabelMissing" // the cluster does not have the label
	LabelRefused = "LabelRefused" // its value would change the reference's shape or host
	LabelForeign = "LabelForeign" // another workspace set it (Cluster.Foreign)
)

// UnresolvedError is why a reference does not resolve for a cluster.
type UnresolvedError struct {
	Reason string // LabelMissing, LabelRefused or LabelForeign
	Label  string
	Detail string // for LabelRefused and LabelForeign
}

func (e *UnresolvedError) Error() string {
	switch e.Reason {
	case LabelMissing:
		return fmt.Sprintf("the cluster has no label %q", e.Label)
	case LabelForeign:
		return fmt.Sprintf("label %q was set by another workspace (%s); a reference uses only labels of the cluster or of this workspace", e.Label, e.Detail)
	}
	return fmt.Sprintf("label %q: %s", e.Label, e.Detail)
}

// resolve is the reference for cluster c.
func (r *Reference) resolve(c Cluster) (string, *UnresolvedError) {
	if len(r.keys) == 0 {
		return r.raw, nil
	}
	var b strings.Builder
	for _, p := range r.parts {
		if p.key == "" {
			b.WriteString(p.literal)
			continue
		}
		if by, ok := c.Foreign[p.key]; ok {
			return "", &UnresolvedError{Reason: LabelForeign, Label: p.key, Detail: by}
		}
		v, ok := c.Labels[p.key]
		if !ok {
			return "", &UnresolvedError{Reason: LabelMissing, Label: p.key}
		}
		if err := checkValue(v, p.inHost); err != nil {
			return "", &UnresolvedError{Reason: LabelRefused, Label: p.key, Detail: err.Error()}
		}
		b.WriteString(v)
	}
	out := b.String()
	ref, err := registryref.Parse(out)
	if err != nil {
		return "", &UnresolvedError{Reason: LabelRefused, Label: r.keys[0], Detail: "the resolved reference is not valid: " + err.Error()}
	}
	if r.domain != "" && !strings.HasSuffix(ref.Host, r.domain) {
		return "", &UnresolvedError{Reason: LabelRefused, Label: r.keys[0], Detail: fmt.Sprintf("the resolved host %q is not under %q", ref.Host, r.domain[1:])}
	}
	return out, nil
}

// checkValue refuses a label value that would do more than fill part of one DNS label (in the
// host) or one path component (in the path). The value is quoted shortened: it may be hostile.
func checkValue(v string, inHost bool) error {
	shown := v
	if len(shown) > 63 {
		shown = shown[:63] + "…"
	}
	switch {
	case v == "":
		return fmt.Errorf("the value is empty")
	case inHost && !hostValue.MatchString(v):
		return fmt.Errorf("value %q may fill only part of one DNS label of the host: letters, digits and '-', no '.', ':', '/' or '@'", shown)
	case !inHost && !pathValue.MatchString(v):
		return fmt.Errorf("value %q may fill only part of one path component: lowercase letters, digits, '.', '_' and '-', no '/', ':' or '@'", shown)
	case !inHost && strings.Contains(v, ".."):
		return fmt.Errorf("value %q may not hold '..'", shown)
	}
	return nil
}

// ChainEntry is one registry of a cluster's chain with its reference resolved for the cluster.
type ChainEntry struct {
	Registry  string
	Reference string
}

// Unresolved is a registry a cluster's chain leaves out because its reference does not resolve
// for the cluster.
type Unresolved struct {
	Cluster, Registry string
	Err               *UnresolvedError
}

func (u Unresolved) String() string {
	return fmt.Sprintf("cluster %q gets no entry for registry %q: %v", u.Cluster, u.Registry, u.Err)
}

// ResolveChain resolves the references of a chain's registries (names, in order) for cluster c:
// the chain without the registries whose reference does not resolve for it, and those. refs are
// the parsed references by registry name; a name refs lacks is left out of both (the caller
// reports missing registries).
func ResolveChain(c Cluster, names []string, refs map[string]*Reference) (chain []ChainEntry, unresolved []Unresolved) {
	for _, name := range names {
		ref, ok := refs[name]
		if !ok {
			continue
		}
		s, err := ref.resolve(c)
		if err != nil {
			unresolved = append(unresolved, Unresolved{Cluster: c.Name, Registry: name, Err: err})
			continue
		}
		chain = append(chain, ChainEntry{Registry: name, Reference: s})
	}
	return chain, unresolved
}
