// Package puller pulls an OCI artifact through an ordered chain of registries with failover,
// back-off and digest verification.
//
// Each attempt at a registry ends in success or in a failure class (see Classify). Unauthorized,
// TLS, Unreachable and IntegrityMismatch move on to the next registry at once; NotFound means
// replication is behind, so the registry is asked again with exponential back-off until the
// replication wait has passed since its first NotFound. Content is addressed by digest and
// verified before it is committed to the destination, which is what makes failover safe.
//
// Every attempt is bounded: the dial, the wait for each response's headers, each pause in the
// bytes a registry sends and the whole attempt have timeouts (see Options), so a registry that
// never answers, or stalls mid-download, costs one attempt and fails as Unreachable. Only the
// caller's own context ending aborts a pull.
//
// Step makes one attempt and never sleeps, for reconcilers; Pull loops over Step.
package puller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/umkim/terraform-provider-fleet/internal/registryref"
)

// errIntegrity marks a registry answer that contradicts the digest asked for.
var errIntegrity = errors.New("content does not match its digest")

// errAttemptTimeout marks an attempt cut short by Options.AttemptTimeout.
var errAttemptTimeout = errors.New("the attempt took longer than the attempt timeout")

// Default timeouts of one attempt; see Options.
const (
	DefaultDialTimeout           = 10 * time.Second
	DefaultResponseHeaderTimeout = time.Minute
	DefaultAttemptTimeout        = 10 * time.Minute
	DefaultIdleTimeout           = 30 * time.Second
)

// Options tune a Puller; the zero value of each field is a sensible default.
type Options struct {
	// ReplicationWait is how long a registry may answer NotFound before the puller moves on.
	ReplicationWait time.Duration
	// Backoff spaces the attempts at a registry that answers NotFound.
	Backoff Backoff
	// Clock defaults to the wall clock.
	Clock Clock
	// Concurrency is the number of blobs fetched at once; default 4 (the oras CLI fetches 3).
	Concurrency int
	// OnAttempt, if set, is called after every attempt.
	OnAttempt func(Attempt)
	// OnRead, if set, is called with n = 0 when a blob or manifest starts downloading and with the
	// number of bytes read as they arrive, for metrics.
	OnRead func(desc ocispec.Descriptor, n int)
	// OnProgress, if set, is called as an attempt goes: when it starts, once it has resolved the
	// artifact, then as bytes arrive. It may be called from several goroutines at once and must be quick (keep
	// the value, report it at your own pace).
	OnProgress func(Progress)

	// DialTimeout bounds connecting to a registry; default DefaultDialTimeout (10s).
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the headers of each response once a request is
	// sent, so that a registry that accepts connections and then says nothing fails as
	// Unreachable; default DefaultResponseHeaderTimeout (1m).
	ResponseHeaderTimeout time.Duration
	// AttemptTimeout bounds one whole attempt at a registry, downloads included, so that a
	// registry that stalls mid-download fails as Unreachable too; default DefaultAttemptTimeout
	// (10m). Raise it for artifacts that take longer than that to download.
	//
	// For these timeouts, a negative value means no limit.
	AttemptTimeout time.Duration
	// IdleTimeout bounds each pause in what a registry sends: once a request is sent, or a read
	// returned bytes, the next bytes must come within it, or that registry failed as Unreachable
	// ("stalled"). It catches a registry that accepts connections and says nothing, and one
	// that freezes mid-blob, in seconds rather than at the end of the attempt timeout; default
	// DefaultIdleTimeout (30s).
	IdleTimeout time.Duration

	// UserAgent is sent with every request; default "fleet-controller". Give the version, as in
	// "fleet-controller/1.2.3".
	UserAgent string

	// Verify, if set, is the signature every artifact must carry at a registry before any of
	// its content is fetched from it; see Verify.
	Verify *Verify
}

// timeout returns d, or def when d is zero; a negative d, no limit, becomes zero.
func timeout(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Puller pulls artifacts through one chain into one destination. It is safe for concurrent use.
type Puller struct {
	chain []target
	store *Cache
	opts  Options
	// verifier checks signatures when Options.Verify is set.
	verifier signatureVerifier
}

// target is a chain entry with its HTTP client, built once.
type target struct {
	Registry
	host, namespace string
	client          *auth.Client
	// source is set for the chain's source registry, where content is pushed, not replicated.
	source bool
}

// New returns a Puller for chain that stores content in the cache (an OCI image layout) in the
// directory dest, opened with OpenCache. The layout tags each pulled manifest with
// "<repository>:<tag>" or "<repository>@<digest>", as asked.
func New(chain []Registry, dest string, opts Options) (*Puller, error) {
	cache, err := OpenCache(dest)
	if err != nil {
		return nil, fmt.Errorf("open destination %s as an OCI layout: %w", dest, err)
	}
	p, err := NewWithCache(chain, cache, opts)
	if err != nil {
		cache.Close()
	}
	return p, err
}

// NewWithCache returns a Puller for chain that stores content in cache, which pullers of
// several chains may share.
func NewWithCache(chain []Registry, cache *Cache, opts Options) (*Puller, error) {
	if len(chain) == 0 {
		return nil, errNoChain
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	opts.DialTimeout = timeout(opts.DialTimeout, DefaultDialTimeout)
	opts.ResponseHeaderTimeout = timeout(opts.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	opts.AttemptTimeout = timeout(opts.AttemptTimeout, DefaultAttemptTimeout)
	opts.IdleTimeout = timeout(opts.IdleTimeout, DefaultIdleTimeout)
	if opts.UserAgent == "" {
		opts.UserAgent = "fleet-controller"
	}
	p := &Puller{opts: opts}
	var err error
	if p.verifier, err = newSignatureVerifier(opts.Verify); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	roles := false
	for _, r := range chain {
		roles = roles || r.Role != ""
	}
	for i, r := range chain {
		if r.Name == "" {
			return nil, fmt.Errorf("registry %d of the chain has no name; name every registry", i+1)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("registry %q appears twice in the chain; give each entry its own name", r.Name)
		}
		seen[r.Name] = true
		if r.Role != "" && r.Role != RoleSource && r.Role != RoleMirror {
			return nil, fmt.Errorf("registry %q has role %q; want %q or %q", r.Name, r.Role, RoleSource, RoleMirror)
		}
		t, err := newTarget(r, opts)
		if err != nil {
			return nil, err
		}
		t.source = r.Role == RoleSource || !roles && i == len(chain)-1
		p.chain = append(p.chain, t)
	}
	p.store = cache
	return p, nil
}

func newTarget(r Registry, opts Options) (target, error) {
	ref, err := registryref.Parse(r.Reference)
	if err != nil {
		return target{}, fmt.Errorf("registry %q: %w", r.Name, err)
	}
	host, namespace := ref.Authority(), ref.Path
	tlsConfig := &tls.Config{InsecureSkipVerify: r.InsecureSkipTLS} //nolint:gosec // the user's explicit choice
	if r.CACerts != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(r.CACerts)) {
			return target{}, fmt.Errorf("registry %q: cacerts holds no PEM certificate; give the CA bundle in PEM", r.Name)
		}
		tlsConfig.RootCAs = pool
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	transport.DialContext = idleDialer(&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}, opts.IdleTimeout)
	transport.ResponseHeaderTimeout = opts.ResponseHeaderTimeout
	transport.MaxIdleConnsPerHost = 16
	var roundTripper http.RoundTripper = transport
	if r.BasicHTTP {
		roundTripper = plainHTTPTransport{transport}
	}
	user, pass := r.credentials()
	cred := auth.EmptyCredential
	if user != "" && pass != "" {
		cred = auth.Credential{Username: user, Password: pass}
	}
	return target{
		Registry:  r,
		host:      host,
		namespace: namespace,
		client: &auth.Client{
			// No retrying client: a failed request moves to the next registry at once.
			Client:     &http.Client{Transport: roundTripper},
			Header:     http.Header{"User-Agent": {opts.UserAgent}},
			Cache:      auth.NewCache(),
			Credential: auth.StaticCredential(host, cred),
		},
	}, nil
}

// errPlainHTTPToTLS is a TLS port's answer to plain HTTP.
var errPlainHTTPToTLS = errors.New("the registry demands HTTPS; unset basicHTTP")

// plainHTTPTransport tells a TLS port answering plain HTTP with 400 from any other 400: it
// checks whether the port completes a TLS handshake.
type plainHTTPTransport struct{ http.RoundTripper }

func (t plainHTTPTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	ctx, cancel := context.WithTimeout(req.Context(), 5*time.Second)
	defer cancel()
	dialer := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // probes for TLS, sends nothing
	if conn, dialErr := dialer.DialContext(ctx, "tcp", req.URL.Host); dialErr == nil {
		conn.Close()
		resp.Body.Close()
		return nil, errPlainHTTPToTLS
	}
	return resp, nil
}

// Cursor is what a pull carries from one Step to the next. Reconcilers keep it between calls
// (it marshals to JSON); the zero Cursor starts a pull, and a Cursor whose Status holds
// LastSuccess carries it over.
type Cursor struct {
	Status Status `json:"status"`
	// Index is the position in the chain of the registry the next attempt goes to.
	Index int `json:"index"`
	// Digest is the artifact's digest, resolved from its tag at most once per pull.
	Digest digest.Digest `json:"digest,omitempty"`
	// WaitingSince is when the registry at Index first answered NotFound.
	WaitingSince *time.Time `json:"waitingSince,omitempty"`
	// Done is set once the artifact is pulled or every registry has failed.
	Done bool `json:"done,omitempty"`
	// Failures are the registries this pull gave up on, in chain order.
	Failures []Failure `json:"failures,omitempty"`
}

// Step makes one attempt at the current registry and returns the new cursor and how long to wait
// before the next Step (zero: at once). It never sleeps. It returns an error, and the cursor
// unchanged, only for failures that are not a registry's: a cancelled context or a destination
// that cannot be written.
func (p *Puller) Step(ctx context.Context, a Artifact, c Cursor) (Cursor, time.Duration, error) {
	if c.Done {
		return c, 0, nil
	}
	if c.Index < 0 || c.Index >= len(p.chain) {
		return c, 0, fmt.Errorf("cursor index %d is outside the chain of %d registries; start from a zero Cursor", c.Index, len(p.chain))
	}
	if err := (registry.Reference{Registry: "localhost", Repository: a.Repository}).ValidateRepository(); err != nil || (a.Tag == "" && a.Digest == "") {
		return c, 0, fmt.Errorf("artifact %q: want <repository>@<digest> or <repository>:<tag> with a lowercase repository path", a)
	}
	t := p.chain[c.Index]
	next := c
	if c.Status.Registry != t.Name {
		next.Status.Attempts, next.WaitingSince = 0, nil
	}
	next.Status.Registry = t.Name
	next.Status.NextRetry = nil
	next.Status.Attempts++

	start := p.opts.Clock.Now()
	var verified string
	dgst, err := p.attemptWithTimeout(withVerified(ctx, &verified), t, a, c.Digest)
	now := p.opts.Clock.Now()
	class, ours := Classify(ctx, err)
	if p.opts.OnAttempt != nil {
		p.opts.OnAttempt(Attempt{Registry: t.Name, Class: class, Err: err, Start: start, End: now})
	}
	if err != nil && !ours {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return c, 0, fmt.Errorf("pull %s from %s: %w", a, t.Name, err)
	}
	next.Digest = dgst
	if err == nil {
		next.Status = Status{State: Pulled, Registry: t.Name, Attempts: next.Status.Attempts, LastSuccess: &now, Verified: verified}
		next.WaitingSince, next.Done = nil, true
		return next, 0, nil
	}

	next.Status.Reason, next.Status.Message = class, err.Error()
	if class == NotFound {
		if next.WaitingSince == nil {
			next.WaitingSince = &now
		}
		if deadline := next.WaitingSince.Add(p.opts.ReplicationWait); now.Before(deadline) {
			delay := min(p.opts.Backoff.Delay(next.Status.Attempts), deadline.Sub(now))
			retry := now.Add(delay)
			next.Status.State, next.Status.NextRetry = WaitingForArtifact, &retry
			return next, delay, nil
		}
	}
	next.Status.State = Failed
	next.Failures = append(slices.Clip(next.Failures), Failure{Registry: t.Name, Class: class, Message: next.Status.Message, Source: t.source})
	next.Index++
	next.WaitingSince = nil
	next.Done = next.Index == len(p.chain)
	return next, 0, nil
}

// Pull pulls a through the chain, waiting between attempts as Step says, and returns the final
// status. The error is an *Error when every registry failed.
func (p *Puller) Pull(ctx context.Context, a Artifact) (Status, error) {
	var c Cursor
	for {
		next, wait, err := p.Step(ctx, a, c)
		if err != nil {
			return c.Status, err
		}
		c = next
		if c.Done {
			if c.Status.State == Pulled {
				return c.Status, nil
			}
			return c.Status, &Error{Artifact: a, Failures: c.Failures}
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return c.Status, fmt.Errorf("pull %s: %w", a, ctx.Err())
			case <-p.opts.Clock.After(wait):
			}
		}
	}
}

// Resolve returns the descriptor the destination holds for a, as tagged by a successful pull.
func (p *Puller) Resolve(ctx context.Context, a Artifact) (ocispec.Descriptor, error) {
	return p.store.Resolve(ctx, layoutRef(a))
}

// layoutRef is the name a pulled manifest is tagged with in the destination layout.
func layoutRef(a Artifact) string { return a.String() }

// attemptWithTimeout is attempt bounded by Options.AttemptTimeout. An attempt cut short by it
// fails with errAttemptTimeout, whatever error the cut caused.
func (p *Puller) attemptWithTimeout(ctx context.Context, t target, a Artifact, known digest.Digest) (digest.Digest, error) {
	if p.opts.AttemptTimeout <= 0 {
		return p.attempt(ctx, t, a, known)
	}
	actx, cancel := context.WithTimeoutCause(ctx, p.opts.AttemptTimeout, errAttemptTimeout)
	defer cancel()
	dgst, err := p.attempt(actx, t, a, known)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
		err = fmt.Errorf("%w of %s: %w", errAttemptTimeout, p.opts.AttemptTimeout, err)
	}
	return dgst, err
}

// attempt pulls a from t once. It returns the artifact's digest, resolved from the tag unless
// known, also when the copy then fails.
func (p *Puller) attempt(ctx context.Context, t target, a Artifact, known digest.Digest) (digest.Digest, error) {
	repoPath := a.Repository
	if t.namespace != "" {
		repoPath = t.namespace + "/" + a.Repository
	}
	repo := &remote.Repository{
		Client:    t.client,
		Reference: registry.Reference{Registry: t.host, Repository: repoPath},
		PlainHTTP: t.BasicHTTP,
	}
	if p.opts.OnProgress != nil {
		p.opts.OnProgress(Progress{Registry: t.Name})
	}
	want := known
	if want == "" {
		want = a.Digest
	}
	ref := want.String()
	if want == "" {
		ref = a.Tag
	}
	root, err := repo.Resolve(ctx, ref)
	if err != nil {
		return known, err
	}
	if want == "" {
		want = root.Digest
	} else if root.Digest != want {
		return known, fmt.Errorf("%s resolved %s to %s: %w", t.Name, want, root.Digest, errIntegrity)
	}
	if err := p.verify(ctx, repo, root); err != nil {
		return want, err
	}
	dst := p.store.session() // holds what the pull builds on until it is tagged
	defer dst.release()
	resuming := resumingSource{ReadOnlyStorage: repo, repo: repo, sess: dst}
	var src content.ReadOnlyStorage = resuming
	copyOpts := oras.CopyGraphOptions{Concurrency: p.opts.Concurrency}
	if p.opts.OnRead != nil || p.opts.OnProgress != nil {
		tr := newTracker(t.Name, root.Size, p.store, p.opts.OnProgress)
		resuming.onResume = func(_ ocispec.Descriptor, offset int64) { tr.add(&tr.done, offset) }
		onRead := func(desc ocispec.Descriptor, n int) {
			if p.opts.OnRead != nil {
				p.opts.OnRead(desc, n)
			}
			tr.add(&tr.done, int64(n))
		}
		src = progressStorage{resuming, onRead}
		copyOpts.FindSuccessors = tr.findSuccessors
		copyOpts.OnCopySkipped = tr.skipped
	}
	err = oras.CopyGraph(ctx, src, dst, root, copyOpts)
	if err != nil {
		return want, err
	}
	if err := p.store.Tag(ctx, root, layoutRef(a)); err != nil {
		return want, &oras.CopyError{Op: "Tag", Origin: oras.CopyErrorOriginDestination, Err: err}
	}
	return want, nil
}

// progressStorage reports the bytes read from a registry.
type progressStorage struct {
	content.ReadOnlyStorage
	onRead func(ocispec.Descriptor, int)
}

func (s progressStorage) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := s.ReadOnlyStorage.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	s.onRead(desc, 0)
	return progressReader{rc, desc, s.onRead}, nil
}

type progressReader struct {
	io.ReadCloser
	desc   ocispec.Descriptor
	onRead func(ocispec.Descriptor, int)
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	if n > 0 {
		r.onRead(r.desc, n)
	}
	return n, err
}
