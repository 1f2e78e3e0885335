package manager

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchFinalizers applies change (controllerutil.AddFinalizer or RemoveFinalizer) with finalizer
// to obj and writes it as a merge patch of metadata.finalizers only, guarded by obj's
// resourceVersion: an update would write the whole object back as this binary's types render
// it, fields its author left out or that another writer owns included.
func PatchFinalizers(ctx context.Context, c client.Client, obj client.Object, finalizer string, change func(client.Object, string) bool) error {
	base := obj.DeepCopyObject().(client.Object)
	change(obj, finalizer)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}
