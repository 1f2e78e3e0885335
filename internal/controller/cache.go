package controller

import (
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// What the cache keeps of an object is what the reconcilers read of it: every object loses its
// managedFields (server-side apply bookkeeping, often the largest part of a small object's
// metadata, which no reconciler reads and an update without them leaves as they are), and a
// ManagedCluster keeps of its status only its conditions (availability, read by the reporting
// checks), not the capacity, allocatable resources, version and cluster claims the klusterlet
// reports, which grow with the cluster and change with every heartbeat of resources. A
// ManifestWork keeps its manifests only where a reconciler reads them (slimManifestWork).

// stripManagedFields is the cache's default transform.
var stripManagedFields = cache.TransformStripManagedFields()

// slimManagedCluster drops from a cached ManagedCluster what no reconciler reads.
func slimManagedCluster(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if mc, ok := obj.(*clusterv1.ManagedCluster); ok && err == nil {
		mc.Status = clusterv1.ManagedClusterStatus{Conditions: mc.Status.Conditions}
	}
	return obj, err
}

// withTransforms sets the cache's transforms on o.
func withTransforms(o cache.Options) cache.Options {
	o.DefaultTransform = stripManagedFields
	o.ByObject[&clusterv1.ManagedCluster{}] = cache.ByObject{Transform: slimManagedCluster}
	for obj, by := range o.ByObject {
		if _, ok := obj.(*workv1.ManifestWork); ok {
			by.Transform = slimManifestWork
			o.ByObject[obj] = by
		}
	}
	return o
}
