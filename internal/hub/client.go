package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Kind names one kind of hub object: its resource for the API and its kind for apply bodies.
type Kind struct {
	schema.GroupVersionResource
	Kind string
}

// APIVersion is the kind's apiVersion as written in manifests.
func (k Kind) APIVersion() string { return k.GroupVersion().String() }

// Client reads and writes hub objects as one field manager. It reads lists through two caches:
//
//   - Live lists are cached per kind, namespace and label selector until the client itself writes
//     that kind, so that a plan over hundreds of resources lists each kind once.
//   - AtStart lists are read once per client and never refreshed: the hub as this process first
//     saw it. Plan-time checks read these, so that Terraform's plan and its apply-time re-plan
//     (a fresh process, in which siblings are written as the walk goes) judge a change against
//     the same hub, whatever order resources are planned and applied in.
type Client struct {
	dyn          dynamic.Interface
	host         string
	fieldManager string
	retryFor     time.Duration // how long one call retries transient errors: the request timeout

	live, atStart *cache
}

// Lister reads cached lists of hub objects and derived views of them: Client.Live or
// Client.AtStart.
type Lister interface {
	List(ctx context.Context, k Kind, namespace, selector string) ([]unstructured.Unstructured, error)
	Memo(key string, build func() (any, error)) (any, error)
}

// cache holds lists and what was derived from them (memos).
type cache struct {
	dyn      dynamic.Interface
	retryFor time.Duration
	mu       sync.Mutex
	lists    map[listKey]*listEntry
	memos    map[string]*memoEntry
}

type listKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	selector  string
}

type listEntry struct {
	once  sync.Once
	items []unstructured.Unstructured
	err   error
}

type memoEntry struct {
	once  sync.Once
	value any
	err   error
}

func newCache(dyn dynamic.Interface, retryFor time.Duration) *cache {
	return &cache{dyn: dyn, retryFor: retryFor, lists: map[listKey]*listEntry{}, memos: map[string]*memoEntry{}}
}

// DefaultRetryFor is how long a call retries transient errors when cfg.Timeout is not set.
const DefaultRetryFor = 30 * time.Second

// NewClient connects to the hub described by cfg; writes are made as fieldManager. Each call
// retries transient errors (see Transient) for up to cfg.Timeout, the provider's
// request_timeout (DefaultRetryFor when unset), or until its context ends.
func NewClient(cfg *rest.Config, fieldManager string) (*Client, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	retryFor := cfg.Timeout
	if retryFor <= 0 {
		retryFor = DefaultRetryFor
	}
	return &Client{dyn: dyn, host: cfg.Host, fieldManager: fieldManager, retryFor: retryFor,
		live: newCache(dyn, retryFor), atStart: newCache(dyn, retryFor)}, nil
}

// FieldManager is the server-side apply field manager of the client's writes.
func (c *Client) FieldManager() string { return c.fieldManager }

// Live reads lists cached until this client writes their kind.
func (c *Client) Live() Lister { return lister{c, c.live} }

// Refresh drops the live lists of kind k (and every memo), so that the next read lists them
// anew: for a reader that waits for someone else's writes, which the client does not see.
func (c *Client) Refresh(k Kind) { c.live.invalidate(k.GroupVersionResource) }

// AtStart reads lists as this client first read them, never refreshed by its own writes.
func (c *Client) AtStart() Lister { return lister{c, c.atStart} }

type lister struct {
	c     *Client
	cache *cache
}

func (l lister) List(ctx context.Context, k Kind, namespace, selector string) ([]unstructured.Unstructured, error) {
	items, err := l.cache.list(ctx, k, namespace, selector)
	return items, l.c.explain(err)
}

func (l lister) Memo(key string, build func() (any, error)) (any, error) {
	return l.cache.memo(key, build)
}

// Get reads one object; a missing object is reported with apierrors.IsNotFound.
func (c *Client) Get(ctx context.Context, k Kind, namespace, name string) (*unstructured.Unstructured, error) {
	var obj *unstructured.Unstructured
	err := retryTransient(ctx, c.retryFor, func() (err error) {
		obj, err = c.dyn.Resource(k.GroupVersionResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if kindNotServed(err) {
		return nil, fmt.Errorf("%w: %s", ErrKindNotServed, k.GroupVersionResource)
	}
	return obj, c.explain(err)
}

// ErrKindNotServed means the hub does not serve a kind at all: its CRD is not installed.
var ErrKindNotServed = errors.New("the hub does not serve this kind (is its CRD installed?)")

// kindNotServed tells a missing kind from a missing object, both NotFound: the API server names
// a missing object in the status details, and a path it does not serve at all in none.
func kindNotServed(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d == nil || d.Name == ""
}

// Apply writes obj with server-side apply, taking ownership of every field it sets: Terraform's
// configuration is the source of truth, and fields it no longer sets are removed.
func (c *Client) Apply(ctx context.Context, k Kind, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj.SetAPIVersion(k.APIVersion())
	obj.SetKind(k.Kind)
	defer c.live.invalidate(k.GroupVersionResource) // after the write: a list made meanwhile is stale
	var out *unstructured.Unstructured
	err := retryTransient(ctx, c.retryFor, func() (err error) {
		out, err = c.dyn.Resource(k.GroupVersionResource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: c.fieldManager, Force: true})
		return err
	})
	return out, c.explain(err)
}

// ApplyOwned applies obj like Apply and then makes the owned top-level fields (e.g. "spec")
// equal obj's: server-side apply removes only fields this manager owned, so fields another
// manager added (kubectl patch, say) would stay. When some did, the object is updated with the
// owned fields replaced, on the latest version (retried on conflict).
func (c *Client) ApplyOwned(ctx context.Context, k Kind, obj *unstructured.Unstructured, owned []string) (*unstructured.Unstructured, error) {
	out, err := c.Apply(ctx, k, obj)
	if err != nil || sameFields(out, obj, owned) {
		return out, err
	}
	defer c.live.invalidate(k.GroupVersionResource)
	ri := c.dyn.Resource(k.GroupVersionResource).Namespace(obj.GetNamespace())
	err = retryTransient(ctx, c.retryFor, func() error {
		latest, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, f := range owned {
			if v, ok := obj.Object[f]; ok {
				latest.Object[f] = runtime.DeepCopyJSONValue(v)
			} else {
				delete(latest.Object, f)
			}
		}
		out, err = ri.Update(ctx, latest, metav1.UpdateOptions{FieldManager: c.fieldManager})
		return err
	})
	return out, c.explain(err)
}

// sameFields reports whether a and b hold equal values in the given top-level fields.
func sameFields(a, b *unstructured.Unstructured, fields []string) bool {
	for _, f := range fields {
		if !equality.Semantic.DeepEqual(a.Object[f], b.Object[f]) {
			return false
		}
	}
	return true
}

// Delete deletes an object and waits until it is gone (its finalizers done). seen, when not nil,
// is called with each version of the object the hub shows while it goes, in order: its
// finalizers and status say what the deletion waits for, and the last one what it left.
// A not-found object is deleted already.
func (c *Client) Delete(ctx context.Context, k Kind, namespace, name string, seen func(*unstructured.Unstructured)) error {
	defer c.live.invalidate(k.GroupVersionResource)
	ri := c.dyn.Resource(k.GroupVersionResource).Namespace(namespace)
	err := retryTransient(ctx, c.retryFor, func() error {
		return ri.Delete(ctx, name, metav1.DeleteOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return c.explain(err)
	}
	if seen == nil {
		seen = func(*unstructured.Unstructured) {}
	}
	failed := func(err error) error {
		if ctx.Err() != nil { // the caller's deadline, not the hub's fault
			err = ctx.Err()
		} else {
			err = c.explain(err)
		}
		return fmt.Errorf("waiting for %s %s/%s to be deleted: %w", k.Kind, namespace, name, err)
	}
	// Each round reads the object, then watches it from that version until it goes, the watch
	// ends (deleteWatchTimeout, or the hub went away) or ctx does.
	for {
		obj, err := ri.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil && Transient(err) && ctx.Err() == nil:
			if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
				return failed(err)
			}
			continue
		case err != nil:
			return failed(err)
		}
		seen(obj)
		timeout := int64(deleteWatchTimeout / time.Second)
		w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: obj.GetResourceVersion(), TimeoutSeconds: &timeout})
		if err != nil {
			if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
				return failed(err)
			}
			continue
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				gone = true
				break
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				seen(u)
			}
			if ev.Type == watch.Error {
				break // e.g. the version is too old: read again
			}
		}
		w.Stop()
		if gone {
			return nil
		}
		if ctx.Err() != nil {
			return failed(ctx.Err())
		}
	}
}

// deleteWatchTimeout bounds one watch of an object being deleted, so that a connection the hub
// dropped without a word is noticed.
const deleteWatchTimeout = 30 * time.Second

// sleepCtx sleeps d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Annotate sets annotations on an object with a JSON merge patch of them only (no field
// manager's apply: the provider's applied configuration keeps its fields). A not-found object is
// left alone.
func (c *Client) Annotate(ctx context.Context, k Kind, namespace, name string, annotations map[string]string) error {
	defer c.live.invalidate(k.GroupVersionResource)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	err = retryTransient(ctx, c.retryFor, func() error {
		_, err := c.dyn.Resource(k.GroupVersionResource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: c.fieldManager})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return c.explain(err)
}

// List reads the live list of a kind in a namespace that matches a label selector ("" for all).
// Callers must not modify the returned objects.
func (c *Client) List(ctx context.Context, k Kind, namespace, selector string) ([]unstructured.Unstructured, error) {
	return c.Live().List(ctx, k, namespace, selector)
}

func (c *cache) list(ctx context.Context, k Kind, namespace, selector string) ([]unstructured.Unstructured, error) {
	key := listKey{k.GroupVersionResource, namespace, selector}
	c.mu.Lock()
	e, ok := c.lists[key]
	if !ok {
		e = &listEntry{}
		c.lists[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.err = retryTransient(ctx, c.retryFor, func() error {
			l, err := c.dyn.Resource(k.GroupVersionResource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err == nil {
				e.items = l.Items
			}
			return err
		})
	})
	if e.err != nil {
		c.mu.Lock()
		if c.lists[key] == e { // do not cache failures
			delete(c.lists, key)
		}
		c.mu.Unlock()
		return nil, e.err
	}
	return e.items, nil
}

// memo returns what build made of the cached lists for key, building it once until the cache is
// next invalidated (or a build fails), so that checks derive a view of the hub once per plan.
// Callers must not modify the value.
func (c *cache) memo(key string, build func() (any, error)) (any, error) {
	c.mu.Lock()
	e, ok := c.memos[key]
	if !ok {
		e = &memoEntry{}
		c.memos[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.value, e.err = build() })
	if e.err != nil {
		c.mu.Lock()
		if c.memos[key] == e {
			delete(c.memos, key)
		}
		c.mu.Unlock()
	}
	return e.value, e.err
}

// invalidate drops the cached lists of a kind and every memo, which may derive from any kind.
func (c *cache) invalidate(gvr schema.GroupVersionResource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.lists {
		if key.gvr == gvr {
			delete(c.lists, key)
		}
	}
	clear(c.memos)
}

// ManagedByTerraform reports whether some Terraform configuration manages obj: it carries the
// managed-by label of a provider's field manager, or such a manager owns fields of it. Such an
// object may be changed or deleted by another resource of the same plan; anything else (made
// with kubectl, say) may not.
func ManagedByTerraform(obj *unstructured.Unstructured, fieldManager string) bool {
	if obj.GetLabels()[ManagedByLabel] == fieldManager {
		return true
	}
	for _, f := range obj.GetManagedFields() {
		if f.Manager == fieldManager {
			return true
		}
	}
	return false
}

// OwnerOf is the owner setting of the configuration that last wrote obj
// (ConfigurationOwnerAnnotation), "" when it had none or no configuration wrote it.
func OwnerOf(obj metav1.Object) string { return obj.GetAnnotations()[ConfigurationOwnerAnnotation] }

// ConfigurationOwnerLabelValue is owner as a label value: itself when it is one, else its
// characters a label value may hold, cut to 54, a dash and 8 hex digits of its hash, so that
// different owners get different labels.
func ConfigurationOwnerLabelValue(owner string) string {
	if len(validation.IsValidLabelValue(owner)) == 0 {
		return owner
	}
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, owner)
	if len(clean) > 54 {
		clean = clean[:54]
	}
	clean = strings.Trim(clean, "-_.")
	sum := fnv.New32a()
	sum.Write([]byte(owner))
	if clean == "" {
		return fmt.Sprintf("%08x", sum.Sum32())
	}
	return fmt.Sprintf("%s-%08x", clean, sum.Sum32())
}

// ErrUnreachable wraps errors that mean the hub could not be reached at all.
var ErrUnreachable = errors.New("hub unreachable")

// explain turns transport failures into ErrUnreachable with the host and a next step; API errors
// pass through unchanged so callers can test them with apierrors.
func (c *Client) explain(err error) error {
	if err == nil || !isUnreachable(err) {
		return err
	}
	return fmt.Errorf("%w at %s: %v (check the hub's address and credentials, and that its API server is running)", ErrUnreachable, c.host, err)
}

func isUnreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &opErr) || (errors.As(err, &netErr) && netErr.Timeout())
}

// retryTransient calls fn until it succeeds, fails with an error that is not Transient, or
// less than retryBase is left before retryFor after the first call or ctx's deadline, the last
// sleep cut short to leave it that. It sleeps between calls with
// exponential back-off and jitter (100 ms doubling up to 4 s, each sleep drawn from half to one
// and a half times that), so that clients that failed together do not retry together. It returns
// fn's last error. Every call it retries is idempotent: server-side apply, an update carrying the
// resourceVersion it read (a lost answer comes back as a conflict, and the caller reads again),
// a delete (a lost answer comes back as NotFound), a read.
func retryTransient(ctx context.Context, retryFor time.Duration, fn func() error) error {
	deadline := time.Now().Add(retryFor)
	delay := retryBase
	for {
		err := fn()
		if err == nil || !Transient(err) || ctx.Err() != nil {
			return err
		}
		end := deadline
		if d, ok := ctx.Deadline(); ok && d.Before(end) {
			end = d
		}
		// The last attempt comes retryBase before the end, so that it can still answer: the
		// caller gets the cause, rather than a deadline that ends the wait.
		left := time.Until(end) - retryBase
		if left <= 0 {
			return err
		}
		sleep := min(delay/2+rand.N(delay), left)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(sleep):
		}
		delay = min(2*delay, retryCap)
	}
}

const (
	retryBase = 100 * time.Millisecond
	retryCap  = 4 * time.Second
)

// Transient reports whether err may go away if the same request is sent again in a moment: the
// hub restarting or overloaded, or the network between dropping a connection. These are a
// connection refused, reset or aborted, a broken pipe, a connection closed mid-answer (EOF, an
// HTTP/2 GOAWAY, lost or force-closed connection), a network timeout, and the API's conflict, 429 (too many
// requests), 500 (internal error, which a proxy's 502 also becomes), 503 (unavailable) and 504 or
// server timeouts, or any answer asking to be retried later (Retry-After). Everything else (a
// refused or invalid request, a missing object, a TLS or credential problem, a cancelled
// context) is not: the same request would fail the same way. (A deadline is a timeout;
// retryTransient stops all the same once the caller's context has ended.)
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if _, ok := apierrors.SuggestsClientDelay(err); ok {
		return true
	}
	switch {
	case apierrors.IsConflict(err),
		apierrors.IsTooManyRequests(err),
		apierrors.IsServerTimeout(err),
		apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err),
		apierrors.IsInternalError(err):
		return true
	case errors.As(err, new(apierrors.APIStatus)):
		return false // an answer from the API server: it meant it
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) || http2ForceClosed(err) ||
		utilnet.IsTimeout(err) || errors.Is(err, context.DeadlineExceeded)
}

// http2ForceClosed is x/net/http2's error for a request whose connection the transport closed
// under it (client-go does so when the connection's health check finds the hub gone).
func http2ForceClosed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "http2: client connection force closed")
}

// Adoptable tells whether current, found on the hub where this client is about to create
// desired, is that create's own object: committed by an earlier attempt whose answer was lost
// (the hub restarted, the connection dropped), so that taking it over changes nothing. It is
// when all of these hold, and the error says which does not:
//
//   - it carries this client's managed-by label, and this client's field manager wrote it;
//   - no other field manager owns any of its fields but its status and finalizers (a controller
//     may add those to what the create left);
//   - applying desired would change nothing in it (a server-side dry run, so that the API
//     server's defaults count as they would).
//
// An object another configuration, field manager or person made, or one whose content differs
// from desired, is not adoptable: creating over it would take over or change something that is
// not this create's.
func (c *Client) Adoptable(ctx context.Context, k Kind, current, desired *unstructured.Unstructured) error {
	if got := current.GetLabels()[ManagedByLabel]; got != c.fieldManager {
		return fmt.Errorf("its %s label is %q, not %q", ManagedByLabel, got, c.fieldManager)
	}
	ours := false
	for _, f := range current.GetManagedFields() {
		if f.Manager == c.fieldManager {
			ours = true
			continue
		}
		if f.Subresource == "status" {
			continue
		}
		if owned := ownedOutsideFinalizers(f.FieldsV1); owned != "" {
			return fmt.Errorf("field manager %q owns its %s", f.Manager, owned)
		}
	}
	if !ours {
		return fmt.Errorf("field manager %q never wrote it", c.fieldManager)
	}
	obj := desired.DeepCopy()
	obj.SetAPIVersion(k.APIVersion())
	obj.SetKind(k.Kind)
	var dry *unstructured.Unstructured
	err := retryTransient(ctx, c.retryFor, func() (err error) {
		dry, err = c.dyn.Resource(k.GroupVersionResource).Namespace(current.GetNamespace()).Apply(ctx, current.GetName(), obj,
			metav1.ApplyOptions{FieldManager: c.fieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
		return err
	})
	if err != nil {
		return fmt.Errorf("a dry run of the create failed: %w", c.explain(err))
	}
	if f := firstDifference(current, dry); f != "" {
		return fmt.Errorf("its %s differs from this configuration's", f)
	}
	return nil
}

// ownedOutsideFinalizers names a field that a managed-fields entry owns, other than
// metadata.finalizers, or "" when it owns none.
func ownedOutsideFinalizers(fields *metav1.FieldsV1) string {
	if fields == nil {
		return ""
	}
	var set map[string]any
	if err := json.Unmarshal(fields.GetRawBytes(), &set); err != nil {
		return "fields (unreadable managed fields)"
	}
	for _, top := range slices.Sorted(maps.Keys(set)) {
		if top != "f:metadata" {
			return strings.TrimPrefix(top, "f:")
		}
		meta, _ := set[top].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(meta)) {
			if k != "f:finalizers" && k != "." {
				return "metadata." + strings.TrimPrefix(k, "f:")
			}
		}
	}
	return ""
}

// firstDifference names a part of a and b, ignoring metadata but for labels and annotations,
// and ignoring status, in which they differ, or "".
func firstDifference(a, b *unstructured.Unstructured) string {
	if !equality.Semantic.DeepEqual(a.GetLabels(), b.GetLabels()) {
		return "labels"
	}
	if !equality.Semantic.DeepEqual(a.GetAnnotations(), b.GetAnnotations()) {
		return "annotations"
	}
	fields := map[string]bool{}
	for f := range a.Object {
		fields[f] = true
	}
	for f := range b.Object {
		fields[f] = true
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if f != "metadata" && f != "status" && !equality.Semantic.DeepEqual(a.Object[f], b.Object[f]) {
			return f
		}
	}
	return ""
}
