package v1alpha1

// OCIVerify makes the clusters of a route verify the signature of every artifact they pull,
// at every registry of the chain, before any of its content is fetched. A registry that has
// the artifact without a trusted signature fails as Unverified and the agent moves on to the
// next registry, as for an integrity mismatch.
//
// It is on the route, not on a registry: the signature is the publisher's and the same for
// every copy of the artifact, and a mirror that lacks it is exactly what failover must skip.
//
// +kubebuilder:validation:XValidation:rule="self.provider != 'cosign' || (has(self.publicKeys) && size(self.publicKeys) > 0 && !has(self.certificates) && !has(self.trustedIdentities))",message="cosign verification takes publicKeys (and neither certificates nor trustedIdentities)"
// +kubebuilder:validation:XValidation:rule="self.provider != 'notation' || (has(self.certificates) && size(self.certificates) > 0 && !has(self.publicKeys))",message="notation verification takes certificates (and trustedIdentities), not publicKeys"
type OCIVerify struct {
	// Provider is the signature format: cosign (key-based signatures, found as OCI 1.1
	// referrers or under the sha256-<digest>.sig tag) or notation (notation signatures, found as
	// referrers).
	// +kubebuilder:validation:Enum=cosign;notation
	Provider string `json:"provider"`

	// PublicKeys are cosign's public keys, PEM, at most 16; a signature by any of them is
	// enough.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=16384
	PublicKeys []string `json:"publicKeys,omitempty"`

	// Certificates are notation's trust store: root CA certificates, PEM, at most 16; a
	// signature's certificate chain must lead to one of them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=65536
	Certificates []string `json:"certificates,omitempty"`

	// TrustedIdentities are the notation trust policy's trustedIdentities, such as
	// "x509.subject: C=US,ST=WA,O=Example,CN=release", at most 16; empty trusts any signer the
	// certificates vouch for.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	TrustedIdentities []string `json:"trustedIdentities,omitempty"`
}
