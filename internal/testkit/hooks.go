package testkit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CompleteHooks marks the hook Pod ns/name Succeeded whenever it exists and the returned switch
// is on, as a kubelet would once the hook ran, until the test ends.
func CompleteHooks(t *testing.T, c client.Client, ns, name string) *atomic.Bool {
	on := new(atomic.Bool)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			var pod corev1.Pod
			if !on.Load() || c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod) != nil || pod.Status.Phase == corev1.PodSucceeded {
				continue
			}
			pod.Status.Phase = corev1.PodSucceeded
			if err := c.Status().Update(ctx, &pod); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				t.Errorf("marking the hook Pod %s/%s Succeeded: %v", ns, name, err)
			}
		}
	}()
	return on
}
