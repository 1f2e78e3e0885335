package controller

import (
	"context"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// A reconcile's writes reach its cache a little after the apiserver answered them. The next
// reconcile of the workspace, woken by those very writes, would find the cache behind on some of
// them and write them again (a create that fails AlreadyExists, a status written twice): the
// more writes in flight, the more such extras. So a reconcile that wrote waits, briefly, until
// its cache holds what it wrote (awaitCache), and many writes can be in flight at once.

// cacheLag bounds the wait for the cache: past it, the next reconcile compares as before.
const cacheLag = 5 * time.Second

// writeLog is what a reconcile wrote: each object's key and the resourceVersion the apiserver
// gave the write.
type writeLog struct {
	mu   sync.Mutex
	objs []writtenObj
}

type writtenObj struct {
	empty func() client.Object // a new object of its kind, to read the cache into
	key   types.NamespacedName
	rv    string
}

// add records obj as written, with the resourceVersion of the apiserver's answer.
func (w *writeLog) add(obj client.Object) {
	var empty func() client.Object
	switch obj.(type) {
	case *workv1.ManifestWork:
		empty = func() client.Object { return &workv1.ManifestWork{} }
	case *v1alpha1.ClusterOCIStorage:
		empty = func() client.Object { return &v1alpha1.ClusterOCIStorage{} }
	case *v1alpha1.OCIStorageRoute:
		empty = func() client.Object { return &v1alpha1.OCIStorageRoute{} }
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objs = append(w.objs, writtenObj{empty: empty, key: client.ObjectKeyFromObject(obj), rv: obj.GetResourceVersion()})
}

// awaitCache waits until the cache c holds every written object at its written version or a
// later one (or without it, deleted since), or cacheLag has passed, or ctx is done.
func (w *writeLog) awaitCache(ctx context.Context, c client.Reader) {
	pending := w.objs
	deadline := time.Now().Add(cacheLag)
	for len(pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		rest := pending[:0]
		for _, o := range pending {
			obj := o.empty()
			if err := c.Get(ctx, o.key, obj); err == nil && !atLeast(obj.GetResourceVersion(), o.rv) {
				rest = append(rest, o)
			} else if err != nil && client.IgnoreNotFound(err) == nil {
				rest = append(rest, o) // created, not in the cache yet (or deleted since: waits out cacheLag)
			}
		}
		if pending = rest; len(pending) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// atLeast reports whether resourceVersion got is want or later: both are etcd revisions on
// the apiservers this runs against; what does not parse is compared for equality.
func atLeast(got, want string) bool {
	g, gerr := strconv.ParseUint(got, 10, 64)
	wv, werr := strconv.ParseUint(want, 10, 64)
	if gerr != nil || werr != nil {
		return got == want
	}
	return g >= wv
}
