package testbed

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ScaleOptions are the Options of a hub sized for 100,000 ManagedClusters in one workspace:
// their namespaces and the controller's ManifestWorks and ClusterOCIStorages, some 400,000
// objects and their revisions between two compactions, overflow etcd's default 2 GiB quota
// (etcd then refuses every write with "mvcc: database space exceeded").
//
// The API server's in-flight limits stay at their defaults: the admin user is in system:masters,
// which API Priority and Fairness exempts from them, and both the benchmark's clients and the
// controller under test use it.
func ScaleOptions() Options {
	return Options{EtcdQuotaBytes: 8 << 30}
}

// configureScale applies the options that size etcd, leaving its defaults when they are unset.
func (o Options) configureScale(etcd *envtest.Etcd) {
	if o.EtcdQuotaBytes > 0 {
		etcd.Configure().Set("quota-backend-bytes", strconv.FormatInt(o.EtcdQuotaBytes, 10))
	}
}

// PID returns the process id of the hub's "etcd" or "kube-apiserver", or 0 if it is not running:
// benchmarks read its memory from /proc.
func (h *Hub) PID(name string) int {
	for _, pid := range processesNaming(h.Dir) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		if argv0, _, _ := bytes.Cut(cmdline, []byte{0}); filepath.Base(string(argv0)) == name {
			return pid
		}
	}
	return 0
}
