package controller

import (
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The controller's own objects repeat their labels and annotations: every chain work of a
// workspace carries the same three labels, every ClusterOCIStorage the managed-by label, and the
// works of one chain the same digest annotation. A decoded map of a few entries is a few hundred
// bytes, and the cache holds one work and one storage per cluster and workspace. sharedMaps makes
// the cached objects whose labels (or annotations) are equal share one map. Like the works' shared
// spec parts (sharedWorkSpecs), this relies on the cache's objects being read, never written in
// place: a reader that means to write copies first.

// sharedMapsMax bounds the distinct maps kept to share. Digest annotations change with every
// chain a workspace gets, so the kept maps are dropped when there are this many and sharing
// starts over from the objects decoded next (the objects keep the maps they hold): a bound that
// only stopped sharing would, on a long-lived hub, end it for good.
const sharedMapsMax = 4096

// sharedMaps holds one copy of each distinct small map the cache's objects of a kind carry.
type sharedMaps struct {
	mu    sync.Mutex
	byKey map[string]map[string]string
}

func newSharedMaps() *sharedMaps { return &sharedMaps{byKey: map[string]map[string]string{}} }

// share makes obj's labels and annotations the shared copies of equal maps.
func (s *sharedMaps) share(obj metav1.Object) {
	if l := s.intern(obj.GetLabels()); l != nil {
		obj.SetLabels(l)
	}
	if a := s.intern(obj.GetAnnotations()); a != nil {
		obj.SetAnnotations(a)
	}
}

// intern returns the shared map equal to m, m itself when it becomes the one, or nil to leave m
// as it is (empty).
func (s *sharedMaps) intern(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	key := b.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if shared, ok := s.byKey[key]; ok {
		return shared
	}
	if len(s.byKey) >= sharedMapsMax {
		clear(s.byKey)
	}
	s.byKey[key] = m
	return m
}
