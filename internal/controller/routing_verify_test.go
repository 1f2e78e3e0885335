package controller_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestRoutingDeliversVerify: a route's verify block travels in the chain the controller
// delivers to each cluster the route wins, and to no other; removing it removes it from their
// chains. The CRD refuses a block that mixes the providers' fields.
func TestRoutingDeliversVerify(t *testing.T) {
	const ws = "verify-ws"
	h, c, v := seededWorkspace(t, ws)
	runManager(t, h)
	v.converged()
	key := testbed.NewCosignKey(t)

	eu := v.route("eu")
	eu.Spec.Verify = &v1alpha1.OCIVerify{Provider: "cosign", PublicKeys: []string{key.PublicPEM}, Certificates: []string{"x"}}
	if err := c.Update(t.Context(), eu); err == nil || !strings.Contains(err.Error(), "cosign verification takes publicKeys") {
		t.Fatalf("update with certificates on a cosign block: %v, want the CRD's refusal", err)
	}
	eu = v.route("eu")
	eu.Spec.Verify = &v1alpha1.OCIVerify{Provider: "cosign", PublicKeys: []string{key.PublicPEM}}
	if err := c.Update(t.Context(), eu); err != nil {
		t.Fatal(err)
	}
	want := &puller.Verify{Provider: "cosign", PublicKeys: []string{key.PublicPEM}}
	chainVerify := func(cluster string, want *puller.Verify) {
		t.Helper()
		testkit.Eventually(t, converge, "the chain of "+cluster, func() error {
			w, err := v.work(cluster)
			if err != nil {
				return err
			}
			if got := v.chain(w).Verify; !reflect.DeepEqual(got, want) {
				return fmt.Errorf("verify %+v, want %+v", got, want)
			}
			return nil
		})
	}
	for _, cl := range seedRoutes["eu"] {
		chainVerify(cl, want)
	}
	for _, cl := range seedRoutes["fallback"] {
		chainVerify(cl, nil)
	}

	eu = v.route("eu")
	eu.Spec.Verify = nil
	if err := c.Update(t.Context(), eu); err != nil {
		t.Fatal(err)
	}
	chainVerify("eu-01", nil)
}
