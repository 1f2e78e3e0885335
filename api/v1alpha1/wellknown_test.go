package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestWorkspaceObjectNameIsInjective(t *testing.T) {
	long := strings.Repeat("n", 253)
	pairs := [][2]string{
		{"team-a", "web"}, {"team", "a-web"}, {"team-a-web", ""}, {"team", "a.web"},
		{"t", long}, {"t", long[:252] + "m"}, {"t", long + "x"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		got := WorkspaceObjectName("app", p[0], p[1], MaxSubdomain)
		if other, dup := seen[got]; dup {
			t.Errorf("%v and %v both give %q", p, other, got)
		}
		seen[got] = p
		if len(got) > MaxSubdomain {
			t.Errorf("%v: %d characters, over %d", p, len(got), MaxSubdomain)
		}
		if p[1] != "" {
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("%v: %q is no DNS subdomain: %v", p, got, errs)
			}
		}
	}
	if got := WorkspaceObjectName("app", "team-a", "web", MaxSubdomain); got != "app.team-a.web" {
		t.Errorf("short name = %q, want app.team-a.web", got)
	}
}

func TestBoundedNameEndsAlphanumeric(t *testing.T) {
	// A cut that would end in "." or "-" is trimmed before the hash.
	s := strings.Repeat("a", 40) + ".-" + strings.Repeat("b", 40)
	got := BoundedName(s, 53)
	if len(got) > 53 || strings.Contains(got, ".-") || strings.Contains(got, "--") {
		t.Fatalf("BoundedName = %q (%d)", got, len(got))
	}
	if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
		t.Fatalf("%q: %v", got, errs)
	}
	if BoundedName("short", 53) != "short" {
		t.Fatal("a name that fits is kept")
	}
}
