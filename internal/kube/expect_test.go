package kube

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func cm(ns, name, rv string, uid types.UID) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, UID: uid}}
}

// cacheOf is a Lookup over a map standing for a cache: what it holds, by ref.
func cacheOf(objs map[ObjectRef]client.Object, looked *int) Lookup {
	return func(ref ObjectRef) (client.Object, error) {
		*looked++
		return objs[ref], nil
	}
}

// A reconcile behind its own writes waits (ReasonCacheBehind, a short first delay, naming the
// object and both versions) until the cache holds each of them at the written resourceVersion
// or later; a deletion is met once the object read is gone (or another object of the name).
func TestExpectationsBehindUntilTheCacheHoldsTheWrites(t *testing.T) {
	var e Expectations[string]
	a, b, gone := cm("ws", "a", "10", "ua"), cm("ws", "b", "12", "ub"), cm("ws", "gone", "3", "ug")
	e.Wrote("ws", a)
	e.Wrote("ws", b)
	e.Deleted("ws", gone)
	e.Wrote("ws", cm("ws", "failed", "", "")) // a write that failed: nothing to wait for
	if n := e.Pending("ws"); n != 3 {
		t.Fatalf("%d expectations, want 3", n)
	}
	cache := map[ObjectRef]client.Object{
		RefOf(a):    cm("ws", "a", "9", "ua"), // the update not there yet
		RefOf(gone): gone,                     // the deletion not there yet
	}
	var looked int
	err := e.Behind("ws", cacheOf(cache, &looked))
	var w *Waiting
	if !errors.As(err, &w) || w.Reason != ReasonCacheBehind || w.After != CacheBehindRetry || KindOf(err) != Waits {
		t.Fatalf("behind the cache: %v, want a %s wait after %s", err, ReasonCacheBehind, CacheBehindRetry)
	}
	if looked > 3 {
		t.Errorf("%d lookups for 3 expectations", looked)
	}
	// Behind stops at the first object behind, in no set order: the message names it and says how.
	why := map[string]string{
		"ConfigMap ws/a ":    "(written at resourceVersion 10, seen at 9)",
		"ConfigMap ws/b ":    "(written at resourceVersion 12, not there)",
		"ConfigMap ws/gone ": "(deleted, still there)",
	}
	named := 0
	for ref, how := range why {
		if strings.Contains(err.Error(), ref) && strings.Contains(err.Error(), how) {
			named++
		}
	}
	if named != 1 {
		t.Errorf("message %q names %d of the objects behind with how, want one of %v", err.Error(), named, why)
	}
	if errors.Is(e.Behind("other", cacheOf(cache, &looked)), err) || e.Behind("other", cacheOf(cache, &looked)) != nil {
		t.Error("another key's reconcile waits for this key's writes")
	}

	// The cache catches up one object at a time: still behind until the last.
	cache[RefOf(a)] = cm("ws", "a", "10", "ua")
	if e.Behind("ws", cacheOf(cache, &looked)) == nil {
		t.Fatal("b is not in the cache and gone still is: not behind")
	}
	cache[RefOf(b)] = cm("ws", "b", "15", "ub") // later than written: met
	if e.Behind("ws", cacheOf(cache, &looked)) == nil {
		t.Fatal("gone is still in the cache: not behind")
	}
	cache[RefOf(gone)] = cm("ws", "gone", "20", "another") // deleted, and created again by another
	if err := e.Behind("ws", cacheOf(cache, &looked)); err != nil {
		t.Fatalf("the cache holds every write: %v", err)
	}
	held := cm("ws", "held", "30", "uh") // deleted, kept a while by a finalizer
	e.Deleted("ws", held)
	cache[RefOf(held)] = held
	if e.Behind("ws", cacheOf(cache, &looked)) == nil {
		t.Fatal("the cache holds the deleted object unmarked: not behind")
	}
	marked := held.DeepCopy()
	marked.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	cache[RefOf(held)] = marked
	if err := e.Behind("ws", cacheOf(cache, &looked)); err != nil {
		t.Fatalf("the cache holds the deleted object marked deleted: %v", err)
	}
	if n := e.Pending("ws"); n != 0 {
		t.Errorf("%d expectations kept once met, want 0", n)
	}
	looked = 0
	if err := e.Behind("ws", cacheOf(cache, &looked)); err != nil || looked != 0 {
		t.Errorf("nothing expected: %v after %d lookups, want nil after 0", err, looked)
	}
}

// Met expectations are dropped as the reconcile looks, so that a reconcile that looks again
// looks only at what is still behind; an older answer recorded late does not lower what is
// expected; a later write raises it.
func TestExpectationsLookOnlyAtWhatIsBehind(t *testing.T) {
	var e Expectations[string]
	for i, name := range []string{"a", "b", "c", "d"} {
		e.Wrote("ws", cm("ws", name, "10", types.UID(rune('a'+i))))
	}
	cache := map[ObjectRef]client.Object{}
	for _, name := range []string{"a", "b", "c"} {
		cache[RefOf(cm("ws", name, "", ""))] = cm("ws", name, "10", "")
	}
	var looked int
	if e.Behind("ws", cacheOf(cache, &looked)) == nil {
		t.Fatal("d is not in the cache: not behind")
	}
	if n := e.Pending("ws"); n < 1 || n > 4 {
		t.Fatalf("%d pending", n)
	}
	looked = 0
	for e.Behind("ws", cacheOf(cache, &looked)) != nil && looked < 10 {
	}
	if looked > 10 || e.Pending("ws") != 1 {
		t.Fatalf("after %d lookups %d pending, want only d", looked, e.Pending("ws"))
	}
	e.Wrote("ws", cm("ws", "d", "8", "d")) // an older answer, late
	cache[RefOf(cm("ws", "d", "", ""))] = cm("ws", "d", "9", "d")
	if e.Behind("ws", cacheOf(cache, &looked)) == nil {
		t.Error("d written at 10, seen at 9: not behind")
	}
	e.Wrote("ws", cm("ws", "d", "12", "d"))
	cache[RefOf(cm("ws", "d", "", ""))] = cm("ws", "d", "11", "d")
	if e.Behind("ws", cacheOf(cache, &looked)) == nil {
		t.Error("d written again at 12, seen at 11: not behind")
	}
	e.Forget("ws")
	if err := e.Behind("ws", cacheOf(cache, &looked)); err != nil {
		t.Errorf("after Forget: %v", err)
	}
}

// An expectation the cache has not met after ExpectationTTL is dropped: the reconcile goes on
// (the object was deleted by another since, say) rather than wait forever.
func TestExpectationsExpire(t *testing.T) {
	now := time.Unix(1000, 0)
	e := Expectations[string]{now: func() time.Time { return now }}
	e.Wrote("ws", cm("ws", "a", "10", "ua"))
	var looked int
	empty := cacheOf(map[ObjectRef]client.Object{}, &looked)
	if e.Behind("ws", empty) == nil {
		t.Fatal("a is not in the cache: not behind")
	}
	now = now.Add(ExpectationTTL - time.Second)
	if e.Behind("ws", empty) == nil {
		t.Fatal("before the TTL: not behind")
	}
	now = now.Add(2 * time.Second)
	if err := e.Behind("ws", empty); err != nil || e.Pending("ws") != 0 {
		t.Errorf("after the TTL: %v, %d pending; want nil, 0", err, e.Pending("ws"))
	}
}

// The lookups: FromCache reads a reader (absent: nil, another error returned), Read only the
// objects the reconcile read.
func TestExpectationLookups(t *testing.T) {
	held := cm("ws", "a", "", "")
	c := fake.NewClientBuilder().WithObjects(held).Build()
	var got corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(held), &got); err != nil {
		t.Fatal(err)
	}
	var e Expectations[string]
	e.Wrote("ws", &got)
	if err := e.Behind("ws", FromCache(t.Context(), c)); err != nil {
		t.Errorf("the reader holds the write: %v", err)
	}
	got.ResourceVersion = "99999"
	e.Wrote("ws", &got)
	if e.Behind("ws", FromCache(t.Context(), c)) == nil {
		t.Error("the reader holds an older version: not behind")
	}
	e.Wrote("ws", cm("ws", "absent", "5", "u"))
	stale := got.DeepCopy()
	stale.ResourceVersion = "1"
	if e.Behind("ws", Read(stale)) == nil {
		t.Error("the object read is older than written: not behind")
	}
	if obj, _ := Read(stale)(RefOf(cm("ws", "absent", "", ""))); obj != nil {
		t.Error("Read finds an object it was not given")
	}
	if obj, _ := Read(stale)(RefOf(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "a"}})); obj != nil {
		t.Error("Read confuses two kinds of one name")
	}
}

// resourceVersions compare as etcd revisions, not as strings.
func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		got, want string
		ok        bool
	}{{"10", "9", true}, {"9", "10", false}, {"10", "10", true}, {"", "10", false}, {"x", "x", true}, {"x", "y", false}} {
		if atLeast(c.got, c.want) != c.ok {
			t.Errorf("atLeast(%q, %q) = %v", c.got, c.want, !c.ok)
		}
	}
}

// A reconcile that looks while its cache is behind costs one lookup, not a copy of everything it
// wrote: a workspace's reconcile records a work and a storage per cluster, and it looks again at
// every watch event until the cache catches up. 20,000 expectations, none met yet, looked at 100
// times: what each look allocates does not grow with them (copying the expectations to walk them
// allocated about 2 MB a look).
func TestExpectationsBehindCopiesNothing(t *testing.T) {
	var e Expectations[string]
	for i := range 20000 {
		e.Wrote("ws", cm("ws", strconv.Itoa(i), "10", types.UID(strconv.Itoa(i))))
	}
	var looked int
	lookup := cacheOf(map[ObjectRef]client.Object{}, &looked)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 100 {
		if e.Behind("ws", lookup) == nil {
			t.Fatal("nothing is in the cache: behind")
		}
	}
	runtime.ReadMemStats(&after)
	perLook := (after.TotalAlloc - before.TotalAlloc) / 100
	t.Logf("%d bytes allocated per look at 20,000 expectations, %d lookups in 100 looks", perLook, looked)
	if perLook > 4096 {
		t.Errorf("a look at 20,000 expectations allocated %d bytes, want at most 4 KiB: it copies what it walks", perLook)
	}
	if looked != 100 || e.Pending("ws") != 20000 {
		t.Errorf("%d lookups, %d pending; want 100 (one per look) and all 20,000", looked, e.Pending("ws"))
	}
}
