package hubresource

import (
	"strings"
	"testing"
)

func TestIdentityProblem(t *testing.T) {
	for _, tc := range []struct {
		workspace, name string
		want            []string // parts of the message; none when valid
	}{
		{"fleet-default", "berlin", nil},
		{"fleet-default", "eu.clusters-1", nil},
		{"fleet-default", "Berlin_1", []string{`name: "Berlin_1" is not a valid Kubernetes name`, "identity = {"}},
		{"Bad.WS", "berlin", []string{`workspace: "Bad.WS"`, "DNS label"}},
		{"", "", []string{"workspace: \"\"", "name: \"\""}},
	} {
		got := identityProblem(tc.workspace, tc.name)
		if len(tc.want) == 0 {
			if got != "" {
				t.Errorf("identityProblem(%q, %q) = %q, want none", tc.workspace, tc.name, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("identityProblem(%q, %q) = %q, want it to contain %q", tc.workspace, tc.name, got, w)
			}
		}
	}
}
