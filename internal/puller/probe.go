package puller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// DefaultProbeTimeout bounds one probe of one registry.
const DefaultProbeTimeout = 15 * time.Second

// errNotARegistry is a /v2/ that answers 404: something listens, but no OCI registry.
var errNotARegistry = errors.New("GET /v2/ answered 404: no OCI distribution API at this address")

// ProbeResult is what one probe of a registry found: an empty Class means it answered.
type ProbeResult struct {
	Registry string
	Class    Class
	Err      error
	At       time.Time
}

// Probe asks r whether it is reachable with the credentials and TLS settings an agent pulls
// with: GET /v2/ through the same transport and authentication as a pull (the 401 challenge
// answered with basic credentials or a token), bounded by limit (DefaultProbeTimeout when
// zero) and opts' dial, header and idle timeouts. The result's Class is empty when the registry
// answered 200, else one of Classify's classes (a 404 at /v2/ is Unreachable). It returns an
// error only for what is not the registry's doing: an invalid entry or ctx ending.
func Probe(ctx context.Context, r Registry, limit time.Duration, opts Options) (ProbeResult, error) {
	opts.DialTimeout = timeout(opts.DialTimeout, DefaultDialTimeout)
	opts.ResponseHeaderTimeout = timeout(opts.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	opts.IdleTimeout = timeout(opts.IdleTimeout, DefaultIdleTimeout)
	if opts.UserAgent == "" {
		opts.UserAgent = "fleet-controller"
	}
	t, err := newTarget(r, opts)
	if err != nil {
		return ProbeResult{}, err
	}
	if limit <= 0 {
		limit = DefaultProbeTimeout
	}
	pctx, cancel := context.WithTimeoutCause(ctx, limit, errAttemptTimeout)
	defer cancel()
	reg := &remote.Registry{RepositoryOptions: remote.RepositoryOptions{
		Client: t.client, Reference: registry.Reference{Registry: t.host}, PlainHTTP: t.BasicHTTP,
	}}
	err = reg.Ping(pctx)
	res := ProbeResult{Registry: r.Name, At: time.Now()}
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return ProbeResult{}, ctx.Err()
	}
	if errors.Is(context.Cause(pctx), errAttemptTimeout) {
		err = fmt.Errorf("no answer to GET /v2/ within %s: %w", limit, errAttemptTimeout)
	}
	if errors.Is(err, errdef.ErrNotFound) {
		err = errNotARegistry
	}
	class, ours := Classify(ctx, err)
	if !ours {
		class = Unreachable
	}
	res.Class, res.Err = class, err
	return res, nil
}
