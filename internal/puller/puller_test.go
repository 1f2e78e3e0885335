package puller

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/errcode"
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
	tests := []struct {
		err   error
		class Class
		ours  bool
	}{
		{resp(401), Unauthorized, true},
		{resp(403), Unauthorized, true},
		{fmt.Errorf("x: %w", errdef.ErrNotFound), NotFound, true},
		{resp(500), Unreachable, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, Unreachable, true},
		{fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), TLS, true},
		{fmt.Errorf("ingest: %w", content.ErrMismatchedDigest), IntegrityMismatch, true},
		{errors.New(`GET "http://r/v2/a/blobs/sha256:1": mismatch Content-Length`), IntegrityMismatch, true},
		{fmt.Errorf("pull: %w", context.Canceled), "", false},
		{&oras.CopyError{Op: "Push", Origin: oras.CopyErrorOriginDestination, Err: &fs.PathError{Op: "write", Err: errors.New("no space left on device")}}, "", false},
	}
	for _, tt := range tests {
		if class, ours := Classify(tt.err); class != tt.class || ours != tt.ours {
			t.Errorf("Classify(%v) = %q, %v; want %q, %v", tt.err, class, ours, tt.class, tt.ours)
		}
	}
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
	pc := &pullCase{chain: chain, wait: wait, clock: newFakeClock(), dest: t.TempDir()}
	p, err := New(chain, pc.dest, Options{
		ReplicationWait: wait,
		Backoff:         Backoff{Initial: time.Second, Max: 8 * time.Second, Jitter: func() float64 { return 0.5 }},
		Clock:           pc.clock,
		OnAttempt:       func(a Attempt) { pc.attempts = append(pc.attempts, a) },
	})
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
func assertPulled(t *testing.T, pc *pullCase, a Artifact, want testArtifact) {
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
	reg := startRegistry(t, regOptions{users: map[string]string{"pusher": "push-secret", "agent": "agent-secret"}})
	src, art := buildArtifact(t, []byte("chart"), []byte("values"))
	push(t, src, art, reg.repo(t, "fleet/apps/web"), "1.0")
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
			r := reg.entry("harbor")
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
	ca := newTestCA(t)
	reg := startRegistry(t, regOptions{tls: ca})
	src, art := buildArtifact(t, []byte("chart"))
	push(t, src, art, reg.repo(t, "apps/web"), "1.0")
	a := Artifact{Repository: "apps/web", Tag: "1.0"}

	tests := []struct {
		name   string
		change func(*Registry)
		want   Status
	}{
		{name: "unknown CA", change: func(*Registry) {}, want: Status{State: Failed, Reason: TLS, Attempts: 1}},
		{name: "plain HTTP to a TLS port", change: func(r *Registry) { r.BasicHTTP = true }, want: Status{State: Failed, Reason: TLS, Attempts: 1}},
		{name: "CA bundle", change: func(r *Registry) { r.CACerts = ca.PEM }, want: Status{State: Pulled, Attempts: 1}},
		{name: "insecureSkipTLS", change: func(r *Registry) { r.InsecureSkipTLS = true }, want: Status{State: Pulled, Attempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reg.entry("tls")
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
	good := startRegistry(t, regOptions{})
	locked := startRegistry(t, regOptions{users: map[string]string{"agent": "agent-secret"}})
	src, art := buildArtifact(t, []byte("chart"), []byte("values"))
	push(t, src, art, good.repo(t, "apps/web"), "1.0")
	push(t, src, art, locked.repo(t, "apps/web"), "1.0")
	down := Registry{Name: "down", Reference: freeAddr(t), BasicHTTP: true}
	wrong := locked.entry("locked")
	wrong.AgentUsername, wrong.AgentPassword = "agent", "wrong-secret"
	a := Artifact{Repository: "apps/web", Tag: "1.0"}

	// A replication wait does not hold back failover for any class but NotFound.
	pc := newPullCase(t, time.Hour, down, wrong, good.entry("central"))
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

func TestStepWaitsForReplication(t *testing.T) {
	reg := startRegistry(t, regOptions{})
	src, art := buildArtifact(t, []byte("chart"))
	pc := newPullCase(t, time.Minute, reg.entry("mirror"))
	a := Artifact{Repository: "apps/web", Digest: art.Manifest.Digest}
	t0 := pc.clock.Now()
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }

	// The artifact reaches the mirror 5s after the first attempt: the fourth attempt, at 5.25s
	// after back-off of 0.75s, 1.5s and 3s, finds it.
	pc.clock.onWait = func(now time.Time) {
		if !now.Before(t0.Add(5 * time.Second)) {
			push(t, src, art, reg.repo(t, "apps/web"), "1.0")
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
	behind, central := startRegistry(t, regOptions{}), startRegistry(t, regOptions{})
	src, art := buildArtifact(t, []byte("chart"))
	push(t, src, art, central.repo(t, "apps/web"), "1.0")
	pc := newPullCase(t, 10*time.Second, behind.entry("behind"), central.entry("central"))
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
	reg := startRegistry(t, regOptions{})
	src, art := buildArtifact(t, []byte("chart"), []byte("values"), []byte("more"))
	push(t, src, art, reg.repo(t, "apps/web"), "1.0")
	a := Artifact{Repository: "apps/web", Digest: art.Manifest.Digest}

	for _, part := range []string{"/blobs/", "/manifests/"} {
		t.Run(strings.Trim(part, "/"), func(t *testing.T) {
			evil := Registry{Name: "evil", Reference: tamperingProxy(t, reg, func(p string) bool { return strings.Contains(p, part) }), BasicHTTP: true}

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
			pc = newPullCase(t, time.Minute, evil, reg.entry("central"))
			pc.p.opts.OnAttempt = func(at Attempt) {
				pc.attempts = append(pc.attempts, at)
				if at.Registry == "evil" {
					assertNothingCommitted(t, pc.dest, art)
				}
			}
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
func assertNothingCommitted(t *testing.T, dest string, art testArtifact) {
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

func digestsOf(art testArtifact) []digest.Digest {
	var ds []digest.Digest
	for _, l := range art.Layers {
		ds = append(ds, l.Digest)
	}
	return ds
}

func TestPullResolvesTagOnce(t *testing.T) {
	first, second := startRegistry(t, regOptions{}), startRegistry(t, regOptions{})
	srcOld, old := buildArtifact(t, []byte("chart 1.0"))
	srcNew, newer := buildArtifact(t, []byte("chart 1.1"))
	push(t, srcOld, old, first.repo(t, "apps/web"), "stable")
	// The second registry already moved the tag on, but still holds the old content.
	push(t, srcOld, old, second.repo(t, "apps/web"), "1.0")
	push(t, srcNew, newer, second.repo(t, "apps/web"), "stable")
	evil := Registry{Name: "evil", Reference: tamperingProxy(t, first, func(p string) bool { return strings.Contains(p, "/blobs/") }), BasicHTTP: true}

	pc := newPullCase(t, 0, evil, second.entry("second"))
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
	reg := startRegistry(t, regOptions{})
	p, err := New([]Registry{reg.entry("mirror")}, t.TempDir(), Options{ReplicationWait: time.Hour, Clock: stalledClock{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := Artifact{Repository: "apps/web", Tag: "1.0"}
	p.opts.OnAttempt = func(Attempt) { cancel() }
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
	}
	for _, tt := range tests {
		if _, err := New(tt.chain, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%v) error = %v, want one containing %q", tt.chain, err, tt.want)
		}
	}
}
