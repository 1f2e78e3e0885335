// Package registryref parses OCI registry references of the form host[:port][/path], as stored
// in a registry's `reference`: no scheme, no tag or digest.
package registryref

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
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
	if strings.ContainsAny(s, "@ \t") {
		return Ref{}, fmt.Errorf("reference %q may not contain spaces or '@': write host[:port][/path] without tag or digest", s)
	}
	authority, path, _ := strings.Cut(s, "/")
	ref := Ref{Path: strings.TrimSuffix(path, "/")}
	host, port := authority, ""
	switch {
	case strings.HasPrefix(authority, "["):
		end := strings.Index(authority, "]")
		if end < 0 {
			return Ref{}, fmt.Errorf("reference %q: unterminated IPv6 address", s)
		}
		host, port = authority[1:end], strings.TrimPrefix(authority[end+1:], ":")
		if net.ParseIP(host) == nil || (authority[end+1:] != "" && !strings.HasPrefix(authority[end+1:], ":")) {
			return Ref{}, fmt.Errorf("reference %q: %q is not an IPv6 address", s, host)
		}
	case strings.Count(authority, ":") == 1:
		host, port, _ = strings.Cut(authority, ":")
	}
	if host == "" || (net.ParseIP(host) == nil && !hostname.MatchString(host)) {
		return Ref{}, fmt.Errorf("reference %q: %q is not a valid host name", s, host)
	}
	ref.Host = host
	if port != "" || strings.HasSuffix(authority, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Ref{}, fmt.Errorf("reference %q: port %q must be a number from 1 to 65535", s, port)
		}
		ref.Port = n
	}
	if ref.Path != "" {
		for _, c := range strings.Split(ref.Path, "/") {
			if !pathComponent.MatchString(c) {
				return Ref{}, fmt.Errorf("reference %q: path component %q must be lowercase letters and digits separated by '.', '_', '__' or '-'", s, c)
			}
		}
	}
	return ref, nil
}
