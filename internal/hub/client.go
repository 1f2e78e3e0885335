package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
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

// Client reads and writes hub objects as one field manager. Lists are cached per kind, namespace
// and label selector until the client itself writes that kind, so that a plan over hundreds of
// resources lists each kind once.
type Client struct {
	dyn          dynamic.Interface
	host         string
	fieldManager string

	mu    sync.Mutex
	lists map[listKey]*listEntry
	memos map[string]*memoEntry
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

// NewClient connects to the hub described by cfg; writes are made as fieldManager.
func NewClient(cfg *rest.Config, fieldManager string) (*Client, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	return &Client{dyn: dyn, host: cfg.Host, fieldManager: fieldManager, lists: map[listKey]*listEntry{}, memos: map[string]*memoEntry{}}, nil
}

// Get reads one object; a missing object is reported with apierrors.IsNotFound.
func (c *Client) Get(ctx context.Context, k Kind, namespace, name string) (*unstructured.Unstructured, error) {
	var obj *unstructured.Unstructured
	err := retryTransient(ctx, func() (err error) {
		obj, err = c.dyn.Resource(k.GroupVersionResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	return obj, c.explain(err)
}

// Apply writes obj with server-side apply, taking ownership of every field it sets: Terraform's
// configuration is the source of truth, and fields it no longer sets are removed.
func (c *Client) Apply(ctx context.Context, k Kind, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj.SetAPIVersion(k.APIVersion())
	obj.SetKind(k.Kind)
	defer c.invalidate(k.GroupVersionResource) // after the write: a list made meanwhile is stale
	var out *unstructured.Unstructured
	err := retryTransient(ctx, func() (err error) {
		out, err = c.dyn.Resource(k.GroupVersionResource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: c.fieldManager, Force: true})
		return err
	})
	return out, c.explain(err)
}

// Delete removes an object and waits until it is gone (finalizers done); a missing object is not
// an error.
func (c *Client) Delete(ctx context.Context, k Kind, namespace, name string) error {
	defer c.invalidate(k.GroupVersionResource)
	ri := c.dyn.Resource(k.GroupVersionResource).Namespace(namespace)
	err := retryTransient(ctx, func() error {
		return ri.Delete(ctx, name, metav1.DeleteOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return c.explain(err)
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, ignoreTransient(err)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s %s/%s to be deleted: %w", k.Kind, namespace, name, c.explain(err))
	}
	return nil
}

// List returns the objects of a kind in a namespace that match a label selector ("" for all),
// from the cache when this client has listed them before and has not written that kind since.
// Callers must not modify the returned objects.
func (c *Client) List(ctx context.Context, k Kind, namespace, selector string) ([]unstructured.Unstructured, error) {
	key := listKey{k.GroupVersionResource, namespace, selector}
	c.mu.Lock()
	e, ok := c.lists[key]
	if !ok {
		e = &listEntry{}
		c.lists[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.err = retryTransient(ctx, func() error {
			l, err := c.dyn.Resource(k.GroupVersionResource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err == nil {
				e.items = l.Items
			}
			return err
		})
	})
	if e.err != nil {
		c.invalidate(k.GroupVersionResource) // do not cache failures
		return nil, c.explain(e.err)
	}
	return e.items, nil
}

// Memo returns what build made of the cached lists for key, building it once until this client
// next writes (or a build fails), so that checks derive a view of the hub once per plan too.
// Callers must not modify the value.
func (c *Client) Memo(key string, build func() (any, error)) (any, error) {
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
func (c *Client) invalidate(gvr schema.GroupVersionResource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.lists {
		if key.gvr == gvr {
			delete(c.lists, key)
		}
	}
	clear(c.memos)
}

// ErrUnreachable wraps errors that mean the hub could not be reached at all.
var ErrUnreachable = errors.New("hub unreachable")

// explain turns transport failures into ErrUnreachable with the host and a next step; API errors
// pass through unchanged so callers can test them with apierrors.
func (c *Client) explain(err error) error {
	if err == nil || !isUnreachable(err) {
		return err
	}
	return fmt.Errorf("%w at %s: %v (check the provider's host or config_path, and that the API server is running)", ErrUnreachable, c.host, err)
}

func isUnreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &opErr) || (errors.As(err, &netErr) && netErr.Timeout())
}

// retryTransient retries conflicts, throttling, server timeouts and brief network failures with
// exponential back-off for up to about 30 seconds or until ctx ends.
func retryTransient(ctx context.Context, fn func() error) error {
	var last error
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 5 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		last = fn()
		return last == nil, ignoreTransient(last)
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// ignoreTransient returns nil for errors worth retrying and err otherwise.
func ignoreTransient(err error) error {
	switch {
	case err == nil,
		apierrors.IsConflict(err),
		apierrors.IsTooManyRequests(err),
		apierrors.IsServerTimeout(err),
		apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err),
		apierrors.IsInternalError(err):
		return nil
	}
	return err
}
