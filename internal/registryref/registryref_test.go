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
		{name: "ipv6 without port", in: "[fe80::1]", want: Ref{Host: "fe80::1"}},
		{name: "ipv6 ending in digits", in: "[fe80::1:5000]/x", want: Ref{Host: "fe80::1:5000", Path: "x"}},
		{name: "single-label host", in: "localhost:5000/a", want: Ref{Host: "localhost", Port: 5000, Path: "a"}},
		{name: "digits in labels", in: "1password.com/v1", want: Ref{Host: "1password.com", Path: "v1"}},
		{name: "uppercase host", in: "Harbor.Example.COM/a", want: Ref{Host: "Harbor.Example.COM", Path: "a"}},
		{name: "63-character label", in: strings.Repeat("a", 63) + ".io", want: Ref{Host: strings.Repeat("a", 63) + ".io"}},
		{name: "port 65535", in: "r.io:65535", want: Ref{Host: "r.io", Port: 65535}},
		{name: "separators in path", in: "r.io/a.b_c__d--e", want: Ref{Host: "r.io", Path: "a.b_c__d--e"}},
		{name: "empty", in: "", wantErr: "reference is empty"},
		{name: "oci scheme", in: "oci://harbor.example.com/fleet", wantErr: "has a scheme (oci://)"},
		{name: "https scheme", in: "https://r.io", wantErr: "has a scheme (https://)"},
		{name: "digest", in: "r.io/a@sha256:abc", wantErr: "may not contain spaces, control characters or '@'"},
		{name: "space", in: "r.io/a b", wantErr: "may not contain spaces"},
		{name: "newline", in: "r.io/a\n", wantErr: "may not contain spaces, control characters"},
		{name: "non-breaking space", in: "r.io/a\u00a0b", wantErr: "may not contain spaces"},
		{name: "trailing slash", in: "r.io/fleet/", wantErr: `reference "r.io/fleet/" ends in '/': write "r.io/fleet"`},
		{name: "slash after host", in: "r.io/", wantErr: `reference "r.io/" ends in '/': write "r.io"`},
		{name: "slash after port", in: "r.io:5000/", wantErr: `ends in '/': write "r.io:5000"`},
		{name: "two trailing slashes", in: "r.io/a//", wantErr: `has an empty path segment (//): write "r.io/a"`},
		{name: "empty segment", in: "r.io//fleet", wantErr: `reference "r.io//fleet" has an empty path segment (//): write "r.io/fleet"`},
		{name: "inner empty segment", in: "r.io/a//b", wantErr: `has an empty path segment (//): write "r.io/a/b"`},
		{name: "unbracketed ipv6 with port", in: "fe80::1:5000", wantErr: `IPv6 address "fe80::1:5000" must be in brackets: write "[fe80::1]:5000" if 5000 is the port, or "[fe80::1:5000]" if it has none`},
		{name: "unbracketed ipv6 with port and path", in: "fe80::1:5000/fleet", wantErr: `write "[fe80::1]:5000/fleet" if 5000 is the port, or "[fe80::1:5000]/fleet" if it has none`},
		{name: "unbracketed loopback", in: "::1", wantErr: `IPv6 address "::1" must be in brackets: write "[::1]", or "[::1]:port" with a port`},
		{name: "unbracketed ipv6 hex end", in: "fe80::abcd/x", wantErr: `write "[fe80::abcd]/x", or "[fe80::abcd]:port/x" with a port`},
		{name: "unbracketed ipv6 port too big", in: "fe80::1:70000", wantErr: `an IPv6 address must be in brackets: write "[fe80::1]:70000"`},
		{name: "many colons", in: "r.io:50:00", wantErr: `"r.io:50:00" is neither host[:port] nor [IPv6 address][:port]`},
		{name: "ipv4 in brackets", in: "[127.0.0.1]:5000", wantErr: `"127.0.0.1" is not an IPv6 address; only IPv6 addresses go in brackets`},
		{name: "junk after bracket", in: "[::1]5000", wantErr: `only :port may follow "[::1]", not "5000"`},
		{name: "empty brackets", in: "[]:5000", wantErr: `"" is not an IPv6 address`},
		{name: "ipv6 empty port", in: "[::1]:", wantErr: `port "" must be a number`},
		{name: "bad host", in: "-r.io/a", wantErr: `"-r.io" is not a valid host name`},
		{name: "empty host", in: "/a", wantErr: `"" is not a valid host name`},
		{name: "port zero", in: "r.io:0", wantErr: `port "0" must be a number`},
		{name: "port too big", in: "r.io:70000/a", wantErr: `port "70000"`},
		{name: "port not number", in: "r.io:http/a", wantErr: `port "http"`},
		{name: "empty port", in: "r.io:/a", wantErr: `port ""`},
		{name: "empty port no path", in: "r.io:", wantErr: `port "" must be a number`},
		{name: "signed port", in: "r.io:+5000", wantErr: `port "+5000" must be a number`},
		{name: "64-character label", in: strings.Repeat("a", 64) + ".io", wantErr: "is longer than 63 characters"},
		{name: "host too long", in: strings.Repeat(strings.Repeat("a", 63)+".", 4) + "io", wantErr: "is not a valid host name"},
		{name: "bad ipv4", in: "10.0.0.256:5000", wantErr: `"10.0.0.256" is not a valid host name or IPv4 address`},
		{name: "numeric host", in: "5000/fleet", wantErr: `"5000" is not a valid host name or IPv4 address`},
		{name: "trailing dot", in: "r.io./a", wantErr: `"r.io." is not a valid host name`},
		{name: "underscore in host", in: "my_registry/a", wantErr: `"my_registry" is not a valid host name`},
		{name: "tag", in: "r.io/fleet:v1", wantErr: `path component "fleet:v1" has a ':'`},
		{name: "uppercase path", in: "r.io/Fleet", wantErr: `path component "Fleet"`},
		{name: "bad ipv6", in: "[zz]:5000", wantErr: `"zz" is not an IPv6 address`},
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
