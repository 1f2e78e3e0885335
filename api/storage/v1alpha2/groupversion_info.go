// Package v1alpha2 holds StorageSiteDeployment, the hub-side request for a managed site's
// simplyblock storage cluster. The kind, its fields, defaults and validation rules are those of the
// simplyblock operator's storage.simplyblock.io/v1alpha2 API, so that the provider works unchanged
// against a hub that runs that operator instead of `fleet-controller hub`.
//
// +kubebuilder:object:generate=true
// +groupName=storage.simplyblock.io
package v1alpha2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "storage.simplyblock.io", Version: "v1alpha2"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
