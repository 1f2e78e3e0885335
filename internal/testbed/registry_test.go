package testbed

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// pull pulls ref ("repository:tag" or "repository@digest") through chain with the puller, the
// agent's code, and returns its status and what it resolved ref to.
func pull(t *testing.T, opts puller.Options, ref string, chain ...puller.Registry) (puller.Status, ocispec.Descriptor, error) {
	t.Helper()
	p, err := puller.New(chain, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	a, err := puller.ParseArtifact(ref)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Pull(t.Context(), a)
	if err != nil {
		return st, ocispec.Descriptor{}, err
	}
	desc, err := p.Resolve(t.Context(), a)
	return st, desc, err
}

func TestRegistryTLSAuthEntryAndPush(t *testing.T) {
	r := StartRegistryT(t, RegistryOptions{TLS: true, Username: "pusher", Password: "push-secret", Users: map[string]string{"agent": "agent-secret"}})
	if host, port, err := net.SplitHostPort(r.Addr); err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr = %q (%v), want 127.0.0.1 and a port", r.Addr, err)
	}
	if !r.TLS() || r.CA == nil || !strings.HasPrefix(r.CA.PEM, "-----BEGIN CERTIFICATE-----") || r.URL() != "https://"+r.Addr {
		t.Fatalf("TLS() = %v, CA %v, URL %q: want HTTPS with a CA PEM", r.TLS(), r.CA, r.URL())
	}
	if got, want := r.Reference("/fleet/"), r.Addr+"/fleet"; got != want {
		t.Errorf("Reference = %q, want %q", got, want)
	}
	if got := r.Reference(""); got != r.Addr {
		t.Errorf("Reference(\"\") = %q, want %q", got, r.Addr)
	}
	want := puller.Registry{Name: "r", Reference: r.Addr, Username: "pusher", Password: "push-secret", CACerts: r.CA.PEM}
	if got := r.Entry("r"); got != want {
		t.Errorf("Entry = %#v, want %#v", got, want)
	}

	m, err := r.Push(t.Context(), "fleet/apps/web", "1.0", []byte("chart"), []byte("values"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewArtifact([]byte("chart"), []byte("values"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Manifest.Digest != m.Digest || len(again.Layers) != 2 || again.Layers[1].Annotations[ocispec.AnnotationTitle] != "layer-1" {
		t.Errorf("NewArtifact of the same layers = %v %+v, want manifest %s and titled layers", again.Manifest.Digest, again.Layers, m.Digest)
	}

	entry := r.Entry("r")
	entry.Reference = r.Reference("fleet")
	st, desc, err := pull(t, puller.Options{}, "apps/web:1.0", entry)
	if err != nil || st.State != puller.Pulled || desc.Digest != m.Digest {
		t.Fatalf("pull = %+v, %s, %v; want Pulled %s", st, desc.Digest, err, m.Digest)
	}
	agent := entry
	agent.AgentUsername, agent.AgentPassword = "agent", "agent-secret"
	if st, _, err := pull(t, puller.Options{}, "apps/web:1.0", agent); err != nil || st.State != puller.Pulled {
		t.Errorf("pull as the second user = %+v, %v; want Pulled", st, err)
	}

	// The failures a chain entry can be set up for.
	untrusted := entry
	untrusted.CACerts = ""
	wrong := entry
	wrong.Password = "wrong-secret"
	for _, tt := range []struct {
		entry puller.Registry
		want  puller.Class
	}{{untrusted, puller.TLS}, {wrong, puller.Unauthorized}} {
		st, _, err := pull(t, puller.Options{}, "apps/web:1.0", tt.entry)
		if err == nil || st.Reason != tt.want {
			t.Errorf("pull with %#v = %+v, %v; want %s", tt.entry, st, err, tt.want)
		}
	}
}

func TestRegistryStopStartKeepsAddressAndData(t *testing.T) {
	r := StartRegistryT(t, RegistryOptions{})
	m := r.PushT(t, "apps/web", "1.0", []byte("chart"))
	addr := r.Addr
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if r.Running() {
		t.Error("Running() after Stop = true")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s accepts connections after Stop", addr)
	}
	if st, _, err := pull(t, puller.Options{}, "apps/web:1.0", r.Entry("stopped")); err == nil || st.Reason != puller.Unreachable {
		t.Errorf("pull from a stopped registry = %+v, %v; want Unreachable", st, err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !r.Running() || r.Addr != addr {
		t.Fatalf("after Start: Running() = %v, Addr %s; want running on %s", r.Running(), r.Addr, addr)
	}
	if st, desc, err := pull(t, puller.Options{}, "apps/web:1.0", r.Entry("again")); err != nil || st.State != puller.Pulled || desc.Digest != m.Digest {
		t.Errorf("pull after Start = %+v, %s, %v; want Pulled %s", st, desc.Digest, err, m.Digest)
	}
}

func TestRegistryCopyAndClose(t *testing.T) {
	source := StartRegistryT(t, RegistryOptions{Username: "pusher", Password: "push-secret"})
	mirror := StartRegistryT(t, RegistryOptions{TLS: true})
	dataDir := t.TempDir()
	kept, err := StartRegistry(t.Context(), RegistryOptions{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	m := source.PushT(t, "apps/web", "1.0", []byte("chart"), []byte("values"))
	for _, to := range []*Registry{mirror, kept} {
		got, err := to.Copy(t.Context(), source, "apps/web", "1.0")
		if err != nil || got.Digest != m.Digest {
			t.Fatalf("Copy to %s = %s, %v; want %s", to.Addr, got.Digest, err, m.Digest)
		}
		if st, desc, err := pull(t, puller.Options{}, "apps/web:1.0", to.Entry("mirror")); err != nil || desc.Digest != m.Digest {
			t.Errorf("pull from the copy at %s = %+v, %s, %v; want %s", to.Addr, st, desc.Digest, err, m.Digest)
		}
	}

	if err := kept.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the registry's folder after Close: %v, want it removed", err)
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) == 0 {
		t.Errorf("the given DataDir after Close: %d entries, %v; want the storage kept", len(entries), err)
	}
}

func TestRegistryPushRandom(t *testing.T) {
	r := StartRegistryT(t, RegistryOptions{})
	const size = 3<<20 + 5 // not a multiple of the generator's 8 bytes
	m, err := r.PushRandom(t.Context(), "bench/big", "1", 2, size, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.PushRandom(t.Context(), "bench/again", "1", 2, size, 7)
	if err != nil || again.Digest != m.Digest {
		t.Errorf("PushRandom with the same seed = %s, %v; want %s", again.Digest, err, m.Digest)
	}
	other, err := r.PushRandom(t.Context(), "bench/other", "1", 2, size, 8)
	if err != nil || other.Digest == m.Digest {
		t.Errorf("PushRandom with another seed = %s, %v; want another digest than %s", other.Digest, err, m.Digest)
	}
	st, desc, err := pull(t, puller.Options{}, "bench/big:1", r.Entry("r"))
	if err != nil || desc.Digest != m.Digest {
		t.Fatalf("pull = %+v, %s, %v; want %s", st, desc.Digest, err, m.Digest)
	}
}

func TestRegistryMissingBinary(t *testing.T) {
	_, err := StartRegistry(t.Context(), RegistryOptions{BinDir: t.TempDir()})
	if !errors.Is(err, ErrBinariesMissing) || !strings.Contains(err.Error(), "make bin/registry") {
		t.Errorf("StartRegistry without the binary = %v, want ErrBinariesMissing naming `make bin/registry`", err)
	}
	if _, err := StartRegistry(t.Context(), RegistryOptions{Username: "only-user"}); err == nil {
		t.Error("StartRegistry with a user and no password succeeded")
	}
}

func TestProxyCountsAndTampers(t *testing.T) {
	r := StartRegistryT(t, RegistryOptions{Username: "pusher", Password: "push-secret"})
	m := r.PushT(t, "apps/web", "1.0", []byte("chart"), []byte("values"))

	counting := StartProxyT(t, r, ProxyOptions{})
	e := counting.Entry("counted")
	if e.Reference != counting.Addr || !e.BasicHTTP || e.Username != "pusher" {
		t.Errorf("Proxy.Entry = %#v, want the proxy's address, plain HTTP and the registry's user", e)
	}
	if st, desc, err := pull(t, puller.Options{}, "apps/web:1.0", e); err != nil || desc.Digest != m.Digest {
		t.Fatalf("pull through the proxy = %+v, %s, %v; want %s", st, desc.Digest, err, m.Digest)
	}
	if b, mf := counting.BlobGets.Load(), counting.ManifestGets.Load(); b != 3 || mf < 1 {
		t.Errorf("counted %d blob and %d manifest GETs, want 3 (config and two layers) and at least 1", b, mf)
	}

	for name, match := range map[string]func(string) bool{"blobs": BlobPaths, "manifests": ManifestPaths} {
		evil := StartProxyT(t, r, ProxyOptions{Tamper: match})
		st, _, err := pull(t, puller.Options{}, "apps/web@"+m.Digest.String(), evil.Entry("evil"))
		if err == nil || st.Reason != puller.IntegrityMismatch {
			t.Errorf("pull through a proxy tampering with %s = %+v, %v; want IntegrityMismatch", name, st, err)
		}
	}
}

func TestFaultAddresses(t *testing.T) {
	r := StartRegistryT(t, RegistryOptions{})
	r.PushT(t, "apps/web", "1.0", []byte("chart"))
	stalling := StartProxyT(t, r, ProxyOptions{StallBlobs: true})
	opts := puller.Options{DialTimeout: 500 * time.Millisecond, ResponseHeaderTimeout: 500 * time.Millisecond, AttemptTimeout: 2 * time.Second}
	for _, tt := range []struct {
		name  string
		entry puller.Registry
	}{
		{"closed port", AddrEntry("closed", ClosedAddrT(t))},
		{"hung", StartHungT(t, nil).Entry("hung")},
		{"blackholed", StartBlackholeT(t).Entry("blackholed")},
		{"stalling", stalling.Entry("stalling")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			st, _, err := pull(t, opts, "apps/web:1.0", tt.entry)
			if err == nil || st.Reason != puller.Unreachable || st.Attempts != 1 {
				t.Errorf("pull = %+v, %v; want Unreachable after one attempt", st, err)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("the pull took %s; its timeouts did not bound it", took)
			}
		})
	}

	// What each does at the level of a connection.
	hungCalls := make(chan struct{}, 1)
	hung := StartHungT(t, func() { hungCalls <- struct{}{} })
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 100 * time.Millisecond}}
	if resp, err := client.Get("http://" + hung.Addr + "/v2/"); err == nil {
		resp.Body.Close()
		t.Error("a hung server answered")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET from a hung server = %v, want a header timeout", err)
	}
	select {
	case <-hungCalls:
	default:
		t.Error("onAccept did not run")
	}
	if _, err := net.DialTimeout("tcp", StartBlackholeT(t).Addr, 100*time.Millisecond); err == nil {
		t.Error("a dial to a blackholed address completed")
	} else if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
		t.Errorf("dial to a blackholed address = %v, want a timeout", err)
	}
	if _, err := net.DialTimeout("tcp", ClosedAddrT(t), time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("dial to a closed port = %v, want refused at once", err)
	}
}

// A frozen registry completes connections and answers nothing; thawed, it answers the request it
// held; Stop ends it even while frozen.
func TestRegistryFreezeThaw(t *testing.T) {
	r := StartRegistryT(t, RegistryOptions{})
	get := func(timeout time.Duration) error {
		c := &http.Client{Timeout: timeout}
		defer c.CloseIdleConnections()
		resp, err := c.Get(r.URL() + "/v2/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := r.Freeze(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		t.Fatalf("dial a frozen registry: %v; want the kernel to complete it", err)
	}
	conn.Close()
	var netErr net.Error
	if err := get(500 * time.Millisecond); !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("GET /v2/ of a frozen registry: %v; want a timeout", err)
	}
	held := make(chan error, 1)
	go func() { held <- get(10 * time.Second) }()
	time.Sleep(300 * time.Millisecond)
	thawed := time.Now()
	if err := r.Thaw(); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatalf("the request held while frozen: %v; want it answered once thawed", err)
	}
	t.Logf("a request held by the frozen registry was answered %s after the thaw", time.Since(thawed))
	if err := r.Freeze(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if err := r.Stop(); err != nil || r.Running() {
		t.Fatalf("Stop of a frozen registry: %v, running %v", err, r.Running())
	}
	if took := time.Since(stopped); took > 3*time.Second {
		t.Errorf("Stop of a frozen registry took %s; want it thawed and ended by SIGTERM, not killed after 5 s", took)
	}
	if err := r.Freeze(); err == nil {
		t.Error("Freeze of a stopped registry: no error")
	}
}
