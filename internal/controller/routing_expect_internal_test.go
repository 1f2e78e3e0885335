package controller

import "testing"

// The wait for the cache compares resourceVersions as etcd revisions, not as strings.
func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		got, want string
		ok        bool
	}{{"10", "9", true}, {"9", "10", false}, {"10", "10", true}, {"", "10", false}, {"x", "x", true}, {"x", "y", false}} {
		if atLeast(c.got, c.want) != c.ok {
			t.Errorf("atLeast(%q, %q) = %v", c.got, c.want, !c.ok)
		}
	}
}
