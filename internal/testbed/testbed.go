// Package testbed runs the local hub: a real etcd and kube-apiserver on free loopback ports, with
// the hub's CRDs (Open Cluster Management's and ours) installed, an admin kubeconfig on disk, and
// everything in one temporary folder that Stop removes. Acceptance tests, the demo and
// `make hub-up` all use it; see Main for the TestMain entry point.
package testbed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/umkim/terraform-provider-fleet/config/crd"
)

const (
	// EnvBinDir names the folder holding the kube-apiserver and etcd binaries; the Makefile
	// exports it as <repo>/bin.
	EnvBinDir = "FLEET_TESTBED_BIN"
	// EnvRequire, set to 1, turns a missing test bed into a failure instead of a skip.
	EnvRequire = "FLEET_REQUIRE_TESTBED"

	modulePath          = "github.com/umkim/terraform-provider-fleet"
	defaultStartTimeout = 90 * time.Second
	stopTimeout         = 30 * time.Second
	adminUser           = "fleet-admin"
	dirPrefix           = "fleet-hub-"
	logTail             = 4 << 10
)

// ErrBinariesMissing means kube-apiserver or etcd was not found; `make tools` builds them.
var ErrBinariesMissing = errors.New("local hub binaries missing")

// Options configure Start. The zero value is ready to use.
type Options struct {
	// BinDir holds kube-apiserver and etcd; empty means BinDir().
	BinDir string
	// StartTimeout bounds each step of the start (etcd, kube-apiserver, CRDs, readiness);
	// zero means 90 s, room for a loaded two-core machine.
	StartTimeout time.Duration
	// Output receives etcd's and kube-apiserver's logs; nil keeps only their tails, which a
	// failed start includes in its error.
	Output io.Writer
	// EtcdQuotaBytes is etcd's backend quota; zero keeps etcd's default of 2 GiB. A hub of
	// 100,000 clusters needs more (see ScaleOptions).
	EtcdQuotaBytes int64
}

// Hub is a running local hub.
type Hub struct {
	// Dir is the temporary folder holding etcd's data, the certificates and the kubeconfig.
	Dir string
	// Kubeconfig is the path of a kubeconfig for an admin (system:masters) user.
	Kubeconfig string
	// Config is the admin user's client configuration.
	Config *rest.Config

	env      *envtest.Environment
	timeout  time.Duration
	mu       sync.Mutex // serialises Kill, Resume and Stop
	stopOnce sync.Once
	stopErr  error
}

// Start runs etcd and kube-apiserver on free 127.0.0.1 ports, installs the CRDs embedded in
// config/crd, writes the admin kubeconfig and returns once the API server reports ready. On
// error nothing is left running. ctx bounds the readiness wait; the processes' own start is
// bounded by Options.StartTimeout.
func Start(ctx context.Context, opts Options) (*Hub, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = BinDir(); err != nil {
			return nil, err
		}
	}
	if err := CheckBinaries(binDir); err != nil {
		return nil, err
	}
	crds, err := crd.CRDs()
	if err != nil {
		return nil, err
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = defaultStartTimeout
	}
	ReapStale()

	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("local hub folder: %w", err)
	}
	h := &Hub{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), timeout: timeout}
	if err := writeOwner(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	etcdLog, apiLog := &tail{max: logTail}, &tail{max: logTail}
	h.env = &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		ControlPlane: envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:    filepath.Join(binDir, "etcd"),
				DataDir: filepath.Join(dir, "etcd"),
				Out:     teeTo(etcdLog, opts.Output),
				Err:     teeTo(etcdLog, opts.Output),
			},
			APIServer: &envtest.APIServer{
				Path:    filepath.Join(binDir, "kube-apiserver"),
				CertDir: filepath.Join(dir, "apiserver"),
				Out:     teeTo(apiLog, opts.Output),
				Err:     teeTo(apiLog, opts.Output),
			},
		},
		CRDs:                     crds,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: timeout},
		UseExistingCluster:       new(false),
		ControlPlaneStartTimeout: timeout,
		ControlPlaneStopTimeout:  stopTimeout,
	}
	opts.configureScale(h.env.ControlPlane.Etcd)
	for _, d := range []string{h.env.ControlPlane.Etcd.DataDir, h.env.ControlPlane.APIServer.CertDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("local hub folder: %w", err)
		}
	}

	fail := func(err error) (*Hub, error) {
		err = fmt.Errorf("local hub: %w%s%s", err, etcdLog.report("etcd"), apiLog.report("kube-apiserver"))
		return nil, errors.Join(err, h.Stop())
	}
	if _, err := h.env.Start(); err != nil {
		return fail(err)
	}
	user, err := h.env.AddUser(envtest.User{Name: adminUser, Groups: []string{"system:masters"}},
		&rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return fail(fmt.Errorf("admin user: %w", err))
	}
	h.Config = user.Config()
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fail(fmt.Errorf("admin kubeconfig: %w", err))
	}
	if err := os.WriteFile(h.Kubeconfig, kubeconfig, 0o600); err != nil {
		return fail(fmt.Errorf("admin kubeconfig: %w", err))
	}
	if err := waitReady(ctx, h.Config, timeout); err != nil {
		return fail(err)
	}
	return h, nil
}

// Stop stops kube-apiserver and etcd, waits for them to exit and removes Dir. It is safe to
// call more than once and from several goroutines; later calls return the first call's result.
func (h *Hub) Stop() error {
	h.stopOnce.Do(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.stopErr = errors.Join(stopEnv(h.env), os.RemoveAll(h.Dir))
		if h.stopErr != nil {
			h.stopErr = fmt.Errorf("stopping the local hub: %w", h.stopErr)
		}
	})
	return h.stopErr
}

// stopEnv stops an envtest environment's etcd and kube-apiserver. One already gone (killed by a
// reaper, or crashed) counts as stopped: envtest signals a process it has not yet seen exit, and
// the signal then finds no such process.
func stopEnv(env *envtest.Environment) error {
	return utilerrors.FilterOut(env.Stop(), func(err error) bool { return errors.Is(err, syscall.ESRCH) })
}

// Kill SIGKILLs kube-apiserver and etcd, as a crash or a power cut would: requests in flight
// lose their answers (a write may be committed all the same), new connections are refused. The
// data, certificates and ports stay for Resume; Stop still cleans up.
func (h *Hub) Kill() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	pids := processesNaming(h.Dir)
	if len(pids) == 0 {
		return errors.New("local hub: no kube-apiserver or etcd running to kill")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(stopTimeout); len(processesNaming(h.Dir)) > 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("local hub: kube-apiserver or etcd still running %s after SIGKILL", stopTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Let envtest see the exits (its Stop of an exited process is a no-op), so that Resume and
	// Stop start from a clean slate.
	cp := h.env.ControlPlane
	var err error
	for range 50 {
		if err = errors.Join(cp.APIServer.Stop(), cp.Etcd.Stop()); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("local hub: after SIGKILL: %w", err)
}

// Resume starts etcd and kube-apiserver again after Kill, on the same ports, with the same
// certificates and etcd's data as they were, and returns once the API server reports ready:
// clients made before (Config, Kubeconfig) reconnect with no change.
func (h *Hub) Resume(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	cp := h.env.ControlPlane
	if err := cp.Etcd.Start(); err != nil {
		return fmt.Errorf("local hub: restarting etcd: %w", err)
	}
	if err := cp.APIServer.Start(); err != nil {
		return fmt.Errorf("local hub: restarting kube-apiserver: %w", err)
	}
	return waitReady(ctx, h.Config, h.timeout)
}

// Restart kills kube-apiserver and etcd (Kill), leaves them down for down, and starts them again
// with their data (Resume). It returns how long the API server was unreachable.
func (h *Hub) Restart(ctx context.Context, down time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := h.Kill(); err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(down):
	}
	err := h.Resume(ctx)
	return time.Since(start), err
}

// APIServerURL is the address clients use, e.g. https://127.0.0.1:41234.
func (h *Hub) APIServerURL() string { return strings.TrimSuffix(h.Config.Host, "/") }

// WriteKubeconfig writes a copy of the admin kubeconfig to path (mode 0600), creating its folder.
func (h *Hub) WriteKubeconfig(path string) error {
	data, err := os.ReadFile(h.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Client returns an admin controller-runtime client that knows the types of Scheme.
func (h *Hub) Client() (client.Client, error) {
	return client.New(h.Config, client.Options{Scheme: Scheme()})
}

// Scheme holds client-go's built-in types, apiextensions/v1 and OCM's cluster and work APIs.
// Kinds not in it (ours included) work through unstructured.Unstructured.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		clusterv1.Install, clusterv1beta1.Install, clusterv1beta2.Install, workv1.Install,
	} {
		if err := add(s); err != nil {
			panic(err) // only on conflicting registrations, a programming error
		}
	}
	return s
}

// BinDir is where the test bed's binaries are: $FLEET_TESTBED_BIN, or else bin/ at the root of
// this repository, found by walking up from the working directory.
func BinDir() (string, error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePathOf(data) == modulePath {
			return filepath.Join(dir, "bin"), nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("no go.mod of %s above %s: set %s to the folder holding kube-apiserver and etcd",
				modulePath, wd, EnvBinDir)
		}
	}
}

// CheckBinaries returns ErrBinariesMissing, naming what to do, unless dir holds executable
// kube-apiserver and etcd binaries.
func CheckBinaries(dir string) error {
	var missing []string
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: no %s in %s: run `make tools` (or set %s)",
			ErrBinariesMissing, strings.Join(missing, " or "), dir, EnvBinDir)
	}
	return nil
}

func modulePathOf(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// waitReady polls /readyz until the API server has finished its post-start hooks.
func waitReady(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w (last check: %v)", err, last)
	}
	return nil
}

func teeTo(t *tail, w io.Writer) io.Writer {
	if w == nil {
		return t
	}
	return io.MultiWriter(t, w)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool // bytes were dropped from the front of buf
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
		t.cut = true
	}
	return len(p), nil
}

// report formats the tail for an error message, or "" when nothing was written.
func (t *tail) report(name string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, cut := t.buf, t.cut
	if len(b) > t.max {
		b, cut = b[len(b)-t.max:], true
	}
	if i := bytes.IndexByte(b, '\n'); cut && i >= 0 {
		b = b[i+1:] // start at a whole line
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	return fmt.Sprintf("\n--- last output of %s ---\n%s", name, bytes.TrimSpace(b))
}
