// Package testkit holds what the tests of several packages share: running a manager for the
// length of a test, polling until a condition holds, reading the metrics registry, making a
// registry Secret as fleet_oci_registry writes it, (hubstate.go) a settled hub, a CRD loosened as
// an older one was, the hub gateway's fragments, and (process.go) running the real binary as
// processes that elect a leader, reading their metrics and the Lease, and killing the leader.
package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
)

// Run starts mgr until the test ends or stop is called; a manager that fails fails the test.
func Run(t testing.TB, mgr ctrl.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Update reads obj by its key, applies change and writes it back, again after a conflict: the
// controllers write the status of the objects the tests change, which moves their resource version.
func Update[T client.Object](t testing.TB, c client.Client, obj T, change func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Eventually polls check every 200 ms until it returns nil or timeout passes, then fails the
// test with check's last error; explain, when not nil, adds what helps to read the failure.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error, explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			msg := ""
			for _, e := range explain {
				msg += "\n" + e()
			}
			t.Fatalf("%s: not within %s: %v%s", what, timeout, err, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Counter sums a counter of the controller-runtime metrics registry over the samples whose
// labels match (every sample when match is empty).
func Counter(name string, match map[string]string) float64 {
	var sum float64
	for _, m := range samples(name, match) {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// Histogram sums a histogram of the controller-runtime metrics registry over the samples whose
// labels match: the sum of the observations and their count.
func Histogram(name string, match map[string]string) (sum, count float64) {
	for _, m := range samples(name, match) {
		sum += m.GetHistogram().GetSampleSum()
		count += float64(m.GetHistogram().GetSampleCount())
	}
	return sum, count
}

// samples are the samples of metric name whose labels match.
func samples(name string, match map[string]string) []*dto.Metric {
	families, err := metrics.Registry.Gather()
	if err != nil {
		panic(err) // the registry's own collectors do not fail
	}
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := match[l.GetName()]; ok && want != l.GetValue() {
					continue metric
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// RegistrySecret is a registry Secret of workspace ws as fleet_oci_registry writes it.
func RegistrySecret(ws, name, role string, r registrysecret.Registry) *corev1.Secret {
	r.Role = role
	data := map[string][]byte{}
	for k, v := range r.Data() {
		data[k] = []byte(v)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ws, Labels: map[string]string{registrysecret.RoleLabel: role}},
		Type:       registrysecret.Type, Data: data,
	}
}
