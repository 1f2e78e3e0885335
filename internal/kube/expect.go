package kube

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A reconcile's writes reach its cache a little after the API server answered them. The next
// reconcile of the same object, woken by those very writes (or by anything else), may read the
// cache before it holds them and act on what it wrote over: create again what it created (an
// AlreadyExists), write a status twice, or run Helm again on a release it just deployed.
//
// Expectations answer that once for every reconciler, in the spirit of the ReplicaSet
// controller's: a reconcile records what it wrote (Wrote, Deleted), under the key of its
// reconcile; the next reconcile of that key asks first whether its cache holds all of it
// (Behind). While it does not, the reconcile writes nothing and returns the *Waiting Behind gives
// (reason ReasonCacheBehind): no worker blocks, nothing is read from the API server. The watch
// event of the write wakes the key again when it arrives, and where no watch passes it (a status
// write a predicate filters) the wait's short requeue looks again. An expectation the cache has
// met is dropped; one it has not met after ExpectationTTL is dropped too, and the reconcile
// compares as it would without it (a write whose object was deleted and created again by another
// meanwhile, say), so that nothing waits forever.

// ReasonCacheBehind is the reason of the wait of a reconcile whose cache does not hold its own
// last writes yet.
const ReasonCacheBehind = "CacheBehind"

// Bounds of the expectations: how long one is kept unmet, and how soon a reconcile behind its
// cache looks again (then twice as long each time in a row, Outcome), should no watch event
// wake it first.
const (
	ExpectationTTL   = 30 * time.Second
	CacheBehindRetry = 50 * time.Millisecond
)

// ObjectRef names a written object: its Go type (the kind, typed objects read from a cache
// carrying no TypeMeta) and its namespaced name.
type ObjectRef struct {
	Type reflect.Type
	types.NamespacedName
}

// RefOf is obj's ObjectRef.
func RefOf(obj client.Object) ObjectRef {
	return ObjectRef{Type: reflect.TypeOf(obj), NamespacedName: client.ObjectKeyFromObject(obj)}
}

func (r ObjectRef) String() string {
	name := r.Type.String()
	if r.Type.Kind() == reflect.Pointer {
		name = r.Type.Elem().Name()
	}
	if r.Namespace == "" {
		return name + " " + r.Name
	}
	return name + " " + r.Namespace + "/" + r.Name
}

// expectation is one write: the resourceVersion the API server answered (an update or a create),
// or the UID of the object deleted.
type expectation struct {
	rv      string
	deleted types.UID
	at      time.Time
}

// Expectations are the writes of a reconciler's reconciles not yet seen in its cache, by the key
// of the reconcile that made them (a workspace, a release). Safe for concurrent use; the zero
// value is ready.
type Expectations[K comparable] struct {
	mu    sync.Mutex
	byKey map[K]map[ObjectRef]expectation
	// now is the clock (tests set it); nil means time.Now.
	now func() time.Time
}

func (e *Expectations[K]) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

func (e *Expectations[K]) set(k K, ref ObjectRef, x expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byKey == nil {
		e.byKey = map[K]map[ObjectRef]expectation{}
	}
	m := e.byKey[k]
	if m == nil {
		m = map[ObjectRef]expectation{}
		e.byKey[k] = m
	}
	if old, ok := m[ref]; ok && x.deleted == "" && old.deleted == "" && atLeast(old.rv, x.rv) {
		return // an older answer arriving late changes nothing
	}
	m[ref] = x
}

// Wrote records that the reconcile of k wrote obj (created, updated, its status or a patch): obj
// as the API server answered, with the resourceVersion of the write. An object without one
// (a write that failed) is not recorded.
func (e *Expectations[K]) Wrote(k K, obj client.Object) {
	if obj.GetResourceVersion() == "" {
		return
	}
	e.set(k, RefOf(obj), expectation{rv: obj.GetResourceVersion(), at: e.clock()})
}

// Deleted records that the reconcile of k deleted obj, as it read it (its UID): the cache is
// behind while it still holds that object, not marked deleted (finalizers keep it a while).
func (e *Expectations[K]) Deleted(k K, obj client.Object) {
	if obj.GetUID() == "" {
		return
	}
	e.set(k, RefOf(obj), expectation{deleted: obj.GetUID(), at: e.clock()})
}

// Forget drops k's expectations (the object of the reconcile is gone).
func (e *Expectations[K]) Forget(k K) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, k)
}

// Pending is how many of k's expectations are kept (met ones are dropped only by Behind).
func (e *Expectations[K]) Pending(k K) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.byKey[k])
}

// Lookup reads the object ref names as the reconcile sees it: nil when it does not hold it.
type Lookup func(ObjectRef) (client.Object, error)

// Behind is nil when the reconcile of k sees every write recorded for k (lookup), dropping the
// expectations met and those older than ExpectationTTL; else a *Waiting with ReasonCacheBehind
// naming the first object behind, and the reconcile writes nothing. It walks k's expectations in
// place and stops at the first object behind, so a reconcile that looks early costs one lookup
// and no copy of what it wrote (a workspace's reconcile writes one work and one storage per
// cluster: tens of thousands of expectations). A failed lookup is returned as is. lookup runs
// under the expectations' lock: it must only read (a cache).
func (e *Expectations[K]) Behind(k K, lookup Lookup) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.byKey[k]
	now := e.clock()
	for ref, x := range m {
		if now.Sub(x.at) <= ExpectationTTL {
			obj, err := lookup(ref)
			if err != nil {
				return err
			}
			if why := behind(obj, x); why != "" {
				return Wait(CacheBehindRetry, ReasonCacheBehind, fmt.Errorf("the cache does not hold this controller's last write of %s yet (%s): looking again when it does", ref, why))
			}
		}
		delete(m, ref) // met, or expired
	}
	if m != nil && len(m) == 0 {
		delete(e.byKey, k)
	}
	return nil
}

// behind says how obj, as the reconcile sees it (nil: absent), falls short of expectation x; ""
// when it does not.
func behind(obj client.Object, x expectation) string {
	switch {
	case x.deleted != "":
		if obj != nil && obj.GetUID() == x.deleted && obj.GetDeletionTimestamp() == nil {
			return "deleted, still there"
		}
	case obj == nil:
		return "written at resourceVersion " + x.rv + ", not there"
	case !atLeast(obj.GetResourceVersion(), x.rv):
		return "written at resourceVersion " + x.rv + ", seen at " + obj.GetResourceVersion()
	}
	return ""
}

// FromCache is the Lookup of a reconcile that reads c (its manager's cache): a Get into a new
// object of the ref's type, nil when not found. The object shares its parts with the cache's
// (no deep copy: Behind reads only its metadata).
func FromCache(ctx context.Context, c client.Reader) Lookup {
	return func(ref ObjectRef) (client.Object, error) {
		obj, ok := reflect.New(ref.Type.Elem()).Interface().(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", ref.Type)
		}
		if err := c.Get(ctx, ref.NamespacedName, obj, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		return obj, nil
	}
}

// Read is the Lookup of a reconcile that already read its objects: they, and nothing else.
func Read(objs ...client.Object) Lookup {
	return func(ref ObjectRef) (client.Object, error) {
		for _, o := range objs {
			if RefOf(o) == ref {
				return o, nil
			}
		}
		return nil, nil
	}
}

// atLeast reports whether resourceVersion got is want or later. Both are etcd revisions on the
// API servers this runs against (Kubernetes documents them as opaque, and compares them only for
// equality); what does not parse is compared for equality.
func atLeast(got, want string) bool {
	g, gerr := strconv.ParseUint(got, 10, 64)
	w, werr := strconv.ParseUint(want, 10, 64)
	if gerr != nil || werr != nil {
		return got == want
	}
	return g >= w
}
