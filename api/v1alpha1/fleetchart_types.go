package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FleetChartSpec names a Helm chart stored as an OCI artifact in the workspace's registries.
// Exactly one of version and digest names it: a pull by digest never reads the tag.
// +kubebuilder:validation:XValidation:rule="has(self.version) != has(self.digest)",message="give the chart's version (its tag) or its digest, not both"
type FleetChartSpec struct {
	// Repository is the chart's repository path inside the routed registries, e.g.
	// "charts/hello": every cluster pulls it through the registry chain its route gives.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`
	Repository string `json:"repository"`

	// Version is the chart's version, the tag Helm pushed it under (e.g. "0.1.0"; a "+" of
	// semver build metadata is written "_", as `helm push` does in tags).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_][a-zA-Z0-9._-]*$`
	Version string `json:"version,omitempty"`

	// Digest pins the chart's manifest ("sha256:<hex>"), which clusters pull by digest and
	// verify; a chart gives a version or a digest, not both.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Digest string `json:"digest,omitempty"`
}

// FleetChartStatus is written by `fleet-controller hub` (the apps reconciler).
type FleetChartStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Digest is the manifest digest a cluster pulled for this chart, once any did.
	// +optional
	Digest string `json:"digest,omitempty"`

	// Apps counts the FleetApps of the workspace that install this chart.
	// +optional
	Apps int32 `json:"apps,omitempty"`
}

// FleetChart is a Helm chart stored as an OCI artifact, which FleetApps install on clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fchart,categories=fleet
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.status.digest`,priority=1
// +kubebuilder:printcolumn:name="Apps",type=integer,JSONPath=`.status.apps`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FleetChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetChartSpec   `json:"spec"`
	Status FleetChartStatus `json:"status,omitempty"`
}

// FleetChartList is a list of FleetCharts.
//
// +kubebuilder:object:root=true
type FleetChartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetChart `json:"items"`
}
