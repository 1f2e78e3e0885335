package provider

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPortForwardHolder: the join created first (then by name) holds a port_forward entry, as
// the cluster-joins reconciler decides; a new join comes after every join on the hub, an updated
// one keeps its place in line; joins being deleted hold nothing.
func TestPortForwardHolder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	join := func(name string, age int, site, entry string, deleting bool) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"site": site, "edge": map[string]any{"ingressId": entry}}}}
		u.SetName(name)
		u.SetCreationTimestamp(metav1.NewTime(t0.Add(time.Duration(age) * time.Minute)))
		if deleting {
			now := metav1.NewTime(t0)
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	hubJoins := []unstructured.Unstructured{
		join("b", 2, "berlin", "wan", false),
		join("a", 2, "berlin", "wan", false), // same second as b: by name
		join("old", 1, "berlin", "proxy", false),
		join("gone", 0, "berlin", "wan", true),
		join("elsewhere", 0, "hamburg", "wan", false),
	}
	for _, c := range []struct {
		self      string
		selfOnHub bool
		entry     string
		want      string
	}{
		{"new", false, "wan", "a"},
		{"a", true, "wan", ""},         // a holds it already
		{"b", true, "wan", "a"},        // b is behind a
		{"old", true, "wan", ""},       // moving the oldest join onto the entry: it comes first
		{"new", false, "proxy", "old"}, // the reconciler also holds reverse_proxy entries this way; the check asks only for port_forward
		{"new", false, "lan", ""},
	} {
		got := ""
		if h := portForwardHolder(hubJoins, c.self, c.selfOnHub, "berlin", c.entry); h != nil {
			got = h.GetName()
		}
		if got != c.want {
			t.Errorf("join %s (on hub %v) onto %s: holder %q, want %q", c.self, c.selfOnHub, c.entry, got, c.want)
		}
	}
}
