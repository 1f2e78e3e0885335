package provider

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAccDataSourceOCIPullStatus_verifiedFleet runs signature verification through the whole
// fleet: the route of the cluster gets a cosign verify block on the hub, the controller delivers
// it in the chain's ManifestWork, the real work agent applies it, the agent verifies; the
// signed artifact is Pulled and fleet_oci_pull_status names the key, the unsigned one is Failed
// with reason Unverified.
func TestAccDataSourceOCIPullStatus_verifiedFleet(t *testing.T) {
	begin := time.Now()
	fl := startAccFleet(t, []string{"routing", "pull-status"})
	ws, cluster, hc, spoke, logs := fl.ws, fl.cluster, fl.hub, fl.spoke, fl.logs
	signed := fl.registry.PushT(t, "fleet/apps/web", "v1", []byte("the web app, v1, signed"))
	fl.registry.PushT(t, "fleet/apps/web", "unsigned", []byte("the web app, never signed"))
	key := testbed.NewCosignKey(t)
	key.CosignSignT(t, fl.registry, "fleet/apps/web", signed, false)

	var route v1alpha1.OCIStorageRoute
	if err := hc.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: "edge"}, &route); err != nil {
		t.Fatal(err)
	}
	route.Spec.Verify = &v1alpha1.OCIVerify{Provider: "cosign", PublicKeys: []string{key.PublicPEM}}
	if err := hc.Update(t.Context(), &route); err != nil {
		t.Fatal(err)
	}
	w, err := pullwork.New(cluster, "pull-web", ws, pullwork.Request{Name: "web", Spec: v1alpha1.OCIPullSpec{Repository: "apps/web", Tag: "v1"}},
		pullwork.Request{Name: "web-unsigned", Spec: v1alpha1.OCIPullSpec{Repository: "apps/web", Tag: "unsigned"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hc.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	fp := puller.Fingerprint(&key.Private.PublicKey)
	testkit.Eventually(t, 2*time.Minute, "the signed pull verified and the unsigned one Unverified on the hub", func() error {
		var storage v1alpha1.ClusterOCIStorage
		if err := hc.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: cluster}, &storage); err != nil {
			return err
		}
		pulls := storage.Status.Pulls
		i := slices.IndexFunc(pulls, func(p v1alpha1.ClusterPull) bool { return p.Name == "web" })
		j := slices.IndexFunc(pulls, func(p v1alpha1.ClusterPull) bool { return p.Name == "web-unsigned" })
		if i < 0 || j < 0 || pulls[i].Status == nil || pulls[j].Status == nil {
			return fmt.Errorf("pulls %+v", pulls)
		}
		if s := pulls[i].Status; pulls[i].State != "Pulled" || s.Verified != "cosign key "+fp {
			return fmt.Errorf("signed pull %s %+v", pulls[i].State, s)
		}
		if s := pulls[j].Status; pulls[j].State != "Failed" || s.Reason != string(puller.Unverified) {
			return fmt.Errorf("unsigned pull %s %+v", pulls[j].State, s)
		}
		return nil
	}, spoke.AgentLog, logs.String)

	const ds = "data.fleet_oci_pull_status.web"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf("data \"fleet_oci_pull_status\" \"web\" {\n  workspace = %q\n  artifact  = \"apps/web\"\n}\n", ws),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "pulls.#", "2"),
				resource.TestCheckResourceAttr(ds, "pulls.0.artifact", "apps/web:unsigned"),
				resource.TestCheckResourceAttr(ds, "pulls.0.state", "Failed"),
				resource.TestCheckResourceAttr(ds, "pulls.0.reason", "Unverified"),
				resource.TestCheckNoResourceAttr(ds, "pulls.0.verified"),
				resource.TestCheckResourceAttr(ds, "pulls.1.artifact", "apps/web:v1"),
				resource.TestCheckResourceAttr(ds, "pulls.1.state", "Pulled"),
				resource.TestCheckResourceAttr(ds, "pulls.1.digest", signed.Digest.String()),
				resource.TestCheckResourceAttr(ds, "pulls.1.verified", "cosign key "+fp),
			),
		}},
	})
	t.Logf("TestAccDataSourceOCIPullStatus_verifiedFleet: %v in all", time.Since(begin).Round(time.Millisecond))
}
