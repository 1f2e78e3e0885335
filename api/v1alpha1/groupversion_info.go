// Package v1alpha1 holds the hub API of terraform-provider-fleet: the kinds the provider writes on
// the hub. A hub mode of the fleet-controller that reconciles them is planned.
//
// +kubebuilder:object:generate=true
// +groupName=fleet.umkim.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "fleet.umkim.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
