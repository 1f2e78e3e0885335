package testbed

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TraefikRouterBinary is the test bed's Traefik router (tools/traefik-router): Traefik's file
// provider, rule parser and muxer, answering which router and service a request reaches.
const TraefikRouterBinary = "traefik-router"

// TraefikRoute is where Traefik sends one request: the router and service, empty when no router
// matches (Traefik answers 404).
type TraefikRoute struct{ Router, Service string }

// TraefikRoutes loads fragments (file name → Traefik dynamic-configuration YAML) as Traefik's file
// provider loads a directory, and returns where Traefik's router sends each of urls (http:// to
// the routers without tls, https:// to those with). What Traefik reports about the fragments (a
// rule it cannot parse, a service missing) is returned as problems, one a line. The test is
// skipped without the binary, or failed when FLEET_REQUIRE_TESTBED=1.
func TraefikRoutes(tb testing.TB, fragments map[string]string, urls ...string) (routes map[string]TraefikRoute, problems []string) {
	tb.Helper()
	bin := BinaryT(tb, TraefikRouterBinary)
	dir := tb.TempDir()
	for name, yaml := range fragments {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(yaml), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(tb.Context(), bin, append([]string{dir}, urls...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s: %v\n%s", TraefikRouterBinary, err, stderr.String())
	}
	routes = map[string]TraefikRoute{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			tb.Fatalf("%s: unexpected line %q", TraefikRouterBinary, line)
		}
		if f[1] == "-" {
			f[1], f[2] = "", ""
		}
		routes[f[0]] = TraefikRoute{Router: f[1], Service: f[2]}
	}
	if len(routes) != len(urls) {
		tb.Fatalf("%s answered %d of %d URLs:\n%s", TraefikRouterBinary, len(routes), len(urls), stdout.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" {
			problems = append(problems, strings.TrimPrefix(line, "error: "))
		}
	}
	return routes, problems
}

// String is "router → service", or "404".
func (r TraefikRoute) String() string {
	if r.Router == "" {
		return "404"
	}
	return fmt.Sprintf("%s → %s", r.Router, r.Service)
}
