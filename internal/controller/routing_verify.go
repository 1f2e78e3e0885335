package controller

import (
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// routeVerify is the verify settings of the route named name, as its chain carries them to
// the clusters; nil when the route verifies nothing.
func routeVerify(routes []v1alpha1.OCIStorageRoute, name string) *puller.Verify {
	for i := range routes {
		if v := routes[i].Spec.Verify; routes[i].Name == name && v != nil {
			return &puller.Verify{Provider: v.Provider, PublicKeys: v.PublicKeys, Certificates: v.Certificates, TrustedIdentities: v.TrustedIdentities}
		}
	}
	return nil
}
