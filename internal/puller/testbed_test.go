package puller

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// testbedBin returns the path of a test-bed binary built by `make tools`, skipping the test when
// it is missing unless FLEET_REQUIRE_TESTBED=1.
func testbedBin(tb testing.TB, name string) string {
	tb.Helper()
	dir := os.Getenv("FLEET_TESTBED_BIN")
	if dir == "" {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			tb.Fatal(err)
		}
		dir = filepath.Join(root, "bin")
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("%s is missing: run `make tools` (or `make bin/%s`) to build the test bed", path, name)
		if os.Getenv("FLEET_REQUIRE_TESTBED") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return path
}

// regOptions configure a test registry.
type regOptions struct {
	users map[string]string // htpasswd users; none means no auth
	tls   *testCA           // serve HTTPS with a certificate signed by this CA
}

// bcryptOf holds the htpasswd hashes of the test passwords (bcrypt, cost 4).
var bcryptOf = map[string]string{
	"push-secret":  "$2a$04$sCWsBj5BQiPLPMztMQjbiulInlGKBhzTqZMJN3A4PwDN0zIhaJWZK",
	"agent-secret": "$2a$04$nDS81nDL3JEIWw5sgH.cmet/7vMLML9Vxkwa0w7ZozRtylm7mZKLO",
}

// testRegistry is a CNCF distribution registry running as a child process on 127.0.0.1.
type testRegistry struct {
	Addr   string
	TLS    bool
	client *auth.Client // pushes with full rights
}

// startRegistry starts a registry with its own config and storage; the test's cleanup stops the
// process and removes both.
func startRegistry(tb testing.TB, o regOptions) *testRegistry {
	tb.Helper()
	bin := testbedBin(tb, "registry")
	dir := tb.TempDir()
	addr := freeAddr(tb)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n")
	fmt.Fprintf(&cfg, "storage:\n  filesystem:\n    rootdirectory: %s\n  maintenance:\n    uploadpurging:\n      enabled: false\n", filepath.Join(dir, "data"))
	fmt.Fprintf(&cfg, "http:\n  addr: %s\n  secret: fleet-test\n", addr)
	r := &testRegistry{Addr: addr, TLS: o.tls != nil}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if o.tls != nil {
		cert, key := o.tls.issue(tb, dir)
		fmt.Fprintf(&cfg, "  tls:\n    certificate: %s\n    key: %s\n", cert, key)
		transport.TLSClientConfig = &tls.Config{RootCAs: o.tls.pool()}
	}
	cred := auth.EmptyCredential
	if len(o.users) > 0 {
		var htpasswd bytes.Buffer
		for _, user := range slices.Sorted(maps.Keys(o.users)) {
			hash, ok := bcryptOf[o.users[user]]
			if !ok {
				tb.Fatalf("no bcrypt hash for the password of %s: add one to bcryptOf", user)
			}
			fmt.Fprintf(&htpasswd, "%s:%s\n", user, hash)
		}
		user := slices.Sorted(maps.Keys(o.users))[0]
		cred = auth.Credential{Username: user, Password: o.users[user]}
		path := filepath.Join(dir, "htpasswd")
		writeFile(tb, path, htpasswd.Bytes())
		fmt.Fprintf(&cfg, "auth:\n  htpasswd:\n    realm: fleet-test\n    path: %s\n", path)
	}
	config := filepath.Join(dir, "config.yml")
	writeFile(tb, config, []byte(cfg.String()))
	r.client = &auth.Client{
		Client:     &http.Client{Transport: transport},
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(addr, cred),
	}

	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", config)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if tb.Failed() {
			tb.Logf("registry %s log:\n%s", addr, logs.String())
		}
	})
	r.waitReady(tb, cmd)
	return r
}

func (r *testRegistry) waitReady(tb testing.TB, cmd *exec.Cmd) {
	tb.Helper()
	scheme := "http"
	if r.TLS {
		scheme = "https"
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second} //nolint:gosec // readiness probe only
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cmd.ProcessState != nil {
			break
		}
		resp, err := client.Get(scheme + "://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return
		}
	}
	tb.Fatalf("registry on %s did not become ready", r.Addr)
}

// repo returns a repository of r that the test pushes to with full rights.
func (r *testRegistry) repo(tb testing.TB, path string) *remote.Repository {
	tb.Helper()
	return &remote.Repository{
		Client:    r.client,
		Reference: registry.Reference{Registry: r.Addr, Repository: path},
		PlainHTTP: !r.TLS,
	}
}

// entry returns a chain entry for r with no credentials.
func (r *testRegistry) entry(name string) Registry {
	return Registry{Name: name, Reference: r.Addr, BasicHTTP: !r.TLS}
}

// freeAddr returns a 127.0.0.1 address with a port that nothing listens on.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func writeFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// testArtifact is an artifact pushed by a test: its manifest and layers.
type testArtifact struct {
	Manifest ocispec.Descriptor
	Layers   []ocispec.Descriptor
}

// buildArtifact packs layers into an in-memory store, ready to be copied to registries.
func buildArtifact(tb testing.TB, layers ...[]byte) (*memory.Store, testArtifact) {
	tb.Helper()
	ctx := context.Background()
	store := memory.New()
	var a testArtifact
	for i, data := range layers {
		desc := content.NewDescriptorFromBytes("application/vnd.fleet.test.layer", data)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: fmt.Sprintf("layer-%d", i)}
		if err := store.Push(ctx, desc, bytes.NewReader(data)); err != nil {
			tb.Fatal(err)
		}
		a.Layers = append(a.Layers, desc)
	}
	m, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "application/vnd.fleet.test",
		oras.PackManifestOptions{Layers: a.Layers})
	if err != nil {
		tb.Fatal(err)
	}
	a.Manifest = m
	return store, a
}

// push copies the artifact in src to repo under tag.
func push(tb testing.TB, src *memory.Store, a testArtifact, repo *remote.Repository, tag string) {
	tb.Helper()
	ctx := context.Background()
	if err := oras.CopyGraph(ctx, src, repo, a.Manifest, oras.DefaultCopyGraphOptions); err != nil {
		tb.Fatalf("push to %s: %v", repo.Reference, err)
	}
	if err := repo.Tag(ctx, a.Manifest, tag); err != nil {
		tb.Fatalf("tag %s in %s: %v", tag, repo.Reference, err)
	}
}

// testCA is a self-signed CA generated by the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  string
}

func newTestCA(tb testing.TB) *testCA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fleet test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &testCA{cert: cert, key: key, PEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

func (ca *testCA) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// issue writes a server certificate for 127.0.0.1 and its key into dir.
func (ca *testCA) issue(tb testing.TB, dir string) (certPath, keyPath string) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFile(tb, certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(tb, keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return certPath, keyPath
}

// tamperingProxy serves a registry's content with one byte flipped in every response body whose
// path matches, keeping the headers (length and digest) of the genuine content.
func tamperingProxy(tb testing.TB, r *testRegistry, match func(path string) bool) string {
	tb.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: r.Addr})
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a pull that gives up mid-blob is expected here
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet && resp.StatusCode == http.StatusOK && match(resp.Request.URL.Path) {
			resp.Body = &flipFirstByte{ReadCloser: resp.Body}
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	tb.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
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

// fakeClock advances only when the puller waits, so back-off is exact and instant. onWait runs
// after each wait with the new time, e.g. to let an artifact "replicate".
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	waits  []time.Duration
	onWait func(now time.Time)
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 4, 16, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	now := c.now
	c.mu.Unlock()
	if c.onWait != nil {
		c.onWait(now)
	}
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}

// hungRegistry returns the address of a server that accepts connections and never writes a byte:
// requests to it wait for response headers that never come. onAccept, if set, runs on each
// accepted connection.
func hungRegistry(tb testing.TB, onAccept func()) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if onAccept != nil {
				onAccept()
			}
		}
	}()
	tb.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// blackholedAddr returns a 127.0.0.1 address where a TCP dial never completes: a socket that
// listens with a backlog of 0 and never accepts, its accept queue filled by the connections
// made here. Linux then drops every further SYN, and a dialer retransmits its SYN until its own
// timeout, as with a firewall that drops packets. (Loopback cannot lose packets otherwise; this
// is a real dial, without a hook in the puller.)
func blackholedAddr(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// Dial until a dial does not complete: from then on the queue is full.
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			var netErr net.Error
			if !errors.As(err, &netErr) || !netErr.Timeout() {
				tb.Fatalf("filling the accept queue of %s: %v", addr, err)
			}
			return addr
		}
		tb.Cleanup(func() { c.Close() })
	}
	tb.Fatalf("dials to %s keep completing with a backlog of 0: this kernel does not drop SYNs on a full accept queue", addr)
	return ""
}

// stallingProxy serves r's manifests, and answers every blob request with 200 and headers, then
// never sends the body: a registry that stalls mid-download.
func stallingProxy(tb testing.TB, r *testRegistry) string {
	tb.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: r.Addr})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/") {
			proxy.ServeHTTP(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
	tb.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
