package controller

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/work"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// What a write is, for the writes metric.
const (
	kindWork        = "manifestwork"
	kindStorage     = "clusterocistorage"
	kindRoute       = "ocistorageroute"
	kindStorageSite = "storagesitedeployment"

	verbCreate = "create"
	verbUpdate = "update"
	verbStatus = "status"
	verbDelete = "delete"
)

// Writes counts every write the reconcilers send to the hub, by resource and verb. Steady state
// leaves it unchanged; tests and the benchmark read it.
var Writes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fleet_hub_writes_total",
	Help: "Writes fleet-controller sent to the hub, by resource and verb.",
}, []string{"resource", "verb"})

func init() { metrics.Registry.MustRegister(Writes) }

// writeStatus sets obj's status, current, to desired and writes it, unless it is so already:
// compare before writing, and count the write.
func writeStatus[S any](ctx context.Context, c client.Client, obj client.Object, current, desired *S, resource string) error {
	if equality.Semantic.DeepEqual(current, desired) {
		return nil
	}
	*current = *desired
	Writes.WithLabelValues(resource, verbStatus).Inc()
	return c.Status().Update(ctx, obj)
}

// writer runs a reconcile's writes with bounded concurrency.
type writer struct{ g errgroup.Group }

func (r *RoutingReconciler) writer() *writer {
	w := &writer{}
	n := r.MaxConcurrentWrites
	if n <= 0 {
		n = 16
	}
	w.g.SetLimit(n)
	return w
}

// do runs one write and counts it.
func (w *writer) do(ctx context.Context, resource, verb string, write func(context.Context) error) {
	w.g.Go(func() error {
		Writes.WithLabelValues(resource, verb).Inc()
		return write(ctx)
	})
}

// wait returns the first error of the writes started.
func (w *writer) wait() error { return w.g.Wait() }

// applyWork creates the work, or updates it when its manifests, manifest configs, labels or
// annotations differ; it returns the work as it now is on the hub. A desired work over the work
// budget is not written: the error is a *work.TooLargeError naming the largest of parts, which
// the caller reports as WorkTooLarge (a stall: retrying changes nothing).
func applyWork(ctx context.Context, c client.Client, observed, desired *workv1.ManifestWork, parts ...work.Part) (*workv1.ManifestWork, error) {
	if err := work.Check(desired, parts...); err != nil {
		return observed, err
	}
	if observed.UID == "" {
		Writes.WithLabelValues(kindWork, verbCreate).Inc()
		return desired, c.Create(ctx, desired)
	}
	annotated := true
	for k, v := range desired.Annotations {
		annotated = annotated && observed.Annotations[k] == v
	}
	if annotated && workUpToDate(observed, desired) && equality.Semantic.DeepEqual(observed.Spec.ManifestConfigs, desired.Spec.ManifestConfigs) {
		return observed, nil
	}
	upd := observed.DeepCopy()
	for k, v := range desired.Labels {
		metav1.SetMetaDataLabel(&upd.ObjectMeta, k, v)
	}
	for k, v := range desired.Annotations {
		metav1.SetMetaDataAnnotation(&upd.ObjectMeta, k, v)
	}
	upd.Spec = desired.Spec
	Writes.WithLabelValues(kindWork, verbUpdate).Inc()
	return upd, c.Update(ctx, upd)
}

// tooLarge returns err as a *work.TooLargeError, or nil when it is not one.
func tooLarge(err error) *work.TooLargeError {
	var tl *work.TooLargeError
	if errors.As(err, &tl) {
		return tl
	}
	return nil
}

// patchFinalizers adds or removes finalizer with a merge patch of metadata.finalizers only
// (manager.PatchFinalizers), counting the write.
func patchFinalizers(ctx context.Context, c client.Client, obj client.Object, resource, finalizer string, change func(client.Object, string) bool) error {
	Writes.WithLabelValues(resource, verbPatch).Inc()
	return manager.PatchFinalizers(ctx, c, obj, finalizer, change)
}
