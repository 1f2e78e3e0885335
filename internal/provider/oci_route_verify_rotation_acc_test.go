package provider

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAccOCIRouteVerify_keyRotation rotates a route's cosign key through the whole fleet (real
// registry, work agent and agent): the route verifies with the old key and v1, signed with it,
// is Pulled verified by it; the new key is added beside the old (an in-place update, not a
// replacement), v2, signed with the new key only, is Pulled verified by the new key while v1
// stays Pulled; the old key is removed (in place again), v2 is pulled again verified by the new
// key, and v1, whose only signature is the old key's, now fails Unverified.
func TestAccOCIRouteVerify_keyRotation(t *testing.T) {
	begin := time.Now()
	fl := startAccFleet(t, []string{"routing", "pull-status"})
	ws, cluster, hc := fl.ws, fl.cluster, fl.hub
	oldKey, newKey := testbed.NewCosignKey(t), testbed.NewCosignKey(t)
	v1 := fl.registry.PushT(t, "fleet/apps/web", "v1", []byte("the web app, v1, signed by the old key"))
	oldKey.CosignSignT(t, fl.registry, "fleet/apps/web", v1, false)
	v2 := fl.registry.PushT(t, "fleet/apps/web", "v2", []byte("the web app, v2, signed by the new key"))
	newKey.CosignSignT(t, fl.registry, "fleet/apps/web", v2, false)
	oldFP, newFP := "cosign key "+puller.Fingerprint(&oldKey.Private.PublicKey), "cosign key "+puller.Fingerprint(&newKey.Private.PublicKey)

	config := func(keys ...string) string {
		var qs string
		for i, k := range keys {
			if i > 0 {
				qs += ", "
			}
			qs += fmt.Sprintf("%q", k)
		}
		// Priority 5 wins the cluster from the fleet's route edge (10).
		return routeConfig(ws, "rotate", fmt.Sprintf("  priority = 5\n  cluster_names = [%q]\n  registries = [\"source\"]\n"+
			"  verify = {\n    provider = \"cosign\"\n    public_keys = [%s]\n  }\n", cluster, qs))
	}
	pull := func(work, name, tag string) {
		w, err := pullwork.New(cluster, work, ws, pullwork.Request{Name: name, Spec: v1alpha1.OCIPullSpec{Repository: "apps/web", Tag: tag}})
		if err != nil {
			t.Fatal(err)
		}
		if err := hc.Create(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
	// expect waits until each named pull of the cluster's ClusterOCIStorage is in its state,
	// Pulled ones verified by the given key, Failed ones Unverified.
	expect := func(want map[string][2]string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			testkit.Eventually(t, 2*time.Minute, fmt.Sprintf("pulls %v", want), func() error {
				var storage v1alpha1.ClusterOCIStorage
				if err := hc.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: cluster}, &storage); err != nil {
					return err
				}
				if storage.Status.Route != "rotate" {
					return fmt.Errorf("the cluster's route is %q", storage.Status.Route)
				}
				for name, w := range want {
					i := slices.IndexFunc(storage.Status.Pulls, func(p v1alpha1.ClusterPull) bool { return p.Name == name })
					if i < 0 || storage.Status.Pulls[i].Status == nil {
						return fmt.Errorf("no status for pull %s: %+v", name, storage.Status.Pulls)
					}
					p := storage.Status.Pulls[i]
					switch {
					case p.State != w[0]:
						return fmt.Errorf("pull %s %s (%s: %s), want %s", name, p.State, p.Status.Reason, p.Status.Message, w[0])
					case w[0] == "Pulled" && p.Status.Verified != w[1]:
						return fmt.Errorf("pull %s verified by %q, want %q", name, p.Status.Verified, w[1])
					case w[0] == "Failed" && p.Status.Reason != string(puller.Unverified):
						return fmt.Errorf("pull %s failed %s, want Unverified", name, p.Status.Reason)
					}
				}
				return nil
			}, fl.spoke.AgentLog, fl.logs.String)
			return nil
		}
	}
	inPlace := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("fleet_oci_route.rotate", plancheck.ResourceActionUpdate)}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: config(oldKey.PublicPEM),
				Check: func(s *terraform.State) error {
					pull("pull-v1", "web-v1", "v1")
					return expect(map[string][2]string{"web-v1": {"Pulled", oldFP}})(s)
				},
			},
			{
				Config: config(oldKey.PublicPEM, newKey.PublicPEM), ConfigPlanChecks: inPlace,
				Check: func(s *terraform.State) error {
					pull("pull-v2", "web-v2", "v2")
					return expect(map[string][2]string{"web-v1": {"Pulled", oldFP}, "web-v2": {"Pulled", newFP}})(s)
				},
			},
			{
				Config: config(newKey.PublicPEM), ConfigPlanChecks: inPlace,
				Check: func(s *terraform.State) error {
					pull("pull-v2-again", "web-v2-again", "v2")
					pull("pull-v1-again", "web-v1-again", "v1")
					return expect(map[string][2]string{"web-v2-again": {"Pulled", newFP}, "web-v1-again": {"Failed", ""}})(s)
				},
			},
		},
	})
	t.Logf("TestAccOCIRouteVerify_keyRotation: %v in all", time.Since(begin).Round(time.Millisecond))
}
