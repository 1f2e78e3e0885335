package testbed

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/config/crd"
)

// startHub starts a hub, skipping the test when the binaries are missing unless
// FLEET_REQUIRE_TESTBED=1.
func startHub(t *testing.T) *Hub {
	t.Helper()
	h := startHubKeep(t)
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// startHubKeep starts a hub and leaves stopping it to the caller.
func startHubKeep(t *testing.T) *Hub {
	t.Helper()
	begin := time.Now()
	h, err := Start(t.Context(), Options{})
	if errors.Is(err, ErrBinariesMissing) && os.Getenv(EnvRequire) != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hub started in %v at %s", time.Since(begin).Round(time.Millisecond), h.APIServerURL())
	return h
}

func TestHub(t *testing.T) {
	h := startHub(t)
	ctx := t.Context()

	if got := len(processesNaming(h.Dir)); got != 2 {
		t.Errorf("%d processes name %s, want 2 (etcd, kube-apiserver)", got, h.Dir)
	}
	for _, addr := range ports(h) {
		if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
			t.Errorf("listening on %s, want 127.0.0.1", addr)
		}
	}

	c, err := h.Client()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("CRDs established", func(t *testing.T) {
		want, err := crd.CRDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			var got apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: w.Name}, &got); err != nil {
				t.Fatal(err)
			}
			if !established(&got) {
				t.Errorf("%s is not Established: %+v", w.Name, got.Status.Conditions)
			}
		}
	})

	t.Run("ManagedCluster", func(t *testing.T) {
		mc := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Labels: map[string]string{"site": "berlin"}},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 120},
		}
		if err := c.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		var got clusterv1.ManagedCluster
		if err := c.Get(ctx, client.ObjectKey{Name: "edge-1"}, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Spec.HubAcceptsClient || got.Spec.LeaseDurationSeconds != 120 || got.Labels["site"] != "berlin" {
			t.Errorf("read back spec %+v labels %v, want hubAcceptsClient, lease 120, site=berlin", got.Spec, got.Labels)
		}
	})

	t.Run("ManifestWork", func(t *testing.T) {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "edge-1"}}); err != nil {
			t.Fatal(err)
		}
		cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"chain","namespace":"apps"},"data":{"registry":"oci://mirror.example/fleet"}}`
		mw := &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "edge-1"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: runtime.RawExtension{Raw: []byte(cm)}},
			}}},
		}
		if err := c.Create(ctx, mw); err != nil {
			t.Fatal(err)
		}
		var got workv1.ManifestWork
		if err := c.Get(ctx, client.ObjectKey{Namespace: "edge-1", Name: "app"}, &got); err != nil {
			t.Fatal(err)
		}
		if n := len(got.Spec.Workload.Manifests); n != 1 {
			t.Fatalf("%d manifests, want 1", n)
		}
		if raw := string(got.Spec.Workload.Manifests[0].Raw); !strings.Contains(raw, `"registry":"oci://mirror.example/fleet"`) {
			t.Errorf("manifest read back as %s", raw)
		}
	})

	t.Run("kubeconfig file", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != h.APIServerURL() {
			t.Errorf("kubeconfig server %s, want %s", cfg.Host, h.APIServerURL())
		}
		fresh, err := client.New(cfg, client.Options{Scheme: Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		var got clusterv1.ManagedCluster
		if err := fresh.Get(ctx, client.ObjectKey{Name: "edge-1"}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Labels["site"] != "berlin" {
			t.Errorf("labels %v, want site=berlin", got.Labels)
		}
		fi, err := os.Stat(h.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("kubeconfig mode %v, want 0600: it holds the admin key", perm)
		}
		copyPath := filepath.Join(t.TempDir(), "sub", "kubeconfig")
		if err := h.WriteKubeconfig(copyPath); err != nil {
			t.Fatal(err)
		}
		copied, err := clientcmd.BuildConfigFromFlags("", copyPath)
		if err != nil {
			t.Fatal(err)
		}
		if copied.Host != h.APIServerURL() {
			t.Errorf("copied kubeconfig server %s, want %s", copied.Host, h.APIServerURL())
		}
	})

	addrs, webhookCerts := ports(h), h.env.WebhookInstallOptions.LocalServingCertDir
	begin := time.Now()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("hub stopped in %v", time.Since(begin).Round(time.Millisecond))

	if pids := processesNaming(h.Dir); len(pids) > 0 {
		t.Errorf("processes %v still name %s after Stop", pids, h.Dir)
	}
	for _, dir := range []string{h.Dir, webhookCerts} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after Stop (stat: %v)", dir, err)
		}
	}
	for _, addr := range addrs {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after Stop", addr)
		}
	}
	if err := h.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestReapStale plays a run killed before Stop: its hub's owner is gone, so the next Start's
// sweep must end its processes and remove its folder.
func TestReapStale(t *testing.T) {
	h := startHubKeep(t)
	// The reap ends the hub's processes, so stopping it afterwards may find none to signal.
	t.Cleanup(func() { _ = h.Stop() })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, ownerFile), []byte(strconv.Itoa(dead.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir() // a live hub's folder must survive the sweep
	live := filepath.Join(os.TempDir(), dirPrefix+"live-"+filepath.Base(other))
	if err := os.Mkdir(live, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(live) })
	if err := writeOwner(live); err != nil {
		t.Fatal(err)
	}

	ReapStale()

	if pids := processesNaming(h.Dir); len(pids) > 0 {
		t.Errorf("processes %v of the stale hub survived", pids)
	}
	if _, err := os.Stat(h.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale hub folder %s left (stat: %v)", h.Dir, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live hub folder removed: %v", err)
	}
}

// TestStartFailure: a kube-apiserver that will not start makes Start fail with its output in the
// error, and leaves no etcd running and no folder behind.
func TestStartFailure(t *testing.T) {
	real, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckBinaries(real); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(filepath.Join(real, "etcd"), filepath.Join(bin, "etcd")); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\n[ \"$1\" = --help ] && exit 0\necho 'fake kube-apiserver: refusing to start' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "kube-apiserver"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	before := ourHubDirs(t)

	_, err = Start(t.Context(), Options{BinDir: bin, StartTimeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Fatalf("Start error = %v, want one quoting kube-apiserver's output", err)
	}
	if pids := processesStartedFrom(bin); len(pids) > 0 {
		t.Errorf("etcd processes %v still run after the failed start", pids)
	}
	if after := ourHubDirs(t); len(after) != len(before) {
		t.Errorf("hub folders %v left after the failed start (before: %v)", after, before)
	}
}

func TestAlive(t *testing.T) {
	if !alive(os.Getpid()) {
		t.Error("alive(own pid) = false")
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	if alive(exited.Process.Pid) {
		t.Error("alive(reaped pid) = true")
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zombie.Wait() }() // reaps the killed child; its exit status is the kill
	for deadline := time.Now().Add(5 * time.Second); alive(zombie.Process.Pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("alive(zombie) stays true: a hub whose owner was killed would never be cleaned up")
		}
	}
}

func TestBinDir(t *testing.T) {
	t.Run("env", func(t *testing.T) {
		t.Setenv(EnvBinDir, "/opt/hub/bin")
		if got, err := BinDir(); err != nil || got != "/opt/hub/bin" {
			t.Errorf("BinDir() = %q, %v; want /opt/hub/bin", got, err)
		}
	})
	t.Run("repo root", func(t *testing.T) {
		t.Setenv(EnvBinDir, "")
		got, err := BinDir()
		if err != nil {
			t.Fatal(err)
		}
		root, _ := filepath.Abs("../..") // this package is internal/testbed
		if got != filepath.Join(root, "bin") {
			t.Errorf("BinDir() = %q, want %q", got, filepath.Join(root, "bin"))
		}
	})
	t.Run("outside the repo", func(t *testing.T) {
		t.Setenv(EnvBinDir, "")
		t.Chdir(t.TempDir())
		if _, err := BinDir(); err == nil || !strings.Contains(err.Error(), EnvBinDir) {
			t.Errorf("BinDir() error = %v, want one naming %s", err, EnvBinDir)
		}
	})
}

func TestCheckBinaries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]os.FileMode
		missing []string
	}{
		{name: "both", files: map[string]os.FileMode{"etcd": 0o755, "kube-apiserver": 0o755}},
		{name: "none", missing: []string{"kube-apiserver", "etcd"}},
		{name: "not executable", files: map[string]os.FileMode{"etcd": 0o755, "kube-apiserver": 0o644}, missing: []string{"kube-apiserver"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, mode := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckBinaries(dir)
			if len(tc.missing) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBinariesMissing) {
				t.Fatalf("err = %v, want ErrBinariesMissing", err)
			}
			for _, want := range append(slices.Clone(tc.missing), "make tools", dir) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestTail(t *testing.T) {
	tl := &tail{max: 8}
	for _, s := range []string{"first line\n", "0123\n", "456789"} {
		if _, err := tl.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := tl.report("etcd"), "\n--- last output of etcd ---\n456789"; got != want {
		t.Errorf("report = %q, want %q", got, want)
	}
	short := &tail{max: 8}
	if _, err := short.Write([]byte("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := short.report("etcd"), "\n--- last output of etcd ---\na\nb"; got != want {
		t.Errorf("report = %q, want %q", got, want)
	}
	if got := (&tail{max: 8}).report("etcd"); got != "" {
		t.Errorf("empty report = %q, want empty", got)
	}
}

func TestStartCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Start(ctx, Options{BinDir: t.TempDir()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a canceled context: %v, want context.Canceled", err)
	}
}

func established(c *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// ourHubDirs lists the hub folders this process owns.
func ourHubDirs(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, d := range dirs {
		if owner, err := os.ReadFile(filepath.Join(d, ownerFile)); err == nil && string(owner) == strconv.Itoa(os.Getpid()) {
			ours = append(ours, d)
		}
	}
	return ours
}

// processesStartedFrom lists the processes whose executable path (argv[0]) is in dir.
func processesStartedFrom(dir string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); err == nil && filepath.Dir(argv0) == dir {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// ports are the addresses etcd and kube-apiserver serve clients on.
func ports(h *Hub) []string {
	return []string{h.env.ControlPlane.Etcd.URL.Host, h.env.ControlPlane.APIServer.HostPort()}
}

// Restart kills kube-apiserver and etcd and starts them again with their data: a client made
// before the restart gets connection refused while the hub is down, then reads what was written
// before, custom resources included, and writes again, with no new configuration.
func TestHubRestart(t *testing.T) {
	h := startHub(t)
	ctx := t.Context()
	c, err := h.Client()
	if err != nil {
		t.Fatal(err)
	}
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before"}, Data: map[string]string{"k": "v"}}
	if err := c.Create(ctx, before); err != nil {
		t.Fatal(err)
	}
	cluster := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "kept-01"}}
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	url := h.APIServerURL()

	if err := h.Kill(); err != nil {
		t.Fatal(err)
	}
	err = c.Get(ctx, client.ObjectKeyFromObject(before), &corev1.ConfigMap{})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Get while the hub is down = %v, want connection refused", err)
	}
	start := time.Now()
	if err := h.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver and etcd back and ready %s after Resume", time.Since(start).Round(time.Millisecond))
	if h.APIServerURL() != url {
		t.Fatalf("API server at %s after the restart, want %s", h.APIServerURL(), url)
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(before), &got); err != nil || got.Data["k"] != "v" {
		t.Fatalf("ConfigMap after the restart: %v %v, want the data written before", err, got.Data)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), &clusterv1.ManagedCluster{}); err != nil {
		t.Fatalf("ManagedCluster after the restart: %v", err)
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after"}}); err != nil {
		t.Fatalf("write after the restart: %v", err)
	}

	down, err := h.Restart(ctx, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Restart: the hub was unreachable for %s", down.Round(time.Millisecond))
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "after"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("ConfigMap after the second restart: %v", err)
	}
}
