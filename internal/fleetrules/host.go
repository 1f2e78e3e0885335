package fleetrules

// The hub gateway's rules (host.go): what path a route may publish, what host a hub gateway
// serves, and who holds a host. The provider's plan checks and the app-routes reconciler call
// these; the FleetAppRoute CRD's path rule is RoutePathPattern, which TestRoutePath pins
// against CheckRoutePath.

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// RoutePathPattern is CheckRoutePath as a regular expression (RE2, as the apiserver's CEL
// matches() evaluates it): a "/", or "/"-separated segments of RFC 3986 path characters other
// than those Traefik's rule syntax gives a meaning to, none empty, "." or "..", optionally ending
// in "/". The CRD's XValidation on spec.path repeats it verbatim.
const RoutePathPattern = `^(/|(/([.]*([A-Za-z0-9_~$*+;=:@-]|%[0-9A-Fa-f]{2})([A-Za-z0-9._~$*+;=:@-]|%[0-9A-Fa-f]{2})*|[.][.][.]+))+/?)$`

// pathChars are the characters a route's path may hold besides "/" and a "%XX" escape: RFC
// 3986's unreserved characters and the sub-delimiters, ":" and "@" of its pchar, minus
// the quote "'" and the parentheses, which Traefik's rule syntax reads, and "!", "&" and ",",
// which are its operators and argument separator.
const pathChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~$*+;=:@"

// CheckRoutePath returns nil when p is a path a route may publish: it starts with "/", holds
// only the characters of RoutePathPattern and "%XX" escapes, and has no empty segment ("//"),
// no "." or ".." segment. The error says what is wrong and where.
func CheckRoutePath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q must start with /", p)
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/' || strings.IndexByte(pathChars, c) >= 0:
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return fmt.Errorf("path %q: %% at %d does not start an escape %%XX of two hexadecimal digits", p, i)
			}
			i += 2
		default:
			return fmt.Errorf("path %q: character %q at %d is not allowed: a path holds letters, digits, %q, /, and %%XX escapes for anything else", p, c, i, "-._~$*+;=:@")
		}
	}
	if p == "/" {
		return nil
	}
	segments := strings.Split(strings.TrimSuffix(p[1:], "/"), "/")
	for _, s := range segments {
		switch s {
		case "":
			return fmt.Errorf("path %q has an empty segment (//): join the slashes", p)
		case ".", "..":
			return fmt.Errorf("path %q has a %q segment, which a URL's path resolves away: write the path it stands for", p, s)
		}
	}
	return nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// CheckHubHostName returns nil unless host is a wildcard ("*.example.com"), which a hub
// gateway does not serve: its Host rule matches a name, not a pattern.
func CheckHubHostName(host string) error {
	if strings.HasPrefix(host, "*.") {
		return fmt.Errorf("host %q is a wildcard, which the hub gateway's Host rule never matches: name one host, or use mode site", host)
	}
	return nil
}

// CheckHubHost returns nil when a hub gateway serving domain (a site's hubGateway.domain) may
// serve host: a name, not a wildcard, that is domain or below it.
func CheckHubHost(host, domain string) error {
	if err := CheckHubHostName(host); err != nil {
		return err
	}
	if domain == "" {
		return fmt.Errorf("the site's hub gateway has no domain, so it serves no host: set its domain")
	}
	if host != domain && !strings.HasSuffix(host, "."+domain) {
		return fmt.Errorf("host %q is not the site's hub gateway domain %q or a name below it: use a host ending in .%s, or use mode site", host, domain, domain)
	}
	return nil
}

// ClaimsHost reports whether r claims its host: it is not being deleted, its mode publishes
// (not none), it has a host and a path CheckRoutePath accepts.
func ClaimsHost(r *v1alpha1.FleetAppRoute) bool {
	return r.DeletionTimestamp.IsZero() && r.Spec.Mode != v1alpha1.RouteNone && r.Spec.Host != "" && CheckRoutePath(RoutePath(r)) == nil
}

// RoutePath is r's path, "/" when unset (the CRD's default).
func RoutePath(r *v1alpha1.FleetAppRoute) string { return cmp.Or(r.Spec.Path, "/") }

// HostBlocker is the route that keeps route from publishing its host and path, or nil when
// route may publish them. A host belongs to one workspace at a time, whatever the path: that of
// its first claim (created first, then by namespace/name); a route of any other workspace is
// blocked by that claim. Within the holding workspace routes share the host with different
// paths, and a host and path belong to their first claim. Routes are those of the hub, in any
// workspace, route itself among them or not (it is recognised by namespace and name); only
// those that ClaimsHost count. Nil too when route claims no host.
func HostBlocker(routes []v1alpha1.FleetAppRoute, route *v1alpha1.FleetAppRoute) *v1alpha1.FleetAppRoute {
	if !ClaimsHost(route) {
		return nil
	}
	var holder, pathHolder *v1alpha1.FleetAppRoute
	consider := func(c *v1alpha1.FleetAppRoute) {
		if holder == nil || claimedBefore(c, holder) {
			holder = c
		}
		if c.Namespace == route.Namespace && RoutePath(c) == RoutePath(route) && (pathHolder == nil || claimedBefore(c, pathHolder)) {
			pathHolder = c
		}
	}
	consider(route)
	for i := range routes {
		c := &routes[i]
		if c.Namespace == route.Namespace && c.Name == route.Name || c.Spec.Host != route.Spec.Host || !ClaimsHost(c) {
			continue
		}
		consider(c)
	}
	switch {
	case holder.Namespace != route.Namespace:
		return holder
	case pathHolder != route:
		return pathHolder
	}
	return nil
}

// claimedBefore orders claims: created first, then by namespace, then by name.
func claimedBefore(a, b *v1alpha1.FleetAppRoute) bool {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) < 0
}

// HostTakenMessage says why blocker keeps route from publishing, and what to do.
func HostTakenMessage(route, blocker *v1alpha1.FleetAppRoute) string {
	if blocker.Namespace != route.Namespace {
		return fmt.Sprintf("host %s belongs to workspace %s, whose FleetAppRoute %s/%s claimed it first: a host serves one workspace at a time, whatever the path; "+
			"give this route another host (it takes the host over once %s has no route on it)", route.Spec.Host, blocker.Namespace, blocker.Namespace, blocker.Name, blocker.Namespace)
	}
	return fmt.Sprintf("host %s path %s is held by FleetAppRoute %s/%s, which claimed it first: give this route another host or path, or delete that one",
		route.Spec.Host, RoutePath(route), blocker.Namespace, blocker.Name)
}
