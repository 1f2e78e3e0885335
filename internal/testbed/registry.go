package testbed

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// A test registry is a CNCF distribution registry (bin/registry, `make bin/registry`) run as a
// child process on a free 127.0.0.1 port, optionally with TLS from a test CA and htpasswd basic
// auth. Its configuration, certificate and (unless RegistryOptions.DataDir is given) its storage
// are in one temporary folder that records its owner's pid, as a hub's does: a registry whose
// owner died without Close is ended by the next StartRegistry (ReapStaleRegistries).

const (
	// RegistryBinary is the registry's file name in the binaries folder.
	RegistryBinary = "registry"
	// ArtifactType and LayerMediaType are the types of the artifacts Push packs.
	ArtifactType   = "application/vnd.fleet.test"
	LayerMediaType = "application/vnd.fleet.test.layer"
	// ArtifactCreated is the creation annotation of every artifact Push packs, so that the same
	// layers make the same manifest digest in every registry and run.
	ArtifactCreated = "2026-11-30T00:00:00Z"

	registryDirPrefix     = "fleet-registry-"
	registryReadyTimeout  = 15 * time.Second
	registryStopTimeout   = 5 * time.Second
	registryReadyInterval = 20 * time.Millisecond
)

// RegistryOptions configure StartRegistry. The zero value serves plain HTTP without auth, its
// storage in a temporary folder.
type RegistryOptions struct {
	// TLS serves HTTPS with a certificate for 127.0.0.1 issued by a CA made for this registry
	// (Registry.CA). CA, if set, issues it instead, e.g. to share one CA among registries, and
	// implies TLS.
	TLS bool
	CA  *CA
	// Username and Password, if set, turn on htpasswd basic auth with this user, whom Push and
	// Copy use and whom Entry carries as the chain entry's (push) credentials.
	Username, Password string
	// Users are further htpasswd users, name to password, e.g. an agent's read-only identity
	// (the registry itself does not distinguish rights).
	Users map[string]string
	// DataDir holds the registry's storage; empty means a folder inside the registry's
	// temporary folder. A given DataDir is kept by Close.
	DataDir string
	// BinDir holds the registry binary; empty means BinDir().
	BinDir string
	// Output receives the registry's log; nil keeps only its tail, which errors include.
	Output io.Writer
}

// Registry is a test registry. Stop and Start end and restart its process on the same address
// with the same storage; Close ends it and removes its folder.
type Registry struct {
	// Addr is host:port, 127.0.0.1 and the port chosen at StartRegistry.
	Addr string
	// Dir is the registry's temporary folder: config, certificate, htpasswd and, unless
	// RegistryOptions.DataDir was given, its storage (Dir/data).
	Dir string
	// DataDir is the registry's storage.
	DataDir string
	// CA issued the registry's certificate; nil for plain HTTP.
	CA *CA
	// Username and Password are RegistryOptions.Username and Password.
	Username, Password string

	bin    string
	config string
	output io.Writer
	log    *tail
	ownDir bool
	client *auth.Client

	mu   sync.Mutex
	proc *Process
}

// StartRegistry starts a registry and returns once it answers on /v2/. On error nothing is left
// running. ctx bounds the start.
func StartRegistry(ctx context.Context, opts RegistryOptions) (*Registry, error) {
	bin, err := binaryIn(opts.BinDir, RegistryBinary)
	if err != nil {
		return nil, err
	}
	if opts.CA == nil && opts.TLS {
		if opts.CA, err = NewCA(); err != nil {
			return nil, err
		}
	}
	if (opts.Username == "") != (opts.Password == "") {
		return nil, errors.New("test registry: set both Username and Password, or neither")
	}
	ReapStaleRegistries()
	dir, err := os.MkdirTemp("", registryDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("test registry folder: %w", err)
	}
	r := &Registry{
		Dir: dir, DataDir: opts.DataDir, CA: opts.CA, Username: opts.Username, Password: opts.Password,
		bin: bin, config: filepath.Join(dir, "config.yml"), output: opts.Output, log: &tail{max: logTail}, ownDir: true,
	}
	if r.DataDir == "" {
		r.DataDir = filepath.Join(dir, "data")
	}
	if err := r.configure(opts); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := r.Start(ctx); err != nil {
		return nil, errors.Join(err, r.Close())
	}
	return r, nil
}

// StartRegistryT starts a registry for one test and closes it when the test ends, logging its
// log's tail if the test failed. Without bin/registry it skips the test, or fails it when
// FLEET_REQUIRE_TESTBED=1.
func StartRegistryT(tb testing.TB, opts RegistryOptions) *Registry {
	tb.Helper()
	r, err := StartRegistry(tb.Context(), opts)
	skipOrFatal(tb, err)
	tb.Cleanup(func() {
		if tb.Failed() {
			if log := r.log.report(RegistryBinary + " " + r.Addr); log != "" {
				tb.Log(log)
			}
		}
		if err := r.Close(); err != nil {
			tb.Error(err)
		}
	})
	return r
}

// skipOrFatal skips tb for ErrBinariesMissing unless FLEET_REQUIRE_TESTBED=1, and fails it for
// any other error.
func skipOrFatal(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, ErrBinariesMissing) && os.Getenv(EnvRequire) != "1" {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// Binary returns the path of a test-bed binary (registry, oras, ...) in BinDir(), or an error
// wrapping ErrBinariesMissing that names the make target building it.
func Binary(name string) (string, error) { return binaryIn("", name) }

// BinaryT is Binary for a test: it skips the test when the binary is missing, or fails it when
// FLEET_REQUIRE_TESTBED=1.
func BinaryT(tb testing.TB, name string) string {
	tb.Helper()
	path, err := Binary(name)
	skipOrFatal(tb, err)
	return path
}

func binaryIn(dir, name string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = BinDir(); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%w: no %s in %s: run `make bin/%s` (or set %s)", ErrBinariesMissing, name, dir, name, EnvBinDir)
	}
	return path, nil
}

// configure picks the address and writes the config, certificate and htpasswd into r.Dir.
func (r *Registry) configure(opts RegistryOptions) error {
	if err := writeOwner(r.Dir); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n")
	fmt.Fprintf(&cfg, "storage:\n  filesystem:\n    rootdirectory: %s\n  maintenance:\n    uploadpurging:\n      enabled: false\n", r.DataDir)
	fmt.Fprintf(&cfg, "http:\n  addr: %s\n  secret: fleet-test\n", r.Addr)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if r.CA != nil {
		cert, key, err := r.CA.issue(r.Dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(&cfg, "  tls:\n    certificate: %s\n    key: %s\n", cert, key)
		transport.TLSClientConfig = &tls.Config{RootCAs: r.CA.Pool(), MinVersion: tls.VersionTLS12}
	}
	users := maps.Clone(opts.Users)
	if r.Username != "" {
		if users == nil {
			users = map[string]string{}
		}
		users[r.Username] = r.Password
	}
	if len(users) > 0 {
		var htpasswd bytes.Buffer
		for _, user := range slices.Sorted(maps.Keys(users)) {
			hash, err := bcrypt.GenerateFromPassword([]byte(users[user]), bcrypt.MinCost)
			if err != nil {
				return fmt.Errorf("test registry: htpasswd of %s: %w", user, err)
			}
			fmt.Fprintf(&htpasswd, "%s:%s\n", user, hash)
		}
		path := filepath.Join(r.Dir, "htpasswd")
		if err := os.WriteFile(path, htpasswd.Bytes(), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(&cfg, "auth:\n  htpasswd:\n    realm: fleet-test\n    path: %s\n", path)
	}
	r.client = &auth.Client{
		Client:     &http.Client{Transport: transport},
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(r.Addr, auth.Credential{Username: r.Username, Password: r.Password}),
	}
	return os.WriteFile(r.config, []byte(cfg.String()), 0o600)
}

// Start starts the registry's process, unless it runs, on its address with its storage, and
// waits until it answers on /v2/. After Stop it brings the registry back as it was.
func (r *Registry) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil && r.proc.Running() {
		return nil
	}
	var out io.Writer = r.log
	if r.output != nil {
		out = io.MultiWriter(r.log, r.output)
	}
	cmd := exec.Command(r.bin, "serve", r.config)
	cmd.Dir = r.Dir
	cmd.Stdout, cmd.Stderr = out, out
	// Should this process die without Stop, the registry goes with it (Linux).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := StartProcess(cmd, nil)
	if err != nil {
		return fmt.Errorf("test registry %s: %w", r.Addr, err)
	}
	r.proc = p
	if err := r.waitReady(ctx, p); err != nil {
		return errors.Join(err, r.stopLocked())
	}
	return nil
}

func (r *Registry) waitReady(ctx context.Context, p *Process) error {
	// Any answer will do, 401 included: the registry is up.
	probe := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // readiness probe only
		Timeout:   time.Second,
	}
	defer probe.CloseIdleConnections()
	deadline := time.NewTimer(registryReadyTimeout)
	defer deadline.Stop()
	for {
		resp, err := probe.Get(r.URL() + "/v2/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("test registry %s exited: %v%s", r.Addr, p.Err(), r.log.report(RegistryBinary))
		case <-deadline.C:
			return fmt.Errorf("test registry %s did not answer within %s: %v%s", r.Addr, registryReadyTimeout, err, r.log.report(RegistryBinary))
		case <-ctx.Done():
			return fmt.Errorf("test registry %s: waiting for it: %w", r.Addr, ctx.Err())
		case <-time.After(registryReadyInterval):
		}
	}
}

// Stop ends the registry's process (SIGTERM, then SIGKILL after 5 s) and waits for it: its
// address then refuses connections. Its storage and address stay for Start.
func (r *Registry) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopLocked()
}

func (r *Registry) stopLocked() error {
	if r.proc != nil {
		_ = r.signalLocked(syscall.SIGCONT) // a frozen process cannot act on SIGTERM
		r.proc.Stop(registryStopTimeout)
	}
	return nil
}

// Freeze stops the registry's process in place (SIGSTOP): the kernel still completes
// connections to its address and holds what clients send, but nothing is read or answered, and
// a download under way stops mid-body once the socket buffers drain, as with a hung host. Thaw
// lets it go on where it was; Stop and Close thaw it first. It returns once every thread of the
// process has stopped: kill(2) only queues the signal, and a thread running on another core could
// still answer a request sent right after it.
func (r *Registry) Freeze() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.signalLocked(syscall.SIGSTOP); err != nil {
		return err
	}
	pid := r.proc.Cmd.Process.Pid
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		stopped, err := allThreadsStopped(pid)
		if err != nil || stopped {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("test registry %s: SIGSTOP sent, but its threads still run after 5 s", r.Addr)
		}
	}
}

// allThreadsStopped tells whether every thread of process pid is in the stopped state ("T" in
// /proc/<pid>/task/<tid>/stat).
func allThreadsStopped(pid int) (bool, error) {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false, fmt.Errorf("threads of process %d: %v", pid, err)
	}
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			return false, nil //nolint:nilerr // a thread that just ended: poll again
		}
		// "tid (comm) state …": comm may hold spaces and parentheses, so read after the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) == 0 || (fields[0] != "T" && fields[0] != "t") {
			return false, nil
		}
	}
	return true, nil
}

// Thaw resumes a frozen registry (SIGCONT); the requests it held are answered.
func (r *Registry) Thaw() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.signalLocked(syscall.SIGCONT)
}

func (r *Registry) signalLocked(sig syscall.Signal) error {
	if r.proc == nil || !r.proc.Running() {
		return fmt.Errorf("test registry %s does not run", r.Addr)
	}
	if err := r.proc.Cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("test registry %s: %s: %w", r.Addr, sig, err)
	}
	return nil
}

// Running tells whether the registry's process runs.
func (r *Registry) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc != nil && r.proc.Running()
}

// Close stops the registry and removes its folder (a given DataDir stays).
func (r *Registry) Close() error {
	err := r.Stop()
	if r.client != nil {
		r.client.Client.CloseIdleConnections()
	}
	if r.ownDir {
		err = errors.Join(err, os.RemoveAll(r.Dir))
	}
	return err
}

// Log returns the last lines of the registry's log.
func (r *Registry) Log() string { return r.log.report(RegistryBinary + " " + r.Addr) }

// TLS tells whether the registry serves HTTPS.
func (r *Registry) TLS() bool { return r.CA != nil }

// Connect returns a Registry for one that another process started (plain HTTP at addr, with
// the user given), to push and copy content; it cannot be started or stopped.
func Connect(addr, username, password string) *Registry {
	return &Registry{Addr: addr, Username: username, Password: password, client: &auth.Client{
		Client:     &http.Client{Transport: http.DefaultTransport},
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(addr, auth.Credential{Username: username, Password: password}),
	}}
}

// PID is the process id of the registry, 0 when it does not run.
func (r *Registry) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil || !r.proc.Running() {
		return 0
	}
	return r.proc.Cmd.Process.Pid
}

// URL is the registry's base URL, http:// or https:// and Addr.
func (r *Registry) URL() string {
	if r.TLS() {
		return "https://" + r.Addr
	}
	return "http://" + r.Addr
}

// Reference returns "host:port/namespace", a chain entry's reference with a namespace, or Addr
// when namespace is empty.
func (r *Registry) Reference(namespace string) string {
	if namespace == "" {
		return r.Addr
	}
	return r.Addr + "/" + strings.Trim(namespace, "/")
}

// Entry returns a chain entry for the registry named name: its address, BasicHTTP for plain
// HTTP, its CA's PEM in CACerts and its user as the push credentials. Clear CACerts for an
// "untrusted TLS" failure, or change Password for a wrong password.
func (r *Registry) Entry(name string) puller.Registry {
	e := puller.Registry{Name: name, Reference: r.Addr, BasicHTTP: !r.TLS(), Username: r.Username, Password: puller.Secret(r.Password)}
	if r.CA != nil {
		e.CACerts = r.CA.PEM
	}
	return e
}

// Repository returns a client for a repository of the registry, with its user's rights, e.g.
// to push content of one's own.
func (r *Registry) Repository(repository string) *remote.Repository {
	return &remote.Repository{
		Client:    r.client,
		Reference: registry.Reference{Registry: r.Addr, Repository: repository},
		PlainHTTP: !r.TLS(),
	}
}

// Artifact is a small artifact packed in memory, ready to be pushed to registries.
type Artifact struct {
	Manifest ocispec.Descriptor
	Layers   []ocispec.Descriptor
	store    *memory.Store
}

// NewArtifact packs layers (titled layer-0, layer-1, ...) into an artifact of type
// ArtifactType created at ArtifactCreated: the same layers make the same manifest.
func NewArtifact(layers ...[]byte) (*Artifact, error) {
	return newArtifact(ArtifactCreated, layers)
}

// NewArtifactAt is NewArtifact created at created (to the second, as RFC 3339 has it), as
// `oras push` annotates an artifact with the time of the push.
func NewArtifactAt(created time.Time, layers ...[]byte) (*Artifact, error) {
	return newArtifact(created.UTC().Format(time.RFC3339), layers)
}

func newArtifact(created string, layers [][]byte) (*Artifact, error) {
	ctx := context.Background()
	a := &Artifact{store: memory.New()}
	for i, data := range layers {
		desc := content.NewDescriptorFromBytes(LayerMediaType, data)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: fmt.Sprintf("layer-%d", i)}
		if err := a.store.Push(ctx, desc, bytes.NewReader(data)); err != nil {
			return nil, err
		}
		a.Layers = append(a.Layers, desc)
	}
	m, err := oras.PackManifest(ctx, a.store, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: a.Layers, ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: created},
	})
	if err != nil {
		return nil, err
	}
	a.Manifest = m
	return a, nil
}

// Push packs layers into an artifact (NewArtifact) and pushes it to repository:tag; it returns
// the manifest's descriptor.
func (r *Registry) Push(ctx context.Context, repository, tag string, layers ...[]byte) (ocispec.Descriptor, error) {
	a, err := NewArtifact(layers...)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return a.Manifest, r.PushArtifact(ctx, repository, tag, a)
}

// PushT is Push for a test, failing it on error.
func (r *Registry) PushT(tb testing.TB, repository, tag string, layers ...[]byte) ocispec.Descriptor {
	tb.Helper()
	m, err := r.Push(tb.Context(), repository, tag, layers...)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// PushArtifact pushes a to repository:tag.
func (r *Registry) PushArtifact(ctx context.Context, repository, tag string, a *Artifact) error {
	repo := r.Repository(repository)
	if err := oras.CopyGraph(ctx, a.store, repo, a.Manifest, oras.DefaultCopyGraphOptions); err != nil {
		return fmt.Errorf("push to %s: %w", repo.Reference, err)
	}
	if err := repo.Tag(ctx, a.Manifest, tag); err != nil {
		return fmt.Errorf("tag %s in %s: %w", tag, repo.Reference, err)
	}
	return nil
}

// Copy replicates repository:tag from another registry to this one, under the same repository
// and tag, as replication to a mirror does; it returns the manifest's descriptor.
func (r *Registry) Copy(ctx context.Context, from *Registry, repository, tag string) (ocispec.Descriptor, error) {
	m, err := oras.Copy(ctx, from.Repository(repository), tag, r.Repository(repository), tag, oras.DefaultCopyOptions)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("copy %s:%s from %s to %s: %w", repository, tag, from.Addr, r.Addr, err)
	}
	return m, nil
}

// PushRandom pushes an artifact of n layers of size bytes each, pseudo-random from seed, to
// repository:tag, streaming each layer twice (once to hash it, once to upload it) so that
// memory stays small whatever the size; it returns the manifest's descriptor.
func (r *Registry) PushRandom(ctx context.Context, repository, tag string, n int, size int64, seed uint64) (ocispec.Descriptor, error) {
	repo := r.Repository(repository)
	var layers []ocispec.Descriptor
	for i := range n {
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], seed)
		binary.LittleEndian.PutUint64(key[8:], uint64(i))
		gen := func() io.Reader { return io.LimitReader(randReader{mrand.NewChaCha8(key)}, size) }
		h := sha256.New()
		if _, err := io.Copy(h, gen()); err != nil {
			return ocispec.Descriptor{}, err
		}
		desc := ocispec.Descriptor{
			MediaType:   LayerMediaType,
			Digest:      digest.NewDigest(digest.SHA256, h),
			Size:        size,
			Annotations: map[string]string{ocispec.AnnotationTitle: fmt.Sprintf("blob-%d", i)},
		}
		if err := repo.Push(ctx, desc, gen()); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("push layer %d to %s: %w", i, repo.Reference, err)
		}
		layers = append(layers, desc)
	}
	// The manifest and its empty config are small: pack them in memory and push them.
	if err := repo.Push(ctx, ocispec.DescriptorEmptyJSON, bytes.NewReader(ocispec.DescriptorEmptyJSON.Data)); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push config to %s: %w", repo.Reference, err)
	}
	mem := memory.New()
	m, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: layers, ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: ArtifactCreated},
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	rc, err := mem.Fetch(ctx, m)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer rc.Close()
	if err := repo.PushReference(ctx, m, rc, tag); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push manifest to %s:%s: %w", repo.Reference, tag, err)
	}
	return m, nil
}

// randReader reads from a seeded ChaCha8 stream.
type randReader struct{ src *mrand.ChaCha8 }

func (r randReader) Read(p []byte) (int, error) {
	n := len(p) &^ 7
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(p[i:], r.src.Uint64())
	}
	if n == 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.src.Uint64())
		n = copy(p, w[:])
	}
	return n, nil
}

// CA is a self-signed certificate authority for test registries.
type CA struct {
	// PEM is the CA's certificate, for a chain entry's CACerts.
	PEM  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA valid from an hour ago for a day.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fleet test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}, nil
}

// Pool returns a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// issue writes a server certificate for 127.0.0.1 and localhost and its key into dir.
func (ca *CA) issue(dir string) (certPath, keyPath string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// ReapStaleRegistries ends the registries of folders whose owner exited without Close (only
// possible if the registry outlived it, e.g. an owner of an older build) and removes the
// folders. StartRegistry calls it.
func ReapStaleRegistries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), registryDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // still being created, or not a registry's folder
		}
		if owner, err := strconv.Atoi(strings.TrimSpace(string(data))); err != nil || alive(owner) {
			continue
		}
		config := []byte(filepath.Join(dir, "config.yml"))
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			cmdline, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(cmdline, config) {
				continue
			}
			argv0, _, _ := bytes.Cut(cmdline, []byte{0})
			if filepath.Base(string(argv0)) != RegistryBinary {
				continue
			}
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = os.RemoveAll(dir)
	}
}
