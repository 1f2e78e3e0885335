// Package v1alpha2 holds the site-side kinds of the simplyblock storage operator that the site
// simulator serves on a workload cluster: OperatorOps (a discovery run), ClusterDeploymentConfig
// (the draft it writes), StorageCluster and StorageNode. Field names and shapes follow the
// operator's documented API, because the hub reads them back through ManifestWork status
// feedback; only the subset the hub uses is modelled. These kinds live on sites, never on the
// hub, hence outside api/.
//
// +kubebuilder:object:generate=true
// +groupName=storage.simplyblock.io
package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "storage.simplyblock.io", Version: "v1alpha2"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers every kind of this package (each with its list kind) under GroupVersion,
// as k8s.io API packages do; a new kind is added here.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ClusterDeploymentConfig{}, &ClusterDeploymentConfigList{},
		&OperatorOps{}, &OperatorOpsList{},
		&StorageCluster{}, &StorageClusterList{},
		&StorageNode{}, &StorageNodeList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
