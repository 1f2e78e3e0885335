package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
	"github.com/umkim/terraform-provider-fleet/internal/work"
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

// countStatusWrite counts one status write of resource in the writes metric.
func countStatusWrite(resource string) func() {
	return func() { Writes.WithLabelValues(resource, verbStatus).Inc() }
}

// writer runs a reconcile's writes with bounded concurrency: at most MaxConcurrentWrites in
// flight for all the reconciler's workers together (the semaphore they share), and as many
// goroutines per reconcile.
type writer struct {
	g   errgroup.Group
	sem chan struct{}
}

func (r *RoutingReconciler) writer() *writer {
	n := r.MaxConcurrentWrites
	if n <= 0 {
		n = DefaultMaxConcurrentWrites
	}
	r.semOnce.Do(func() { r.sem = make(chan struct{}, n) })
	w := &writer{sem: r.sem}
	w.g.SetLimit(n)
	return w
}

// send sends one write once one of the slots in flight is free, and counts it.
type send func(resource, verb string, write func(context.Context) error) error

// job runs writes one after another in one goroutine, for a write that depends on an earlier
// one's answer; each holds its slot in flight only while it is sent.
func (w *writer) job(ctx context.Context, run func(send) error) {
	w.g.Go(func() error {
		return run(func(resource, verb string, write func(context.Context) error) error {
			select {
			case w.sem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			defer func() { <-w.sem }()
			Writes.WithLabelValues(resource, verb).Inc()
			return write(ctx)
		})
	})
}

// do runs one write and counts it.
func (w *writer) do(ctx context.Context, resource, verb string, write func(context.Context) error) {
	w.job(ctx, func(send send) error { return send(resource, verb, write) })
}

// wait returns the first error of the writes started.
func (w *writer) wait() error { return w.g.Wait() }

// applyWork creates the work, or updates it when its manifests (by digest: stampDigest),
// manifest configs, labels or annotations differ; it returns the work as it now is on the hub. observed is the work of
// desired's name as the cache has it (no UID when absent); live reads the hub past the cache.
// A desired work over the work budget is not written: the error is a *work.TooLargeError naming
// the largest of parts, which the caller reports as WorkTooLarge (a stall: retrying changes
// nothing).
//
// desired names its owner in hub.OwnerAnnotation, and a work that names another (or none) is
// never written: the answer is a *nameTakenError naming the holder. The update carries observed's
// resourceVersion, so the owner checked is the owner overwritten.
func applyWork(ctx context.Context, c client.Client, live client.Reader, observed, desired *workv1.ManifestWork, parts ...work.Part) (*workv1.ManifestWork, error) {
	stampDigest(desired)
	if err := work.Check(desired, parts...); err != nil {
		return observed, err
	}
	owner := desired.Annotations[hub.OwnerAnnotation]
	if owner == "" {
		return nil, fmt.Errorf("ManifestWork %s/%s names no owner (%s)", desired.Namespace, desired.Name, hub.OwnerAnnotation)
	}
	if err := checkOwner(observed, owner); err != nil {
		return observed, err
	}
	if observed.UID == "" {
		Writes.WithLabelValues(kindWork, verbCreate).Inc()
		err := c.Create(ctx, desired)
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache, which holds only fleet-controller's works, or not there yet.
			var w workv1.ManifestWork
			if gerr := live.Get(ctx, client.ObjectKeyFromObject(desired), &w); gerr != nil {
				return desired, errors.Join(err, gerr)
			}
			if terr := checkOwner(&w, owner); terr != nil {
				return desired, terr
			}
		}
		return desired, err
	}
	annotated := true
	for k, v := range desired.Annotations {
		annotated = annotated && observed.Annotations[k] == v
	}
	if annotated && workUpToDate(observed, desired) { // feedback rules included
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

// deleteWork deletes w, as read, when it is owner's: on the condition that it still is the
// object read (UID and resourceVersion), so that a work meanwhile taken over is not deleted.
// Another's work is left alone: the answer is a *nameTakenError.
func deleteWork(ctx context.Context, c client.Client, w *workv1.ManifestWork, owner string) error {
	if err := checkOwner(w, owner); err != nil {
		return err
	}
	if w.UID == "" || !w.DeletionTimestamp.IsZero() {
		return nil
	}
	Writes.WithLabelValues(kindWork, verbDelete).Inc()
	return client.IgnoreNotFound(c.Delete(ctx, w, client.Preconditions{UID: &w.UID, ResourceVersion: &w.ResourceVersion}))
}

// deleteOwnedWork deletes the work of key (read from the cache) when it is owner's (deleteWork);
// owned says it was there and owner's, so deleted or being deleted. Another's is left alone.
func deleteOwnedWork(ctx context.Context, c client.Client, key types.NamespacedName, owner string) (owned bool, err error) {
	var w workv1.ManifestWork
	if err := c.Get(ctx, key, &w); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	err = deleteWork(ctx, c, &w, owner)
	if _, taken := nameTaken(err); taken {
		return false, nil
	}
	return true, err
}

// nameTakenError says that a work of the name an object needs is another object's: nothing was
// written to it. The object is not Ready, with reason v1alpha1.ReasonNameTaken and this message.
type nameTakenError struct {
	work   types.NamespacedName
	holder string
}

func (e *nameTakenError) Error() string {
	return fmt.Sprintf("ManifestWork %s is held by %s: nothing is written to it; delete that work, or give this object another name", e.work, e.holder)
}

// nameTaken is the *nameTakenError in err's chain, if any.
func nameTaken(err error) (*nameTakenError, bool) {
	var e *nameTakenError
	ok := errors.As(err, &e)
	return e, ok
}

// nameTakenRequeue is how soon an object whose work (or gateway ConfigMap) is another's first
// looks again, then after twice as long each time (kube.Wait): the holder's deletion enqueues the
// holder, not it.
const nameTakenRequeue = time.Minute

// checkOwner is nil when w does not exist (no UID) or is owner's, else a *nameTakenError naming
// its holder. This is the one owner check of the works written for workspace objects.
func checkOwner(w *workv1.ManifestWork, owner string) error {
	if w.UID == "" {
		return nil
	}
	held := workOwner(w)
	if held == owner {
		return nil
	}
	holder := "an object fleet-controller does not know (no " + hub.OwnerAnnotation + " annotation)"
	if held != "" {
		holder = cmp.Or(componentKinds[w.Labels[hub.ComponentLabel]], "object") + " " + held
	}
	return &nameTakenError{work: client.ObjectKeyFromObject(w), holder: holder}
}

// componentKinds names the kind of object a work of each component is written for.
var componentKinds = map[string]string{
	appwork.Component:     "FleetApp",
	RouteComponent:        "FleetAppRoute",
	storagework.Component: "StorageSiteDeployment",
}

// workOwner is the <namespace>/<name> of the object w is written for: its hub.OwnerAnnotation. A
// storage work written before it carried one names its StorageSiteDeployment by labels
// (migration only); any other work without it belongs to no one.
func workOwner(w *workv1.ManifestWork) string {
	if owner, ok := w.Annotations[hub.OwnerAnnotation]; ok {
		return owner
	}
	if l := w.Labels; l[hub.ComponentLabel] == storagework.Component && l[storagework.DeploymentNameLabel] != "" {
		return storagework.Owner(l[storagework.DeploymentNamespaceLabel], l[storagework.DeploymentNameLabel])
	}
	return ""
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
