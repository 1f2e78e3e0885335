package sitesim_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/storagerules/storageruletest"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

// TestSiteRules: the simulator's CRDs, served by a real kube-apiserver, refuse exactly the
// requests of storageruletest.Cases that the provider's plan checks refuse (the same table,
// internal/storagerules), with an error naming the field. Each request is a server-side dry run
// of the OperatorOps or ClusterDeploymentConfig that the hub's work would write.
func TestSiteRules(t *testing.T) {
	site := testbed.StartT(t)
	if err := sitesim.Install(t.Context(), site.Config); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(site.Config, client.Options{Scheme: sitesim.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range storageruletest.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha2.GroupVersion.String(),
				"metadata": map[string]any{"name": "rules", "namespace": sitesim.DefaultNamespace}}}
			switch tc.Kind {
			case storageruletest.Discover:
				obj.SetKind("OperatorOps")
				obj.Object["spec"] = map[string]any{"action": "Discover", "discover": tc.Object()}
			case storageruletest.Template:
				obj.SetKind("ClusterDeploymentConfig")
				obj.Object["spec"] = map[string]any{"cluster": tc.Object()}
			}
			err := c.Create(t.Context(), obj, client.DryRunAll)
			provider := storageruletest.Check(tc)
			switch {
			case tc.Refused == "" && err != nil:
				t.Errorf("the site refused it: %v", err)
			case tc.Refused != "" && err == nil:
				t.Errorf("the site accepted it; want refused on %s", tc.Refused)
			case tc.Refused != "" && !strings.Contains(err.Error(), tc.Refused):
				t.Errorf("the site's error does not name %s: %v", tc.Refused, err)
			}
			if (len(provider) > 0) != (err != nil) {
				t.Errorf("the provider's checks (%v) and the site (%v) disagree", provider, err)
			}
		})
	}
}
