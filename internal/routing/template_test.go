package routing

import (
	"errors"
	"strings"
	"testing"
)

func TestParseReference(t *testing.T) {
	for _, tc := range []struct {
		ref    string
		labels []string
		err    string // a fragment of the error; "" when valid
	}{
		{ref: "harbor.example.com/fleet"},
		{ref: "zot.{{ .labels.site }}.stores.internal:5000/fleet", labels: []string{"site"}},
		{ref: "zot.{{.labels.site}}.stores.internal", labels: []string{"site"}},
		{ref: "zot-{{ .labels.site }}.stores.internal/{{ .labels.site }}/{{ .labels.env }}", labels: []string{"site", "env"}},
		{ref: "zot.{{ .labels.fleet.umkim.io/site }}.stores.internal/x-{{ .labels.example.com/team }}", labels: []string{"fleet.umkim.io/site", "example.com/team"}},
		{ref: "harbor.example.com/{{ .labels.team }}", labels: []string{"team"}},
		{ref: "harbor.example.com/", err: "ends in '/'"},
		{ref: "zot.{{ .labels.site }}.internal", err: "fixed domain of at least 2"},
		{ref: "{{ .labels.host }}", err: "fixed domain"},
		{ref: "{{ .labels.a }}.{{ .labels.b }}.com", err: "fixed domain"},
		{ref: "zot.stores.internal:{{ .labels.port }}/fleet", err: "cannot fill the port"},
		{ref: "[{{ .labels.ip }}]:5000", err: "cannot fill an IP address"},
		{ref: "zot.{{ .labels.Bad Key }}.stores.internal", err: "template syntax"},
		{ref: "zot.{{ .labels.-bad }}.stores.internal", err: "not a valid label key"},
		{ref: "zot.{{ .labels. }}.stores.internal", err: "not a valid label key"},
		{ref: "zot.{{ .Labels.site }}.stores.internal", err: "template syntax"},
		{ref: "zot.{{ .labels.site | upper }}.stores.internal", err: "template syntax"},
		{ref: "zot.{{ index .labels \"site\" }}.stores.internal", err: "template syntax"},
		{ref: "zot.{{ .labels.site }.stores.internal", err: "template syntax"},
		{ref: "zot.{{ .labels.site }}}}.stores.internal", err: "template syntax"},
		{ref: "zot.{{ .labels.site }}.stores.internal/Fleet", err: "path component"},
		{ref: "https://zot.{{ .labels.site }}.stores.internal", err: "scheme"},
		{ref: "zot.{{ .labels.site }}.stores.internal@sha256", err: "'@'"},
	} {
		r, err := ParseReference(tc.ref)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.ref, err)
				continue
			}
			if strings.Join(r.Labels(), ",") != strings.Join(tc.labels, ",") {
				t.Errorf("%s: labels %v, want %v", tc.ref, r.Labels(), tc.labels)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one with %q", tc.ref, err, tc.err)
		}
	}
}

func TestResolveChain(t *testing.T) {
	refs := map[string]*Reference{}
	for name, s := range map[string]string{
		"central": "harbor.example.com/fleet",
		"site":    "zot.{{ .labels.site }}.stores.internal:5000/fleet",
		"team":    "harbor.example.com/{{ .labels.team }}",
	} {
		r, err := ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		refs[name] = r
	}
	names := []string{"site", "team", "unknown", "central"}

	chain, un := ResolveChain(Cluster{Name: "berlin-1", Labels: map[string]string{"site": "berlin", "team": "edge.apps"}}, names, refs)
	want := []ChainEntry{
		{"site", "zot.berlin.stores.internal:5000/fleet"},
		{"team", "harbor.example.com/edge.apps"},
		{"central", "harbor.example.com/fleet"},
	}
	if len(un) != 0 || !equalChains(chain, want) {
		t.Fatalf("chain %v, unresolved %v; want %v", chain, un, want)
	}

	chain, un = ResolveChain(Cluster{Name: "paris-1", Labels: map[string]string{"team": "x"}}, names, refs)
	if !equalChains(chain, []ChainEntry{{"team", "harbor.example.com/x"}, {"central", "harbor.example.com/fleet"}}) {
		t.Errorf("chain %v", chain)
	}
	if len(un) != 1 || un[0].Registry != "site" || un[0].Err.Reason != LabelMissing || un[0].Err.Label != "site" {
		t.Fatalf("unresolved %v", un)
	}
	if got, want := un[0].String(), `cluster "paris-1" gets no entry for registry "site": the cluster has no label "site"`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestResolveChainRefusesHostileLabels is the attack: whoever sets a cluster's labels tries to
// send its pulls (and the registry's agent credentials) to a host the reference does not name.
func TestResolveChainRefusesHostileLabels(t *testing.T) {
	site, _ := ParseReference("zot.{{ .labels.site }}.stores.internal:5000/fleet")
	path, _ := ParseReference("harbor.example.com/fleet/{{ .labels.team }}")
	refs := map[string]*Reference{"site": site, "path": path}
	for _, tc := range []struct {
		registry, value string
	}{
		{"site", "evil.com#"},                    // another host
		{"site", "attacker.example.com"},         // dots: more than one DNS label
		{"site", "x:6000"},                       // a port
		{"site", "x/../../other"},                // a path
		{"site", "user@evil.com"},                // userinfo
		{"site", "x.stores.internal:1/"},         // a host and port of its own
		{"site", ""},                             // empty
		{"site", "-x"},                           // not a DNS label
		{"site", strings.Repeat("a", 64)},        // longer than a DNS label
		{"path", ".."},                           // parent directory
		{"path", "a..b"},                         // dots
		{"path", "a/b"},                          // another path component
		{"path", "team@sha256:abc"},              // a digest
		{"path", "Team"},                         // not a repository component
		{"path", "x:tag"},                        // a tag
		{"path", "a%2f..%2fb"},                   // escaped path
		{"path", "evil.com/fleet"},               // a host in the path
		{"site", "x\n"},                          // control character
		{"site", "evil.com\u3002stores"},         // a full-width dot
		{"site", "xn--80ak6aa92e.com.internal."}, // trailing dot, punycode
	} {
		c := Cluster{Name: "c1", Labels: map[string]string{"site": tc.value, "team": tc.value}}
		chain, un := ResolveChain(c, []string{tc.registry}, refs)
		if len(chain) != 0 {
			t.Errorf("%s with %q: resolved to %v", tc.registry, tc.value, chain)
			continue
		}
		if len(un) != 1 || un[0].Err.Reason != LabelRefused {
			t.Errorf("%s with %q: unresolved %v, want LabelRefused", tc.registry, tc.value, un)
		}
	}
}

func TestResolveChainForeignLabel(t *testing.T) {
	site, _ := ParseReference("zot.{{ .labels.fleet.site }}.stores.internal")
	c := Cluster{Name: "c1", Labels: map[string]string{"fleet.site": "their-site"}, Foreign: map[string]string{"fleet.site": "team-b/join-c1"}}
	chain, un := ResolveChain(c, []string{"site"}, map[string]*Reference{"site": site})
	if len(chain) != 0 || len(un) != 1 || un[0].Err.Reason != LabelForeign {
		t.Fatalf("chain %v, unresolved %v; want LabelForeign", chain, un)
	}
	var e *UnresolvedError
	if !errors.As(un[0].Err, &e) || !strings.Contains(e.Error(), "team-b/join-c1") {
		t.Errorf("message %v does not name who set the label", un[0].Err)
	}
}

func equalChains(a, b []ChainEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
