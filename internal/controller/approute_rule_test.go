package controller

import (
	"strings"
	"testing"
)

// TestTraefikRule: the rule quotes host and path so that neither changes its structure, and a
// value that no Traefik string can hold, or that is no strict path, is refused.
func TestTraefikRule(t *testing.T) {
	for _, c := range []struct {
		host, path, want, err string
	}{
		{"shop.example.com", "/", "Host(`shop.example.com`) && PathPrefix(`/`)", ""},
		{"shop.example.com", "/a$b*c+d;e=f:g@h/%20", "Host(`shop.example.com`) && PathPrefix(`/a$b*c+d;e=f:g@h/%20`)", ""},
		{"shop.example.com", "/x`) || Host(`victim.example.com`) && PathPrefix(`/", "", "not allowed"},
		{"shop.example.com", "/a/../b", "", ".."},
		{"shop.example.com`) || Host(`victim.example.com", "/", "", "cannot be quoted"},
		{"shop.example.com\n", "/", "", "cannot be quoted"},
	} {
		got, err := traefikRule(c.host, c.path)
		if got != c.want || c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("traefikRule(%q, %q) = %q, %v; want %q, error containing %q", c.host, c.path, got, err, c.want, c.err)
		}
	}
}
