package puller_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/errcode"

	// The tests use internal/testbed, which imports this package: they live in puller_test,
	// as Go's own do for such a cycle, and the dot import reads as if they did not.
	. "github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

func TestParseArtifact(t *testing.T) {
	d := digest.FromString("x")
	tests := []struct {
		in   string
		want Artifact
		err  bool
	}{
		{in: "apps/web:1.0", want: Artifact{Repository: "apps/web", Tag: "1.0"}},
		{in: "apps/web@" + d.String(), want: Artifact{Repository: "apps/web", Digest: d}},
		{in: "apps/web:1.0@" + d.String(), want: Artifact{Repository: "apps/web", Digest: d}},
		{in: "apps/web", err: true},
		{in: "apps/web@sha256:nothex", err: true},
		{in: ":1.0", err: true},
	}
	for _, tt := range tests {
		got, err := ParseArtifact(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseArtifact(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err == nil && got.String() != strings.Replace(tt.in, ":1.0@", "@", 1) {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), tt.in)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	half := Backoff{Initial: time.Second, Max: 8 * time.Second, Jitter: func() float64 { return 0.5 }}
	none := Backoff{Initial: time.Second, Max: 8 * time.Second, Jitter: func() float64 { return 0 }}
	var gotHalf, gotNone []time.Duration
	for n := 1; n <= 6; n++ {
		gotHalf = append(gotHalf, half.Delay(n))
		gotNone = append(gotNone, none.Delay(n))
	}
	wantHalf := []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 6 * time.Second, 6 * time.Second, 6 * time.Second}
	wantNone := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	if !reflect.DeepEqual(gotHalf, wantHalf) || !reflect.DeepEqual(gotNone, wantNone) {
		t.Errorf("delays with jitter 0.5 = %v, want %v; with jitter 0 = %v, want %v", gotHalf, wantHalf, gotNone, wantNone)
	}
	if got := (Backoff{Jitter: func() float64 { return 0.999 }}).Delay(100); got >= 30*time.Second || got < 29*time.Second {
		t.Errorf("default cap: Delay(100) = %v, want just under 30s", got)
	}
}

func TestClassify(t *testing.T) {
	resp := func(code int) error { return &errcode.ErrorResponse{Method: "GET", URL: &url.URL{}, StatusCode: code} }
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel := context.WithDeadline(live, time.Unix(0, 0))
	defer cancel()
	headerTimeout := &url.Error{Op: "Head", URL: "http://r/v2/a/manifests/1.0", Err: httpResponseHeaderTimeout(t)}
	dialTimeout := &url.Error{Op: "Head", URL: "http://r/v2/a/manifests/1.0", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dialTimeoutErr(t)}}
	tests := []struct {
		ctx   context.Context
		err   error
		class Class
		ours  bool
	}{
		{nil, resp(401), Unauthorized, true},
		{nil, resp(403), Unauthorized, true},
		{nil, fmt.Errorf("x: %w", errdef.ErrNotFound), NotFound, true},
		{nil, resp(500), Unreachable, true},
		{nil, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, Unreachable, true},
		{nil, fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), TLS, true},
		{nil, fmt.Errorf("ingest: %w", content.ErrMismatchedDigest), IntegrityMismatch, true},
		{nil, errors.New(`GET "http://r/v2/a/blobs/sha256:1": mismatch Content-Length`), IntegrityMismatch, true},
		{nil, &oras.CopyError{Op: "Push", Origin: oras.CopyErrorOriginDestination, Err: &fs.PathError{Op: "write", Err: errors.New("no space left on device")}}, "", false},
		// The caller's context decides whether a timeout or a cancellation is the caller's.
		{cancelled, fmt.Errorf("pull: %w", context.Canceled), "", false},
		{expired, fmt.Errorf("pull: %w", context.DeadlineExceeded), "", false},
		{cancelled, headerTimeout, "", false},
		{expired, resp(500), "", false},
		{live, headerTimeout, Unreachable, true},
		{live, dialTimeout, Unreachable, true},
		{live, fmt.Errorf("blob: %w", context.DeadlineExceeded), Unreachable, true},
		{live, fmt.Errorf("%w of 1s: %w", ErrAttemptTimeout, &oras.CopyError{Op: "Push", Origin: oras.CopyErrorOriginDestination, Err: io.ErrClosedPipe}), Unreachable, true},
	}
	for _, tt := range tests {
		ctx := tt.ctx
		if ctx == nil {
			ctx = live
		}
		if class, ours := Classify(ctx, tt.err); class != tt.class || ours != tt.ours {
			t.Errorf("Classify(ctx with Err() %v, %v) = %q, %v; want %q, %v", ctx.Err(), tt.err, class, ours, tt.class, tt.ours)
		}
	}
}

// httpResponseHeaderTimeout returns net/http's own error for a response whose headers do not
// come within Transport.ResponseHeaderTimeout, from a server that accepts and never answers.
func httpResponseHeaderTimeout(t *testing.T) error {
	t.Helper()
	addr := testbed.StartHungT(t, nil).Addr
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: time.Millisecond}}
	resp, err := client.Get("http://" + addr + "/v2/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("a server that never answers answered")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("net/http's header timeout %v no longer wraps context.DeadlineExceeded: the test of Classify needs another example", err)
	}
	return errors.Unwrap(err)
}

// dialTimeoutErr returns net's own error for a dial that timed out.
func dialTimeoutErr(t *testing.T) error {
	t.Helper()
	_, err := (&net.Dialer{Timeout: time.Nanosecond}).Dial("tcp", testbed.StartBlackholeT(t).Addr)
	var opErr *net.OpError
	if !errors.As(err, &opErr) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial to a blackholed address = %v, want a *net.OpError wrapping context.DeadlineExceeded", err)
	}
	return opErr.Err
}

func TestSecretsNeverFormat(t *testing.T) {
	r := Registry{Name: "a", Reference: "r.example", Password: "push-pw", AgentPassword: "agent-pw"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(verb, r); strings.Contains(got, "-pw") {
			t.Errorf("Sprintf(%s) leaks a credential: %s", verb, got)
		}
	}
}

// pullCase runs a blocking pull of a through chain with a fake clock and records the attempts.
type pullCase struct {
	chain    []Registry
	wait     time.Duration
	clock    *fakeClock
	dest     string
	attempts []Attempt
	p        *Puller
}

func newPullCase(t *testing.T, wait time.Duration, chain ...Registry) *pullCase {
	t.Helper()
	return newPullCaseWith(t, wait, nil, chain...)
}

// newPullCaseWith is newPullCase with options changed by tune.
func newPullCaseWith(t *testing.T, wait time.Duration, tune func(*Options), chain ...Registry) *pullCase {
	t.Helper()
	pc := &pullCase{chain: chain, wait: wait, clock: newFakeClock(), dest: t.TempDir()}
	opts := Options{
		ReplicationWait: wait,
		Backoff:         Backoff{Initial: time.Second, Max: 8 * time.Second, Jitter: func() float64 { return 0.5 }},
		Clock:           pc.clock,
		OnAttempt:       func(a Attempt) { pc.attempts = append(pc.attempts, a) },
	}
	if tune != nil {
		tune(&opts)
	}
	p, err := New(chain, pc.dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	pc.p = p
	return pc
}

// tried lists "registry:class" per attempt, class empty on success.
func (pc *pullCase) tried() []string {
	var out []string
	for _, a := range pc.attempts {
		out = append(out, a.Registry+":"+string(a.Class))
	}
	return out
}

// stripMessage returns s without its free-text message, after checking there is one on failure.
func stripMessage(t *testing.T, s Status) Status {
	t.Helper()
	if (s.Reason != "") != (s.Message != "") {
		t.Errorf("status %+v: a reason comes with a message and only then", s)
	}
	s.Message = ""
	return s
}

// assertPulled checks that the destination holds the artifact under its reference, with every
// layer's bytes matching its digest.
func assertPulled(t *testing.T, pc *pullCase, a Artifact, want *testbed.Artifact) {
	t.Helper()
	desc, err := pc.p.Resolve(context.Background(), a)
	if err != nil || desc.Digest != want.Manifest.Digest {
		t.Fatalf("destination resolves %s to %v, %v; want %s", a, desc.Digest, err, want.Manifest.Digest)
	}
	for _, l := range want.Layers {
		data, err := os.ReadFile(blobFile(pc.dest, l.Digest))
		if err != nil {
			t.Fatalf("layer %s missing from the destination: %v", l.Digest, err)
		}
		if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != l.Digest.String() {
			t.Fatalf("layer %s in the destination does not match its digest", l.Digest)
		}
	}
}

func blobFile(dest string, d digest.Digest) string {
	return filepath.Join(dest, "blobs", d.Algorithm().String(), d.Encoded())
}

func pulled(registry string, attempts int, at time.Time) Status {
	return Status{State: Pulled, Registry: registry, Attempts: attempts, LastSuccess: &at}
}

func TestPullCredentials(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: "push-secret", Users: map[string]string{"agent": "agent-secret"}})
	art := newArtifact(t, []byte("chart"), []byte("values"))
	push(t, reg, "fleet/apps/web", "1.0", art)
	a := Artifact{Repository: "apps/web", Digest: art.Manifest.Digest}

	tests := []struct {
		name                    string
		user, pass, agent, agPw string
		want                    Status
	}{
		{name: "agent credentials", agent: "agent", agPw: "agent-secret", want: Status{State: Pulled, Attempts: 1}},
		{name: "push credentials when no agent ones", user: "pusher", pass: "push-secret", want: Status{State: Pulled, Attempts: 1}},
		{name: "wrong agent credentials win over right push ones", user: "pusher", pass: "push-secret", agent: "agent", agPw: "wrong-secret", want: Status{State: Failed, Reason: Unauthorized, Attempts: 1}},
		{name: "wrong push credentials", user: "pusher", pass: "wrong-secret", want: Status{State: Failed, Reason: Unauthorized, Attempts: 1}},
		{name: "no credentials", want: Status{State: Failed, Reason: Unauthorized, Attempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reg.Entry("harbor")
			r.Reference += "/fleet"
			r.Username, r.Password, r.AgentUsername, r.AgentPassword = tt.user, Secret(tt.pass), tt.agent, Secret(tt.agPw)
			pc := newPullCase(t, 0, r)
			st, err := pc.p.Pull(context.Background(), a)
			tt.want.Registry = "harbor"
			if tt.want.State == Pulled {
				now := pc.clock.Now()
				tt.want.LastSuccess = &now
			}
			if got := stripMessage(t, st); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("status = %+v, want %+v", got, tt.want)
			}
			if (err != nil) != (tt.want.State == Failed) {
				t.Errorf("error = %v, want one only on failure", err)
			}
			if tt.want.State == Pulled {
				assertPulled(t, pc, a, art)
			}
			statusJSON, _ := json.Marshal(st)
			for _, text := range []string{fmt.Sprint(err), string(statusJSON), fmt.Sprint(pc.attempts)} {
				if strings.Contains(text, "secret") {
					t.Errorf("a credential leaks: %s", text)
				}
			}
		})
	}
}

func TestPullTLS(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{TLS: true})
	art := newArtifact(t, []byte("chart"))
	push(t, reg, "apps/web", "1.0", art)
	a := Artifact{Repository: "apps/web", Tag: "1.0"}

	tests := []struct {
		name   string
		change func(*Registry)
		want   Status
	}{
		{name: "unknown CA", change: func(*Registry) {}, want: Status{State: Failed, Reason: TLS, Attempts: 1}},
		{name: "plain HTTP to a TLS port", change: func(r *Registry) { r.BasicHTTP = true }, want: Status{State: Failed, Reason: TLS, Attempts: 1}},
		{name: "CA bundle", change: func(r *Registry) { r.CACerts = reg.CA.PEM }, want: Status{State: Pulled, Attempts: 1}},
		{name: "insecureSkipTLS", change: func(r *Registry) { r.InsecureSkipTLS = true }, want: Status{State: Pulled, Attempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reg.Entry("tls")
			r.CACerts = "" // each case says what it trusts
			tt.change(&r)
			pc := newPullCase(t, time.Minute, r)
			st, _ := pc.p.Pull(context.Background(), a)
			tt.want.Registry = "tls"
			if tt.want.State == Pulled {
				now := pc.clock.Now()
				tt.want.LastSuccess = &now
				assertPulled(t, pc, a, art)
			}
			if got := stripMessage(t, st); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("status = %+v, want %+v (message %q)", got, tt.want, st.Message)
			}
		})
	}
}

func TestPullFailsOverInOrder(t *testing.T) {
	good := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	locked := testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "agent", Password: "agent-secret"})
	art := newArtifact(t, []byte("chart"), []byte("values"))
	push(t, good, "apps/web", "1.0", art)
	push(t, locked, "apps/web", "1.0", art)
	down := Registry{Name: "down", Reference: testbed.ClosedAddrT(t), BasicHTTP: true}
	wrong := locked.Entry("locked")
	wrong.AgentUsername, wrong.AgentPassword = "agent", "wrong-secret"
	a := Artifact{Repository: "apps/web", Tag: "1.0"}

	// A replication wait does not hold back failover for any class but NotFound.
	pc := newPullCase(t, time.Hour, down, wrong, good.Entry("central"))
	st, err := pc.p.Pull(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"down:Unreachable", "locked:Unauthorized", "central:"}; !reflect.DeepEqual(pc.tried(), want) {
		t.Errorf("tried %v, want %v", pc.tried(), want)
	}
	if want := pulled("central", 1, pc.clock.Now()); !reflect.DeepEqual(st, want) {
		t.Errorf("status = %+v, want %+v", st, want)
	}
	if len(pc.clock.waits) != 0 {
		t.Errorf("failover waited %v, want no wait", pc.clock.waits)
	}
	assertPulled(t, pc, a, art)

	// With no registry left, the pull fails with the last registry's class and names every one.
	pc = newPullCase(t, time.Hour, down, wrong)
	st, err = pc.p.Pull(context.Background(), a)
	var pullErr *Error
	if !errors.As(err, &pullErr) || len(pullErr.Failures) != 2 || pullErr.Failures[0].Class != Unreachable || pullErr.Failures[1].Class != Unauthorized {
		t.Fatalf("error = %v, want an *Error naming down (Unreachable) and locked (Unauthorized)", err)
	}
	if want := (Status{State: Failed, Reason: Unauthorized, Registry: "locked", Attempts: 1}); !reflect.DeepEqual(stripMessage(t, st), want) {
		t.Errorf("status = %+v, want %+v", st, want)
	}
}

// TestPullFailsOverFromHungRegistry: a registry that never answers costs one bounded attempt,
// classed Unreachable, and the pull goes on to the next registry.
func TestPullFailsOverFromHungRegistry(t *testing.T) {
	good := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, []byte("chart"), []byte("values"))
	push(t, good, "apps/web", "1.0", art)
	a := Artifact{Repository: "apps/web", Tag: "1.0"}

	tests := []struct {
		name    string
		hung    Registry
		tune    func(*Options)
		wantErr func(error) bool
	}{
		{
			name: "accepts the connection and never sends headers",
			hung: Registry{Name: "hung", Reference: testbed.StartHungT(t, nil).Addr, BasicHTTP: true},
			tune: func(o *Options) { o.ResponseHeaderTimeout = time.Second },
			wantErr: func(err error) bool {
				return errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "timeout awaiting response headers")
			},
		},
		{
			name: "dial never completes",
			hung: Registry{Name: "hung", Reference: testbed.StartBlackholeT(t).Addr, BasicHTTP: true},
			tune: func(o *Options) { o.DialTimeout = time.Second },
			wantErr: func(err error) bool {
				// Go reports a dial timeout as net's timeout error, which wraps
				// context.DeadlineExceeded, or as os.ErrDeadlineExceeded, depending on which of the
				// dialer's deadline and its context fires first.
				var opErr *net.OpError
				return errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Timeout()
			},
		},
		{
			name: "sends headers and never the body",
			hung: Registry{Name: "hung", Reference: testbed.StartProxyT(t, good, testbed.ProxyOptions{StallBlobs: true}).Addr, BasicHTTP: true},
			tune: func(o *Options) { o.AttemptTimeout = 2 * time.Second },
			wantErr: func(err error) bool {
				return errors.Is(err, ErrAttemptTimeout) && strings.Contains(err.Error(), "attempt timeout of 2s")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := newPullCaseWith(t, time.Hour, tt.tune, tt.hung, good.Entry("good"))
			st, err := pc.p.Pull(context.Background(), a)
			if err != nil {
				t.Fatalf("Pull = %v; want the artifact from good", err)
			}
			if want := []string{"hung:Unreachable", "good:"}; !reflect.DeepEqual(pc.tried(), want) {
				t.Fatalf("tried %v, want %v", pc.tried(), want)
			}
			if err := pc.attempts[0].Err; !tt.wantErr(err) {
				t.Errorf("the attempt at hung failed with %v; want the timeout that bounds it", err)
			}
			if want := pulled("good", 1, pc.clock.Now()); !reflect.DeepEqual(st, want) {
				t.Errorf("status = %+v, want %+v", st, want)
			}
			if len(pc.clock.waits) != 0 {
				t.Errorf("failover waited %v, want no wait", pc.clock.waits)
			}
			assertPulled(t, pc, a, art)
			if left, _ := filepath.Glob(filepath.Join(pc.dest, "ingest", "*")); len(left) > 0 {
				t.Errorf("partial downloads left behind: %v", left)
			}
		})
	}
}

// TestPullAbortsWhenCallerGivesUp: the caller's own context ending during an attempt at a hung
// registry aborts the pull, with the context's error; it is not a registry failure to fail over
// from.
func TestPullAbortsWhenCallerGivesUp(t *testing.T) {
	good := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, []byte("chart"))
	push(t, good, "apps/web", "1.0", art)
	a := Artifact{Repository: "apps/web", Tag: "1.0"}

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hung := Registry{Name: "hung", Reference: testbed.StartHungT(t, cancel).Addr, BasicHTTP: true}
		assertAborted(t, ctx, a, hung, good.Entry("good"), context.Canceled)
	})
	t.Run("past its deadline", func(t *testing.T) {
		// The puller's own timeouts are the defaults, far longer than the caller's deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		hung := Registry{Name: "hung", Reference: testbed.StartHungT(t, nil).Addr, BasicHTTP: true}
		assertAborted(t, ctx, a, hung, good.Entry("good"), context.DeadlineExceeded)
	})
}

func assertAborted(t *testing.T, ctx context.Context, a Artifact, hung, good Registry, want error) {
	t.Helper()
	pc := newPullCase(t, time.Hour, hung, good)
	st, err := pc.p.Pull(ctx, a)
	var pullErr *Error
	if !errors.Is(err, want) || errors.As(err, &pullErr) {
		t.Errorf("Pull error = %v; want %v, not a failure of the chain", err, want)
	}
	if !reflect.DeepEqual(st, Status{}) {
		t.Errorf("status = %+v; want the zero status, as before the aborted attempt", st)
	}
	if want := []string{"hung:"}; !reflect.DeepEqual(pc.tried(), want) {
		t.Errorf("tried %v, want %v: the aborted attempt has no class and good is never asked", pc.tried(), want)
	}
	c, _, err := pc.p.Step(ctx, a, Cursor{})
	if !errors.Is(err, want) || !reflect.DeepEqual(c, Cursor{}) {
		t.Errorf("Step after the caller gave up = %+v, %v; want the cursor unchanged and %v", c, err, want)
	}
}

// TestPullNotFoundHints: NotFound at a mirror says replication is behind; at the source, where
// content is pushed, it says to push it.
func TestPullNotFoundHints(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	const (
		replication = "NotFound (the artifact has not been replicated to this registry within the replication wait)"
		pushTag     = "NotFound (the artifact is not in the source registry: push it (tag 1.0 of apps/web))"
	)
	d := digest.FromString("never pushed")
	tests := []struct {
		name       string
		roles      []string // of the chain [a, b]
		artifact   Artifact
		wantA      string
		wantB      string
		wantSource []bool
	}{
		{name: "no roles: the last registry is the source", roles: []string{"", ""}, artifact: Artifact{Repository: "apps/web", Tag: "1.0"},
			wantA: "a: " + replication, wantB: "b: " + pushTag, wantSource: []bool{false, true}},
		{name: "roles given", roles: []string{RoleSource, RoleMirror}, artifact: Artifact{Repository: "apps/web", Tag: "1.0"},
			wantA: "a: " + pushTag, wantB: "b: " + replication, wantSource: []bool{true, false}},
		{name: "mirrors only", roles: []string{RoleMirror, RoleMirror}, artifact: Artifact{Repository: "apps/web", Tag: "1.0"},
			wantA: "a: " + replication, wantB: "b: " + replication, wantSource: []bool{false, false}},
		{name: "by digest", roles: []string{"", ""}, artifact: Artifact{Repository: "apps/web", Digest: d},
			wantA: "a: " + replication, wantB: "b: NotFound (the artifact is not in the source registry: push it (digest " + d.String() + " of apps/web))",
			wantSource: []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ra, rb := reg.Entry("a"), reg.Entry("b")
			ra.Role, rb.Role = tt.roles[0], tt.roles[1]
			pc := newPullCase(t, 0, ra, rb)
			_, err := pc.p.Pull(context.Background(), tt.artifact)
			var pullErr *Error
			if !errors.As(err, &pullErr) {
				t.Fatalf("Pull error = %v, want an *Error", err)
			}
			var source []bool
			for _, f := range pullErr.Failures {
				source = append(source, f.Source)
			}
			if !reflect.DeepEqual(source, tt.wantSource) {
				t.Errorf("failures' Source = %v, want %v", source, tt.wantSource)
			}
			for _, want := range []string{"; " + tt.wantA + ": ", "; " + tt.wantB + ": "} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestPullSendsUserAgent: every request carries Options.UserAgent, "fleet-controller" by default.
func TestPullSendsUserAgent(t *testing.T) {
	for _, tt := range []struct{ set, want string }{{"fleet-controller/1.2.3", "fleet-controller/1.2.3"}, {"", "fleet-controller"}} {
		var got []string
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.UserAgent())
			mu.Unlock()
			http.NotFound(w, r)
		}))
		pc := newPullCaseWith(t, 0, func(o *Options) { o.UserAgent = tt.set },
			Registry{Name: "r", Reference: strings.TrimPrefix(srv.URL, "http://"), BasicHTTP: true})
		_, _ = pc.p.Pull(context.Background(), Artifact{Repository: "apps/web", Tag: "1.0"})
		srv.Close()
		if want := []string{tt.want}; !reflect.DeepEqual(got, want) {
			t.Errorf("UserAgent %q: requests carried %q, want %q", tt.set, got, want)
		}
	}
}

func TestStepWaitsForReplication(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, []byte("chart"))
	pc := newPullCase(t, time.Minute, reg.Entry("mirror"))
	a := Artifact{Repository: "apps/web", Digest: art.Manifest.Digest}
	t0 := pc.clock.Now()
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }

	// The artifact reaches the mirror 5s after the first attempt: the fourth attempt, at 5.25s
	// after back-off of 0.75s, 1.5s and 3s, finds it.
	pc.clock.onWait = func(now time.Time) {
		if !now.Before(t0.Add(5 * time.Second)) {
			push(t, reg, "apps/web", "1.0", art)
			pc.clock.onWait = nil
		}
	}
	var (
		c        Cursor
		statuses []Status
		requeues []time.Duration
	)
	for !c.Done {
		var (
			after time.Duration
			err   error
		)
		c, after, err = pc.p.Step(context.Background(), a, c)
		if err != nil {
			t.Fatal(err)
		}
		statuses, requeues = append(statuses, stripMessage(t, c.Status)), append(requeues, after)
		<-pc.clock.After(after)
	}
	waiting := func(n int, next time.Duration) Status {
		return Status{State: WaitingForArtifact, Reason: NotFound, Registry: "mirror", Attempts: n, NextRetry: at(next)}
	}
	want := []Status{
		waiting(1, 750*time.Millisecond),
		waiting(2, 2250*time.Millisecond),
		waiting(3, 5250*time.Millisecond),
		pulled("mirror", 4, *at(5250 * time.Millisecond)),
	}
	if !reflect.DeepEqual(statuses, want) {
		t.Errorf("statuses:\n got %+v\nwant %+v", statuses, want)
	}
	if want := []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 0}; !reflect.DeepEqual(requeues, want) {
		t.Errorf("requeue after %v, want %v", requeues, want)
	}
	if c.Digest != art.Manifest.Digest {
		t.Errorf("cursor digest = %s, want %s", c.Digest, art.Manifest.Digest)
	}
	assertPulled(t, pc, a, art)
}

func TestPullMovesOnAfterReplicationWait(t *testing.T) {
	behind, central := testbed.StartRegistryT(t, testbed.RegistryOptions{}), testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, []byte("chart"))
	push(t, central, "apps/web", "1.0", art)
	pc := newPullCase(t, 10*time.Second, behind.Entry("behind"), central.Entry("central"))
	a := Artifact{Repository: "apps/web", Tag: "1.0"}

	st, err := pc.p.Pull(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	// Back-off 0.75s, 1.5s, 3s, then 6s is cut to the 4.75s left of the wait; the attempt at the
	// end of the wait is the last one.
	wantWaits := []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 4750 * time.Millisecond}
	if !reflect.DeepEqual(pc.clock.waits, wantWaits) {
		t.Errorf("waits %v, want %v", pc.clock.waits, wantWaits)
	}
	wantTried := []string{"behind:NotFound", "behind:NotFound", "behind:NotFound", "behind:NotFound", "behind:NotFound", "central:"}
	if !reflect.DeepEqual(pc.tried(), wantTried) {
		t.Errorf("tried %v, want %v", pc.tried(), wantTried)
	}
	if want := pulled("central", 1, pc.clock.Now()); !reflect.DeepEqual(st, want) {
		t.Errorf("status = %+v, want %+v", st, want)
	}
	assertPulled(t, pc, a, art)
}

func TestPullRejectsTamperedContent(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, []byte("chart"), []byte("values"), []byte("more"))
	push(t, reg, "apps/web", "1.0", art)
	a := Artifact{Repository: "apps/web", Digest: art.Manifest.Digest}

	for _, part := range []string{"/blobs/", "/manifests/"} {
		t.Run(strings.Trim(part, "/"), func(t *testing.T) {
			evil := Registry{Name: "evil", Reference: testbed.StartProxyT(t, reg, testbed.ProxyOptions{Tamper: func(p string) bool { return strings.Contains(p, part) }}).Addr, BasicHTTP: true}

			// Alone, the tampering registry fails the pull and leaves nothing behind.
			pc := newPullCase(t, time.Minute, evil)
			st, err := pc.p.Pull(context.Background(), a)
			if err == nil || stripMessage(t, st) != (Status{State: Failed, Reason: IntegrityMismatch, Registry: "evil", Attempts: 1}) {
				t.Fatalf("status = %+v, %v; want Failed, IntegrityMismatch after one attempt", st, err)
			}
			assertNothingCommitted(t, pc.dest, art)
			if _, err := pc.p.Resolve(context.Background(), a); !errors.Is(err, errdef.ErrNotFound) {
				t.Errorf("destination resolves %s after a tampered pull: %v", a, err)
			}

			// In a chain, the next registry supplies the genuine content.
			pc = newPullCase(t, time.Minute, evil, reg.Entry("central"))
			pc.p.SetOnAttempt(func(at Attempt) {
				pc.attempts = append(pc.attempts, at)
				if at.Registry == "evil" {
					assertNothingCommitted(t, pc.dest, art)
				}
			})
			st, err = pc.p.Pull(context.Background(), a)
			if want := []string{"evil:IntegrityMismatch", "central:"}; err != nil || !reflect.DeepEqual(pc.tried(), want) {
				t.Fatalf("tried %v (%v), want %v", pc.tried(), err, want)
			}
			if want := pulled("central", 1, pc.clock.Now()); !reflect.DeepEqual(st, want) {
				t.Errorf("status = %+v, want %+v", st, want)
			}
			assertPulled(t, pc, a, art)
		})
	}
}

// assertNothingCommitted checks that no layer of art nor its manifest is in dest, and that no
// partial download is left.
func assertNothingCommitted(t *testing.T, dest string, art *testbed.Artifact) {
	t.Helper()
	for _, d := range append([]digest.Digest{art.Manifest.Digest}, digestsOf(art)...) {
		if _, err := os.Stat(blobFile(dest, d)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is in the destination after a tampered pull (stat: %v)", d, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dest, "ingest", "*")); len(left) > 0 {
		t.Errorf("partial downloads left behind: %v", left)
	}
}

func digestsOf(art *testbed.Artifact) []digest.Digest {
	var ds []digest.Digest
	for _, l := range art.Layers {
		ds = append(ds, l.Digest)
	}
	return ds
}

func TestPullResolvesTagOnce(t *testing.T) {
	first, second := testbed.StartRegistryT(t, testbed.RegistryOptions{}), testbed.StartRegistryT(t, testbed.RegistryOptions{})
	old := newArtifact(t, []byte("chart 1.0"))
	newer := newArtifact(t, []byte("chart 1.1"))
	push(t, first, "apps/web", "stable", old)
	// The second registry already moved the tag on, but still holds the old content.
	push(t, second, "apps/web", "1.0", old)
	push(t, second, "apps/web", "stable", newer)
	evil := Registry{Name: "evil", Reference: testbed.StartProxyT(t, first, testbed.ProxyOptions{Tamper: testbed.BlobPaths}).Addr, BasicHTTP: true}

	pc := newPullCase(t, 0, evil, second.Entry("second"))
	a := Artifact{Repository: "apps/web", Tag: "stable"}
	if _, err := pc.p.Pull(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if want := []string{"evil:IntegrityMismatch", "second:"}; !reflect.DeepEqual(pc.tried(), want) {
		t.Errorf("tried %v, want %v", pc.tried(), want)
	}
	assertPulled(t, pc, a, old)
}

func TestPullHonoursCancellation(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	p, err := New([]Registry{reg.Entry("mirror")}, t.TempDir(), Options{ReplicationWait: time.Hour, Clock: stalledClock{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := Artifact{Repository: "apps/web", Tag: "1.0"}
	p.SetOnAttempt(func(Attempt) { cancel() })
	st, err := p.Pull(ctx, a)
	if !errors.Is(err, context.Canceled) || st.State != WaitingForArtifact || st.Attempts != 1 {
		t.Errorf("Pull = %+v, %v; want WaitingForArtifact after 1 attempt and context.Canceled", st, err)
	}

	c := Cursor{Index: 0}
	got, after, err := p.Step(ctx, a, c)
	if !errors.Is(err, context.Canceled) || !reflect.DeepEqual(got, c) || after != 0 {
		t.Errorf("Step on a cancelled context = %+v, %v, %v; want the cursor unchanged and context.Canceled", got, after, err)
	}
}

// stalledClock never fires, so only cancellation ends a wait.
type stalledClock struct{}

func (stalledClock) Now() time.Time                       { return time.Unix(0, 0) }
func (stalledClock) After(time.Duration) <-chan time.Time { return nil }

func TestNewRejectsBadChains(t *testing.T) {
	tests := []struct {
		chain []Registry
		want  string
	}{
		{nil, "no registries"},
		{[]Registry{{Name: "a", Reference: "r.example"}, {Name: "a", Reference: "s.example"}}, "appears twice"},
		{[]Registry{{Reference: "r.example"}}, "no name"},
		{[]Registry{{Name: "a", Reference: "https://r.example"}}, `registry "a": reference "https://r.example" has a scheme (https://)`},
		{[]Registry{{Name: "a", Reference: "r.example", CACerts: "not pem"}}, "no PEM certificate"},
		{[]Registry{{Name: "a", Reference: "r.example", Role: "primary"}}, `registry "a" has role "primary"; want "source" or "mirror"`},
	}
	for _, tt := range tests {
		if _, err := New(tt.chain, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%v) error = %v, want one containing %q", tt.chain, err, tt.want)
		}
	}
}

// TestPullFailsOverFromFrozenRegistry: a registry that freezes (SIGSTOP: the kernel still accepts
// connections, nothing is sent) fails as Unreachable, "stalled", within the idle timeout, far
// ahead of the attempt timeout, and the pull fails over to the next registry; both mid-blob and
// before it sends a byte.
func TestPullFailsOverFromFrozenRegistry(t *testing.T) {
	const idle = 2 * time.Second
	const layer = 48 << 20
	for _, tt := range []struct {
		name   string
		frozen func(t *testing.T, r *testbed.Registry) Registry
	}{
		{
			name: "frozen mid-blob",
			frozen: func(t *testing.T, r *testbed.Registry) Registry {
				// The proxy freezes the registry once 8 MiB of the 48 MiB layer went through.
				return testbed.StartProxyT(t, r, testbed.ProxyOptions{FreezeAfter: 8 << 20}).Entry("frozen")
			},
		},
		{
			name: "frozen before the pull",
			frozen: func(t *testing.T, r *testbed.Registry) Registry {
				if err := r.Freeze(); err != nil {
					t.Fatal(err)
				}
				return r.Entry("frozen")
			},
		},
		{
			name: "sends headers, then no body",
			frozen: func(t *testing.T, r *testbed.Registry) Registry {
				return testbed.StartProxyT(t, r, testbed.ProxyOptions{StallBlobs: true}).Entry("frozen")
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first, next := testbed.StartRegistryT(t, testbed.RegistryOptions{}), testbed.StartRegistryT(t, testbed.RegistryOptions{})
			var m ocispec.Descriptor
			for _, r := range []*testbed.Registry{first, next} {
				d, err := r.PushRandom(t.Context(), "apps/big", "1.0", 1, layer, 7)
				if err != nil {
					t.Fatal(err)
				}
				m = d
			}
			chain := []Registry{tt.frozen(t, first), next.Entry("next")}
			var read atomic.Int64
			pc := newPullCaseWith(t, time.Hour, func(o *Options) {
				o.IdleTimeout = idle
				o.Clock = nil // real time: the idle timeout is measured
				o.OnRead = func(_ ocispec.Descriptor, n int) { read.Add(int64(n)) }
			}, chain...)
			// On a puller without an idle timeout the frozen attempt lasts its 10 minutes.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			st, err := pc.p.Pull(ctx, Artifact{Repository: "apps/big", Tag: "1.0"})
			if err != nil {
				t.Fatalf("Pull = %v; want the artifact from next", err)
			}
			if want := []string{"frozen:Unreachable", "next:"}; !reflect.DeepEqual(pc.tried(), want) {
				t.Fatalf("tried %v, want %v", pc.tried(), want)
			}
			a := pc.attempts[0]
			var stall *StallError
			if !errors.As(a.Err, &stall) || stall.Idle != idle || !strings.Contains(a.Err.Error(), "stalled") {
				t.Errorf("the frozen attempt failed with %v; want a StallError of %s", a.Err, idle)
			}
			took := a.End.Sub(a.Start)
			if took < idle || took > idle+3*time.Second {
				t.Errorf("the frozen attempt took %s; want the idle timeout %s (plus a little)", took, idle)
			}
			if st.State != Pulled || st.Registry != "next" {
				t.Errorf("status = %+v; want pulled from next", st)
			}
			desc, err := pc.p.Resolve(t.Context(), Artifact{Repository: "apps/big", Tag: "1.0"})
			if err != nil || desc.Digest != m.Digest {
				t.Errorf("destination resolves to %v, %v; want %s", desc.Digest, err, m.Digest)
			}
			t.Logf("%s: failed over after %s (idle timeout %s), %d MiB read in all, the whole pull %s",
				tt.name, took.Round(time.Millisecond), idle, read.Load()>>20, pc.attempts[1].End.Sub(a.Start).Round(time.Millisecond))
		})
	}
}

// TestPullReportsProgress: an attempt reports its registry, then bytes up to the artifact's whole
// size (manifest, config, layers); a pull of content already held counts it all as done.
func TestPullReportsProgress(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, make([]byte, 3<<20), []byte("values"))
	push(t, reg, "apps/web", "1.0", art)
	want := art.Manifest.Size + ocispec.DescriptorEmptyJSON.Size
	for _, l := range art.Layers {
		want += l.Size
	}
	dest := t.TempDir()
	for _, run := range []string{"download", "already held"} {
		var mu sync.Mutex
		var reports []Progress
		p, err := New([]Registry{reg.Entry("reg")}, dest, Options{OnProgress: func(pr Progress) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, pr)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Pull(t.Context(), Artifact{Repository: "apps/web", Tag: "1.0"}); err != nil {
			t.Fatal(err)
		}
		if len(reports) < 2 || reports[0] != (Progress{Registry: "reg"}) {
			t.Fatalf("%s: reports %v; want the registry first, then bytes", run, reports)
		}
		var last Progress
		for _, r := range reports {
			last.Done, last.Total = max(last.Done, r.Done), max(last.Total, r.Total)
			if r.Registry != "reg" {
				t.Errorf("%s: report %+v: want registry reg", run, r)
			}
		}
		if last != (Progress{Done: want, Total: want}) {
			t.Errorf("%s: reached %d of %d bytes; want %d of %d", run, last.Done, last.Total, want, want)
		}
		t.Logf("%s: %d reports, %d of %d bytes", run, len(reports), last.Done, last.Total)
	}
}

// TestConcurrentPullsShareTheDestination: pullers of one destination pulling at once, each
// through its own chain, lose none of each other's tags in its index.
func TestConcurrentPullsShareTheDestination(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	const n = 8
	dest := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		push(t, reg, fmt.Sprintf("apps/a%d", i), "1.0", newArtifact(t, fmt.Appendf(nil, "artifact %d", i), make([]byte, 256<<10)))
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := New([]Registry{reg.Entry(fmt.Sprintf("reg-%d", i))}, dest, Options{})
			if err == nil {
				_, err = p.Pull(t.Context(), Artifact{Repository: fmt.Sprintf("apps/a%d", i), Tag: "1.0"})
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// What is on disk, read afresh, as a restarted agent would.
	data, err := os.ReadFile(filepath.Join(dest, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index ocispec.Index
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, m := range index.Manifests {
		tags[m.Annotations[ocispec.AnnotationRefName]] = true
	}
	for i := range n {
		if ref := fmt.Sprintf("apps/a%d:1.0", i); !tags[ref] {
			t.Errorf("index.json lacks %s after %d pulls at once; it holds %v", ref, n, tags)
		}
	}
}
