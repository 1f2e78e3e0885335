package testbed

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// Fault injectors for pulls through a chain: each has an Addr to put in a chain entry's
// reference (its Entry does so) and, unless it is only an address, a Close. With the puller's
// classes: a tampering Proxy → IntegrityMismatch; ClosedAddr → Unreachable (connection
// refused); Hung (accepts, never answers), Blackhole (dial never completes) and a stalling Proxy
// (headers, then no body) → Unreachable once the puller's timeouts fire; so does a Registry
// frozen mid-blob (Registry.Freeze, or a Proxy's FreezeAfter). A wrong password is a Registry's
// Entry with another Password.

// ProxyOptions configure a Proxy. The zero value passes everything through.
type ProxyOptions struct {
	// Tamper, if set, flips the first byte of the body of every successful GET (200 or 206)
	// whose URL path it matches (e.g. BlobPaths), keeping the genuine headers (length and digest).
	Tamper func(path string) bool
	// StallBlobs answers every blob GET with 200 and headers, then never sends the body.
	StallBlobs bool
	// FreezeAfter, if positive, freezes the registry behind the proxy (Registry.Freeze) once
	// that many bytes of blob bodies have passed through the proxy: a registry that hangs
	// mid-blob. Proxy.Frozen is closed then. Thaw the registry to let it go on.
	FreezeAfter int64
	// BytesPerSecond, if set, slows the body of each blob GET to about that rate, so that a
	// test can act in the middle of a download.
	BytesPerSecond int64
	// IgnoreRange drops the Range header of every request, as a registry that does not serve
	// ranges: a resumed download gets the whole blob (200).
	IgnoreRange bool
}

// BlobPaths and ManifestPaths match the URL paths of blobs and of manifests, for
// ProxyOptions.Tamper.
func BlobPaths(path string) bool { return strings.Contains(path, "/blobs/") }

// ManifestPaths matches the URL paths of manifests; see BlobPaths.
func ManifestPaths(path string) bool { return strings.Contains(path, "/manifests/") }

// Proxy is a plain-HTTP reverse proxy on 127.0.0.1 in front of a registry (which may serve TLS),
// counting the GETs of content that pass and injecting the faults of its options.
type Proxy struct {
	// Addr is the proxy's host:port.
	Addr string
	// BlobGets and ManifestGets count the GET requests for blobs and manifests it received.
	BlobGets, ManifestGets atomic.Int64
	// BlobBytes counts the bytes of blob bodies that passed.
	BlobBytes atomic.Int64
	// RangeGets counts the blob GETs with a Range header it received; PartialGets those answered
	// with 206 Partial Content.
	RangeGets, PartialGets atomic.Int64
	// Frozen is closed once ProxyOptions.FreezeAfter froze the registry.
	Frozen chan struct{}

	target *Registry
	srv    *httptest.Server
}

// StartProxy starts a proxy in front of target.
func StartProxy(target *Registry, opts ProxyOptions) *Proxy {
	p := &Proxy{target: target, Frozen: make(chan struct{})}
	u, _ := url.Parse(target.URL())
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = target.client.Client.Transport
	rp.ErrorLog = log.New(io.Discard, "", 0) // a pull that gives up mid-blob is expected here
	var freeze sync.Once
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
			return nil
		}
		path := resp.Request.URL.Path
		if resp.StatusCode == http.StatusPartialContent && BlobPaths(path) {
			p.PartialGets.Add(1)
		}
		if opts.Tamper != nil && opts.Tamper(path) {
			resp.Body = &flipFirstByte{ReadCloser: resp.Body}
		}
		if BlobPaths(path) {
			resp.Body = &countBytes{ReadCloser: resp.Body, onRead: func(n int) {
				if total := p.BlobBytes.Add(int64(n)); opts.FreezeAfter > 0 && total >= opts.FreezeAfter {
					freeze.Do(func() {
						if err := target.Freeze(); err == nil {
							close(p.Frozen)
						}
					})
				}
			}}
			if opts.BytesPerSecond > 0 {
				resp.Body = &throttled{ReadCloser: resp.Body, rate: opts.BytesPerSecond, start: time.Now()}
			}
		}
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		blob := BlobPaths(req.URL.Path)
		if blob && req.Method == http.MethodGet && req.Header.Get("Range") != "" {
			p.RangeGets.Add(1)
		}
		if opts.IgnoreRange {
			req.Header.Del("Range")
		}
		if req.Method == http.MethodGet {
			switch {
			case blob:
				p.BlobGets.Add(1)
			case ManifestPaths(req.URL.Path):
				p.ManifestGets.Add(1)
			}
		}
		if opts.StallBlobs && blob && req.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-req.Context().Done()
			return
		}
		rp.ServeHTTP(w, req)
	}))
	p.Addr = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}

// StartProxyT starts a proxy for one test and closes it when the test ends.
func StartProxyT(tb testing.TB, target *Registry, opts ProxyOptions) *Proxy {
	tb.Helper()
	p := StartProxy(target, opts)
	tb.Cleanup(p.Close)
	return p
}

// Entry is the target's chain entry (its credentials) with the proxy's address, plain HTTP.
func (p *Proxy) Entry(name string) puller.Registry {
	e := p.target.Entry(name)
	e.Reference, e.BasicHTTP, e.CACerts = p.Addr, true, ""
	return e
}

// Close stops the proxy, ending the requests it holds.
func (p *Proxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// throttled reads at most rate bytes per second on average.
type throttled struct {
	io.ReadCloser
	rate  int64
	start time.Time
	n     int64
}

func (t *throttled) Read(b []byte) (int, error) {
	n, err := t.ReadCloser.Read(b[:min(len(b), 32<<10)])
	t.n += int64(n)
	if ahead := time.Duration(float64(t.n)/float64(t.rate)*float64(time.Second)) - time.Since(t.start); ahead > 0 {
		time.Sleep(ahead)
	}
	return n, err
}

// countBytes reports the bytes read from a body.
type countBytes struct {
	io.ReadCloser
	onRead func(n int)
}

func (c *countBytes) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	if n > 0 {
		c.onRead(n)
	}
	return n, err
}

type flipFirstByte struct {
	io.ReadCloser
	done bool
}

func (f *flipFirstByte) Read(b []byte) (int, error) {
	n, err := f.ReadCloser.Read(b)
	if n > 0 && !f.done {
		b[0] ^= 0xff
		f.done = true
	}
	return n, err
}

// ClosedAddr returns a 127.0.0.1 address with a port that nothing listens on a moment ago:
// dials are refused.
func ClosedAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// ClosedAddrT is ClosedAddr for a test, failing it on error.
func ClosedAddrT(tb testing.TB) string {
	tb.Helper()
	addr, err := ClosedAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// AddrEntry is a plain-HTTP chain entry for addr, e.g. a ClosedAddr.
func AddrEntry(name, addr string) puller.Registry {
	return puller.Registry{Name: name, Reference: addr, BasicHTTP: true}
}

// Hung is a server on 127.0.0.1 that accepts connections and never writes a byte: requests to
// it wait for response headers that never come.
type Hung struct {
	Addr string

	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// StartHung starts a hung server. onAccept, if set, runs on each accepted connection.
func StartHung(onAccept func()) (*Hung, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &Hung{Addr: l.Addr().String(), l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			if onAccept != nil {
				onAccept()
			}
		}
	}()
	return h, nil
}

// StartHungT starts a hung server for one test and closes it when the test ends.
func StartHungT(tb testing.TB, onAccept func()) *Hung {
	tb.Helper()
	h, err := StartHung(onAccept)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// Entry is a plain-HTTP chain entry for the hung server.
func (h *Hung) Entry(name string) puller.Registry { return AddrEntry(name, h.Addr) }

// Close stops listening and closes the connections it accepted.
func (h *Hung) Close() error {
	err := h.l.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.conns = nil
	return err
}

// Blackhole is a 127.0.0.1 address where a TCP dial never completes: a socket that listens
// with a backlog of 0 and never accepts, its accept queue filled by connections it made itself.
// Linux then drops every further SYN, and a dialer retransmits its SYN until its own timeout, as
// with a firewall that drops packets. (Loopback cannot lose packets otherwise; this is a real
// dial, without a hook in the dialer.)
type Blackhole struct {
	Addr string

	fd    int
	conns []net.Conn
}

// StartBlackhole makes a blackholed address.
func StartBlackhole() (*Blackhole, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	b := &Blackhole{fd: fd}
	fail := func(err error) (*Blackhole, error) { return nil, errors.Join(err, b.Close()) }
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		return fail(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return fail(err)
	}
	b.Addr = fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// Dial until a dial does not complete: from then on the queue is full.
	for range 8 {
		c, err := net.DialTimeout("tcp", b.Addr, 200*time.Millisecond)
		if err != nil {
			var netErr net.Error
			if !errors.As(err, &netErr) || !netErr.Timeout() {
				return fail(fmt.Errorf("filling the accept queue of %s: %w", b.Addr, err))
			}
			return b, nil
		}
		b.conns = append(b.conns, c)
	}
	return fail(fmt.Errorf("dials to %s keep completing with a backlog of 0: this kernel does not drop SYNs on a full accept queue", b.Addr))
}

// StartBlackholeT makes a blackholed address for one test and closes it when the test ends.
func StartBlackholeT(tb testing.TB) *Blackhole {
	tb.Helper()
	b, err := StartBlackhole()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// Entry is a plain-HTTP chain entry for the blackholed address.
func (b *Blackhole) Entry(name string) puller.Registry { return AddrEntry(name, b.Addr) }

// Close closes the socket and the connections that fill its queue.
func (b *Blackhole) Close() error {
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
	if b.fd < 0 {
		return nil
	}
	err := syscall.Close(b.fd)
	b.fd = -1
	return err
}
