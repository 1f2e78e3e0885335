// Package registryref parses OCI registry references of the form host[:port][/path], as stored
// in a registry's `reference`: no scheme, no tag or digest, no empty path segment, IPv6 addresses
// in brackets.
package registryref

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Ref is a parsed registry reference.
type Ref struct {
	Host string // hostname or IP address, IPv6 without brackets
	Port int    // 0 when absent
	Path string // repository namespace, "" when absent
}

// Authority is host[:port] as used in registry URLs.
func (r Ref) Authority() string {
	if r.Port == 0 {
		if strings.Contains(r.Host, ":") {
			return "[" + r.Host + "]"
		}
		return r.Host
	}
	return net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
}

func (r Ref) String() string {
	if r.Path == "" {
		return r.Authority()
	}
	return r.Authority() + "/" + r.Path
}

var (
	hostname = regexp.MustCompile(`^(?i:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.(?i:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?))*$`)
	// pathComponent is the OCI distribution spec's repository name component.
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
)

// Parse checks s and splits it; errors say what is wrong and how to write it.
func Parse(s string) (Ref, error) {
	if s == "" {
		return Ref{}, fmt.Errorf("reference is empty: write host[:port][/path], e.g. harbor.example.com/fleet")
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return Ref{}, fmt.Errorf("reference %q has a scheme (%s://): drop it and write host[:port][/path]; use basic_http for plain-HTTP registries", s, s[:i])
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r == '@' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return Ref{}, fmt.Errorf("reference %q may not contain spaces, control characters or '@': write host[:port][/path] without tag or digest", s)
	}
	authority, path, hasPath := strings.Cut(s, "/")
	ref := Ref{}
	var host, port string
	var hasPort bool
	switch {
	case strings.HasPrefix(authority, "["):
		end := strings.Index(authority, "]")
		if end < 0 {
			return Ref{}, fmt.Errorf("reference %q: unterminated IPv6 address: write [address] or [address]:port", s)
		}
		host = authority[1:end]
		if net.ParseIP(host) == nil || !strings.Contains(host, ":") {
			return Ref{}, fmt.Errorf("reference %q: %q is not an IPv6 address; only IPv6 addresses go in brackets", s, host)
		}
		after := authority[end+1:]
		if after != "" && !strings.HasPrefix(after, ":") {
			return Ref{}, fmt.Errorf("reference %q: only :port may follow %q, not %q", s, authority[:end+1], after)
		}
		port, hasPort = strings.CutPrefix(after, ":")
	case strings.Count(authority, ":") > 1:
		rest := s[len(authority):]
		if net.ParseIP(authority) != nil {
			return Ref{}, fmt.Errorf("reference %q: IPv6 address %q must be in brackets: %s", s, authority, bracketed(authority, rest))
		}
		if i := strings.LastIndex(authority, ":"); net.ParseIP(authority[:i]) != nil {
			return Ref{}, fmt.Errorf("reference %q: an IPv6 address must be in brackets: write %q", s, "["+authority[:i]+"]"+authority[i:]+rest)
		}
		return Ref{}, fmt.Errorf("reference %q: %q is neither host[:port] nor [IPv6 address][:port]", s, authority)
	default:
		host, port, hasPort = strings.Cut(authority, ":")
	}
	if err := checkHost(host); err != nil {
		return Ref{}, fmt.Errorf("reference %q: %w", s, err)
	}
	ref.Host = host
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || strings.Trim(port, "0123456789") != "" || n < 1 || n > 65535 {
			return Ref{}, fmt.Errorf("reference %q: port %q must be a number from 1 to 65535", s, port)
		}
		ref.Port = n
	}
	if !hasPath {
		return ref, nil
	}
	components := strings.Split(path, "/")
	if kept := slices.DeleteFunc(slices.Clone(components), func(c string) bool { return c == "" }); len(kept) != len(components) {
		fix := authority
		if len(kept) > 0 {
			fix += "/" + strings.Join(kept, "/")
		}
		if strings.Contains(s[len(authority):], "//") {
			return Ref{}, fmt.Errorf("reference %q has an empty path segment (//): write %q", s, fix)
		}
		return Ref{}, fmt.Errorf("reference %q ends in '/': write %q", s, fix)
	}
	for _, c := range components {
		if strings.Contains(c, ":") {
			return Ref{}, fmt.Errorf("reference %q: path component %q has a ':': a reference names a registry and namespace, without tag; a port goes right after the host", s, c)
		}
		if !pathComponent.MatchString(c) {
			return Ref{}, fmt.Errorf("reference %q: path component %q must be lowercase letters and digits separated by '.', '_', '__' or '-'", s, c)
		}
	}
	ref.Path = path
	return ref, nil
}

// checkHost accepts an IPv4 or IPv6 address or a DNS host name (labels of letters, digits and
// inner '-', each at most 63 characters, at most 253 in all, the last not all digits).
func checkHost(host string) error {
	if net.ParseIP(host) != nil {
		return nil
	}
	if host == "" || len(host) > 253 || !hostname.MatchString(host) {
		return fmt.Errorf("%q is not a valid host name", host)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if len(l) > 63 {
			return fmt.Errorf("%q is not a valid host name: label %q is longer than 63 characters", host, l)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("%q is not a valid host name or IPv4 address", host)
	}
	return nil
}

// bracketed says how to write an unbracketed IPv6 address addr followed by rest ("" or "/path").
// When addr's last group could be a port, it offers both readings.
func bracketed(addr, rest string) string {
	i := strings.LastIndex(addr, ":")
	head, last := addr[:i], addr[i+1:]
	if n, err := strconv.Atoi(last); err == nil && strings.Trim(last, "0123456789") == "" && n >= 1 && n <= 65535 &&
		net.ParseIP(head) != nil && strings.Contains(head, ":") {
		return fmt.Sprintf("write %q if %s is the port, or %q if it has none", "["+head+"]:"+last+rest, last, "["+addr+"]"+rest)
	}
	return fmt.Sprintf("write %q, or %q with a port", "["+addr+"]"+rest, "["+addr+"]:port"+rest)
}
