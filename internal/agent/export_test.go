package agent

import (
	"context"
	"fmt"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// HelmConfig is a Helm configuration for releases of namespace acting with cfg's identity, as
// an administrator's helm CLI would: the tests install releases "by hand" with it.
func HelmConfig(cfg *rest.Config, namespace string) (*action.Configuration, error) {
	getter, err := newRESTGetter(cfg, namespace)
	if err != nil {
		return nil, err
	}
	c := new(action.Configuration)
	if err := c.Init(getter, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return c, nil
}

// WithLaggingCache makes the release reconciler read each FleetRelease, once after each of its
// status writes, as it was before that write: a cache whose watch has not delivered the write
// yet, every time (it happens in a real agent when the next reconcile starts at once).
func WithLaggingCache(o *Options) {
	o.releaseClient = func(c client.Client) client.Client {
		return &laggingClient{Client: c, before: map[types.NamespacedName]*v1alpha1.FleetRelease{}}
	}
}

type laggingClient struct {
	client.Client
	mu     sync.Mutex
	before map[types.NamespacedName]*v1alpha1.FleetRelease
}

func (l *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if rel, ok := obj.(*v1alpha1.FleetRelease); ok {
		l.mu.Lock()
		old := l.before[key]
		delete(l.before, key)
		l.mu.Unlock()
		if old != nil {
			old.DeepCopyInto(rel)
			return nil
		}
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

func (l *laggingClient) Status() client.SubResourceWriter {
	return laggingStatus{SubResourceWriter: l.Client.Status(), l: l}
}

type laggingStatus struct {
	client.SubResourceWriter
	l *laggingClient
}

func (s laggingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if rel, ok := obj.(*v1alpha1.FleetRelease); ok {
		var old v1alpha1.FleetRelease
		key := client.ObjectKeyFromObject(rel)
		if err := s.l.Client.Get(ctx, key, &old); err == nil {
			s.l.mu.Lock()
			if _, held := s.l.before[key]; !held {
				s.l.before[key] = &old
			}
			s.l.mu.Unlock()
		}
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}
