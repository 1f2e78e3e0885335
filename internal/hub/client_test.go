package hub

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

func TestMemo(t *testing.T) {
	c, err := NewClient(&rest.Config{Host: "https://127.0.0.1:1"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	builds := 0
	build := func() (any, error) { builds++; return builds, nil }

	for range 3 {
		if v, _ := c.Live().Memo("k", build); v != 1 {
			t.Fatalf("Memo = %v, want the first build's 1", v)
		}
	}
	atStart := func() (any, error) { return "first", nil }
	if v, _ := c.AtStart().Memo("k", atStart); v != "first" {
		t.Fatalf("AtStart Memo = %v, want its own build", v)
	}
	c.live.invalidate(schema.GroupVersionResource{Resource: "secrets"}) // what a write does
	if v, _ := c.Live().Memo("k", build); v != 2 || builds != 2 {
		t.Fatalf("after a write: Memo = %v after %d builds, want a rebuild", v, builds)
	}
	if v, _ := c.AtStart().Memo("k", func() (any, error) { return "rebuilt", nil }); v != "first" {
		t.Fatalf("after a write: AtStart Memo = %v, want the hub as first seen", v)
	}

	failures := 0
	failing := func() (any, error) { failures++; return nil, errors.New("hub down") }
	for range 2 {
		if _, err := c.Live().Memo("f", failing); err == nil {
			t.Fatal("want the build's error")
		}
	}
	if failures != 2 {
		t.Fatalf("a failed build ran %d times for 2 calls, want 2: failures are not cached", failures)
	}
}

func TestConfigurationOwnerLabelValue(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct{ owner, want string }{
		{"team-a", "team-a"},              // a label value already
		{"team.a_b-1", "team.a_b-1"},      // ditto
		{"team-a/infra", "team-a-infra-"}, // '/' is not: cleaned, hashed
		{long, long[:54] + "-"},           // cut to 54, hashed
		{"/x/", "x-"},                     // trimmed
	} {
		got := ConfigurationOwnerLabelValue(tc.owner)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("%q: %q is no label value: %v", tc.owner, got, errs)
		}
		if got != tc.want && !(strings.HasSuffix(tc.want, "-") && strings.HasPrefix(got, tc.want) && len(got) == len(tc.want)+8) {
			t.Errorf("%q: label value %q, want %q (with 8 hex digits when it ends in -)", tc.owner, got, tc.want)
		}
	}
	if a, b := ConfigurationOwnerLabelValue("team-a/infra"), ConfigurationOwnerLabelValue("team-a:infra"); a == b {
		t.Errorf("two owners, one label value %q", a)
	}
}
