// Package v1alpha2 holds StorageSiteDeployment, the hub-side request for a managed site's
// simplyblock storage cluster. The kind, its fields, defaults and validation rules are those of the
// simplyblock operator's storage.simplyblock.io/v1alpha2 API, so that the provider works unchanged
// against a hub that runs that operator instead of `fleet-controller hub`.
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
		&StorageSiteDeployment{}, &StorageSiteDeploymentList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
