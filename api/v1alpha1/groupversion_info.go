// Package v1alpha1 holds the hub API of terraform-provider-fleet: the kinds the provider writes on
// the hub, and the status-only kinds `fleet-controller hub` writes about them.
//
// +kubebuilder:object:generate=true
// +groupName=fleet.umkim.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "fleet.umkim.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers every kind of this package (each with its list kind) under GroupVersion,
// as k8s.io API packages do; a new kind is added here.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ClusterOCIStorage{}, &ClusterOCIStorageList{},
		&FleetApp{}, &FleetAppList{},
		&FleetAppRoute{}, &FleetAppRouteList{},
		&FleetChart{}, &FleetChartList{},
		&FleetClusterJoin{}, &FleetClusterJoinList{},
		&FleetRelease{}, &FleetReleaseList{},
		&FleetSite{}, &FleetSiteList{},
		&OCIPull{}, &OCIPullList{},
		&OCIReplication{}, &OCIReplicationList{},
		&OCIStorageRoute{}, &OCIStorageRouteList{},
		&RegistryProbe{}, &RegistryProbeList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
