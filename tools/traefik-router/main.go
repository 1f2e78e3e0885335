// Command traefik-router answers which Traefik service a request reaches, using Traefik's own
// parts (github.com/traefik/traefik/v3, pinned in go.mod): its file provider loads a directory
// of dynamic-configuration fragments (the YAML `fleet-controller hub` writes into the gateway's
// ConfigMaps) exactly as Traefik's `providers.file.directory` does, and its HTTP muxer and
// request decorator, which Traefik's router manager uses per entry point, match each request
// against every router's rule by Traefik's priority (the rule's length unless set).
//
// The full Traefik command does not build from the module proxy; these packages do, given the
// gorilla/mux replace of Traefik's own go.mod (copied here). internal/testbed runs it as
//
//	traefik-router DIR URL...
//
// and reads one line per URL: "URL ROUTER SERVICE", or "URL - -" when no router matches (Traefik
// answers 404). A router with tls serves only https URLs, one without only http ones, as with
// Traefik's usual web and websecure entry points. Errors in a fragment (a rule Traefik cannot
// parse, a router without a service) are printed on stderr as "error: ..." lines; the router
// is skipped, as Traefik skips it.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"

	"github.com/rs/zerolog"
	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/middlewares/requestdecorator"
	httpmuxer "github.com/traefik/traefik/v3/pkg/muxer/http"
	"github.com/traefik/traefik/v3/pkg/provider/file"
	"github.com/traefik/traefik/v3/pkg/safe"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: traefik-router DIR URL...")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:], os.Stdout, os.Stderr))
}

func run(dir string, urls []string, stdout, stderr io.Writer) int {
	zerolog.SetGlobalLevel(zerolog.Disabled)
	cfg, err := load(dir)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	plain, secure, errs := muxers(cfg)
	for _, e := range errs {
		fmt.Fprintln(stderr, "error:", e)
	}
	decorator := requestdecorator.New(nil)
	for _, u := range urls {
		req := httptest.NewRequest(http.MethodGet, u, nil)
		mux := plain
		if req.URL.Scheme == "https" {
			mux = secure
		}
		rec := httptest.NewRecorder()
		decorator.ServeHTTP(rec, req, mux.ServeHTTP)
		answer := "- -"
		if rec.Code == http.StatusOK {
			answer = rec.Body.String()
		}
		fmt.Fprintln(stdout, u, answer)
	}
	return 0
}

// load reads dir through Traefik's file provider, as a Traefik with providers.file.directory.
func load(dir string) (*dynamic.Configuration, error) {
	p := &file.Provider{Directory: dir}
	if err := p.Init(); err != nil {
		return nil, err
	}
	ch := make(chan dynamic.Message, 1)
	pool := safe.NewPool(context.Background())
	defer pool.Stop()
	if err := p.Provide(ch, pool); err != nil {
		return nil, err
	}
	msg := <-ch
	return msg.Configuration, nil
}

// muxers builds Traefik's muxer of the http and of the https entry point from cfg's routers,
// each answering "ROUTER SERVICE" when it matches.
func muxers(cfg *dynamic.Configuration) (plain, secure *httpmuxer.Muxer, errs []string) {
	parser, err := httpmuxer.NewSyntaxParser()
	if err != nil {
		panic(err) // Traefik's built-in matchers
	}
	plain, secure = httpmuxer.NewMuxer(parser), httpmuxer.NewMuxer(parser)
	if cfg == nil || cfg.HTTP == nil {
		return plain, secure, nil
	}
	names := make([]string, 0, len(cfg.HTTP.Routers))
	for name := range cfg.HTTP.Routers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := cfg.HTTP.Routers[name]
		if r.Service == "" {
			errs = append(errs, fmt.Sprintf("router %s: no service", name))
			continue
		}
		if _, ok := cfg.HTTP.Services[r.Service]; !ok {
			errs = append(errs, fmt.Sprintf("router %s: service %s not defined", name, r.Service))
			continue
		}
		priority := r.Priority
		if priority == 0 {
			priority = httpmuxer.GetRulePriority(r.Rule)
		}
		answer := name + " " + r.Service
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, answer) })
		mux := plain
		if r.TLS != nil {
			mux = secure
		}
		if err := mux.AddRoute(r.Rule, r.RuleSyntax, priority, h); err != nil {
			errs = append(errs, fmt.Sprintf("router %s: %s", name, strings.ReplaceAll(err.Error(), "\n", " ")))
		}
	}
	return plain, secure, errs
}
