package registryref

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     Ref
		wantErr  string
	}{
		{name: "host only", in: "harbor.example.com", want: Ref{Host: "harbor.example.com"}},
		{name: "host and path", in: "harbor.example.com/fleet", want: Ref{Host: "harbor.example.com", Path: "fleet"}},
		{name: "host port nested path", in: "zot.store.local:5000/edge/bundles", want: Ref{Host: "zot.store.local", Port: 5000, Path: "edge/bundles"}},
		{name: "ipv4 with port", in: "127.0.0.1:5000", want: Ref{Host: "127.0.0.1", Port: 5000}},
		{name: "ipv6 with port", in: "[::1]:5000/x", want: Ref{Host: "::1", Port: 5000, Path: "x"}},
		{name: "trailing slash", in: "r.io/fleet/", want: Ref{Host: "r.io", Path: "fleet"}},
		{name: "separators in path", in: "r.io/a.b_c__d--e", want: Ref{Host: "r.io", Path: "a.b_c__d--e"}},
		{name: "empty", in: "", wantErr: "reference is empty"},
		{name: "oci scheme", in: "oci://harbor.example.com/fleet", wantErr: "has a scheme (oci://)"},
		{name: "https scheme", in: "https://r.io", wantErr: "has a scheme (https://)"},
		{name: "digest", in: "r.io/a@sha256:abc", wantErr: "may not contain spaces or '@'"},
		{name: "space", in: "r.io/a b", wantErr: "may not contain spaces"},
		{name: "bad host", in: "-r.io/a", wantErr: `"-r.io" is not a valid host name`},
		{name: "empty host", in: "/a", wantErr: `"" is not a valid host name`},
		{name: "port zero", in: "r.io:0", wantErr: `port "0" must be a number`},
		{name: "port too big", in: "r.io:70000/a", wantErr: `port "70000"`},
		{name: "port not number", in: "r.io:http/a", wantErr: `port "http"`},
		{name: "empty port", in: "r.io:/a", wantErr: `port ""`},
		{name: "uppercase path", in: "r.io/Fleet", wantErr: `path component "Fleet"`},
		{name: "double slash", in: "r.io/a//b", wantErr: `path component ""`},
		{name: "bad ipv6", in: "[zz]:5000", wantErr: "is not an IPv6 address"},
		{name: "unterminated ipv6", in: "[::1:5000", wantErr: "unterminated IPv6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if again, err := Parse(got.String()); err != nil || again != got {
				t.Fatalf("round trip of %q: %+v, %v", got.String(), again, err)
			}
		})
	}
}
