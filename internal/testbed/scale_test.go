package testbed

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestScaleOptionsSizeEtcd starts a hub with ScaleOptions and reads the quota etcd itself
// reports, and the processes' ids PID finds.
func TestScaleOptionsSizeEtcd(t *testing.T) {
	h := StartWithT(t, ScaleOptions())
	resp, err := http.Get(h.env.ControlPlane.Etcd.URL.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var quota float64
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "etcd_server_quota_backend_bytes "); ok {
			if quota, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := float64(ScaleOptions().EtcdQuotaBytes); quota != want {
		t.Fatalf("etcd reports a quota of %.0f bytes, want %.0f", quota, want)
	}
	etcd, api := h.PID("etcd"), h.PID("kube-apiserver")
	if etcd == 0 || api == 0 || etcd == api {
		t.Fatalf("PID: etcd %d, kube-apiserver %d; want two running processes", etcd, api)
	}
	if pid := h.PID("kubelet"); pid != 0 {
		t.Fatalf("PID(kubelet) = %d, want 0: the hub runs none", pid)
	}
}

// TestDefaultOptionsKeepEtcdQuota: without EtcdQuotaBytes, etcd gets no quota flag and keeps its
// own default, as every other test's hub.
func TestDefaultOptionsKeepEtcdQuota(t *testing.T) {
	etcd := &envtest.Etcd{}
	Options{}.configureScale(etcd)
	if v := etcd.Configure().Get("quota-backend-bytes").Get(nil); len(v) != 0 {
		t.Fatalf("quota-backend-bytes = %v without EtcdQuotaBytes, want unset", v)
	}
	ScaleOptions().configureScale(etcd)
	if v := etcd.Configure().Get("quota-backend-bytes").Get(nil); len(v) != 1 || v[0] != strconv.Itoa(8<<30) {
		t.Fatalf("quota-backend-bytes = %v with ScaleOptions, want [%d]", v, 8<<30)
	}
}
