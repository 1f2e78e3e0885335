package provider

import (
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/work"
)

func TestChainCAWarning(t *testing.T) {
	kib := func(n int) int { return n << 10 }
	for _, tc := range []struct {
		name  string
		parts []work.Part
		want  []string // in the message, in order; nil: no warning
	}{
		{"two that reach 256 KiB together", []work.Part{{What: `"a"`, Size: kib(100)}, {What: `"b"`, Size: kib(156)}},
			[]string{`"b" (156 KiB), "a" (100 KiB), 256 KiB together`}},
		{"two just under", []work.Part{{What: `"a"`, Size: kib(100)}, {What: `"b"`, Size: kib(156) - 1}}, nil},
		{"one alone, warned of on its registry", []work.Part{{What: `"a"`, Size: kib(300)}, {What: `"b"`}}, nil},
		{"three, one without a bundle", []work.Part{{What: `"a"`, Size: kib(90)}, {What: `"none"`}, {What: `"c"`, Size: kib(90)}, {What: `"d"`, Size: kib(90)}},
			[]string{`registries "a" (90 KiB), "c" (90 KiB), "d" (90 KiB), 270 KiB together`}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := chainCAWarning("r", tc.parts)
			if ok != (tc.want != nil) {
				t.Fatalf("warned %v (%q), want %v", ok, msg, tc.want != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) || !strings.HasPrefix(msg, `Route "r"'s chain`) || !strings.Contains(msg, "450 KiB") {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
		})
	}
}
