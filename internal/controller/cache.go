package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// What the cache keeps of an object is what the reconcilers read of it: every object loses its
// managedFields (server-side apply bookkeeping, often the largest part of a small object's
// metadata, which no reconciler reads and an update without them leaves as they are), and a
// ManagedCluster keeps of its status only its conditions (availability, read by the reporting
// checks), not the capacity, allocatable resources, version and cluster claims the klusterlet
// reports, which grow with the cluster and change with every heartbeat of resources
// (slimManagedCluster). A
// ManifestWork keeps its manifests only where a reconciler reads them (slimManifestWork).

// stripManagedFields is the cache's default transform.
var stripManagedFields = cache.TransformStripManagedFields()

// slimManagedCluster drops from a cached ManagedCluster what no reconciler reads: of its status
// all but the availability condition (the klusterlet's other conditions carry messages of their
// own), and the CA bundles of its client configs (kilobytes each; the hub gateway reads only
// their URLs). The one informer of ManagedClusters serves the reconcilers that read only their
// metadata too (managedClusterMetadata), so this is what the cache holds of each cluster.
func slimManagedCluster(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if mc, ok := obj.(*clusterv1.ManagedCluster); ok && err == nil {
		var conditions []metav1.Condition
		if c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); c != nil {
			conditions = []metav1.Condition{*c}
		}
		mc.Status = clusterv1.ManagedClusterStatus{Conditions: conditions}
		for i := range mc.Spec.ManagedClusterClientConfigs {
			mc.Spec.ManagedClusterClientConfigs[i].CABundle = nil
		}
	}
	return obj, err
}

// withTransforms sets the cache's transforms on o.
func withTransforms(o cache.Options) cache.Options {
	o.DefaultTransform = stripManagedFields
	o.ByObject[&clusterv1.ManagedCluster{}] = cache.ByObject{Transform: slimManagedCluster}
	for obj, by := range o.ByObject {
		if _, ok := obj.(*workv1.ManifestWork); ok {
			share, metadata := &sharedWorkSpecs{last: map[string]workSpecParts{}}, newSharedMaps()
			by.Transform = func(obj any) (any, error) {
				obj, err := slimManifestWork(obj)
				if w, ok := obj.(*workv1.ManifestWork); ok && err == nil {
					share.apply(w)
					if !keepsManifests(w) {
						metadata.share(w)
					}
				}
				return obj, err
			}
			o.ByObject[obj] = by
		}
		if _, ok := obj.(*v1alpha1.ClusterOCIStorage); ok {
			metadata := newSharedMaps()
			by.Transform = func(obj any) (any, error) {
				obj, err := stripManagedFields(obj)
				if s, ok := obj.(*v1alpha1.ClusterOCIStorage); ok && err == nil {
					metadata.share(s)
				}
				return obj, err
			}
			o.ByObject[obj] = by
		}
	}
	return o
}

// The works of a workspace carry the same delete option and manifest configs (the chain's
// orphaning rule, the probe's feedback paths: about a kilobyte decoded) to every cluster; the
// cache holds one work per cluster and workspace. sharedWorkSpecs makes the works it sees share
// one copy of each part equal to the one the previous work of their workspace and component
// carried. The cache's objects are read, never written in place (a reader that means to write
// copies first), so a shared part is as good as an own one; a work whose parts differ keeps its
// own, and they become what the next works are compared with.
type sharedWorkSpecs struct {
	mu   sync.Mutex
	last map[string]workSpecParts // by workspace and component: a few per workspace
}

type workSpecParts struct {
	deleteOption *workv1.DeleteOption
	configs      []workv1.ManifestConfigOption
}

func (s *sharedWorkSpecs) apply(w *workv1.ManifestWork) {
	if keepsManifests(w) {
		return // their reconcilers read the cached work whole; leave them as decoded
	}
	key := w.Labels[hub.WorkspaceLabel] + "/" + w.Labels[hub.ComponentLabel]
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.last[key]
	if w.Spec.DeleteOption != nil && last.deleteOption != nil && equality.Semantic.DeepEqual(w.Spec.DeleteOption, last.deleteOption) {
		w.Spec.DeleteOption = last.deleteOption
	}
	if len(w.Spec.ManifestConfigs) > 0 && last.configs != nil && equality.Semantic.DeepEqual(w.Spec.ManifestConfigs, last.configs) {
		w.Spec.ManifestConfigs = last.configs
	}
	s.last[key] = workSpecParts{deleteOption: w.Spec.DeleteOption, configs: w.Spec.ManifestConfigs}
}
