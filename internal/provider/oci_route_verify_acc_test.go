package provider

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestAccOCIRouteVerify: a route's verify block is checked at plan time — a key that does not
// parse, a private key, a certificate that is no CA, the other provider's fields — with an
// error naming the field and nothing written to the hub; a valid block warns which clusters
// will verify, is written to the route as the chain's verify, and removing it warns too.
func TestAccOCIRouteVerify(t *testing.T) {
	w := newCLIWorkdir(t)
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	cluster := f.Usable("verified")
	key := testbed.NewCosignKey(t)
	ca := testbed.NewNotationCA(t, "release")
	der, _ := x509.MarshalECPrivateKey(key.Private)
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))

	config := func(verify string) string {
		return mirrorConfig(ws, "harbor") + routeConfig(ws, "signed", fmt.Sprintf(`
  priority      = 10
  cluster_names = [%q]
  registries    = [fleet_oci_registry.harbor.name]
%s`, cluster, verify))
	}
	cosign := func(keys ...string) string {
		var qs []string
		for _, k := range keys {
			qs = append(qs, fmt.Sprintf("%q", k))
		}
		return fmt.Sprintf("  verify = {\n    provider = \"cosign\"\n    public_keys = [%s]\n  }\n", strings.Join(qs, ", "))
	}
	const (
		invalid  = "Invalid verify"
		verifies = "Route verifies signatures"
		stops    = "Route stops verifying signatures"
	)
	for _, tc := range []struct {
		step, verify string
		want         []string
	}{
		{"not PEM", cosign(key.PublicPEM, "ssh-ed25519 AAAA"), []string{"verify.public_keys[1] holds no PEM block"}},
		{"private key", cosign(privPEM), []string{"verify.public_keys[0] is a PEM \"EC PRIVATE KEY\" block", "never the private key"}},
		{"no keys", "  verify = {\n    provider = \"cosign\"\n  }\n", []string{"verify.public_keys cosign verification needs at least one public key"}},
		{"key as certificate", fmt.Sprintf("  verify = {\n    provider = \"notation\"\n    certificates = [%q]\n  }\n", key.PublicPEM),
			[]string{`verify.certificates[0] holds a PEM "PUBLIC KEY" block`}},
		{"bad identity", fmt.Sprintf("  verify = {\n    provider = \"notation\"\n    certificates = [%q]\n    trusted_identities = [\"x509.subject: CN=x\"]\n  }\n", ca.RootPEM),
			[]string{"verify.trusted_identities", "has no mandatory RDN attribute"}},
		{"mixed", fmt.Sprintf("  verify = {\n    provider = \"cosign\"\n    public_keys = [%q]\n    certificates = [%q]\n  }\n", key.PublicPEM, ca.RootPEM),
			[]string{"verify.provider certificates and trusted_identities are notation's"}},
	} {
		d, failed := w.plan(config(tc.verify))
		var found bool
		for _, e := range only(d, invalid) {
			ok := e.Severity == "error" && e.Address == "fleet_oci_route.signed"
			for _, part := range tc.want {
				ok = ok && strings.Contains(e.Detail, part)
			}
			found = found || ok
		}
		if !failed || !found {
			t.Errorf("%s: plan failed=%v with %v; want an %q error on fleet_oci_route.signed saying %q", tc.step, failed, d, invalid, tc.want)
		}
	}
	if names, err := f.RouteNames(); err != nil || len(names) != 0 {
		t.Errorf("routes on the hub after refused plans: %v (%v), want none", names, err)
	}

	all := []string{verifies, stops}
	d, failed := w.plan(config(cosign(key.PublicPEM)))
	expectWarnings(t, "cosign", d, failed, all, map[string][]string{verifies: {
		`Route "signed" requires cosign signatures by 1 public key(s)`, fmt.Sprintf("its 1 cluster(s) (%s) verify every artifact", cluster),
		"(harbor)", "skipped (Unverified)"}})
	w.apply(config(cosign(key.PublicPEM)))
	u, err := f.GetRoute("signed")
	if err != nil || u == nil {
		t.Fatalf("route signed on the hub: %v, %v", u, err)
	}
	v, _, _ := unstructured.NestedMap(u.Object, "spec", "verify")
	if keys, _ := v["publicKeys"].([]any); v["provider"] != "cosign" || len(keys) != 1 || keys[0] != key.PublicPEM || v["certificates"] != nil {
		t.Errorf("spec.verify on the hub = %v; want provider cosign and the one public key", v)
	}
	d, failed = w.plan(config(cosign(key.PublicPEM)))
	expectWarnings(t, "unchanged", d, failed, all, nil)

	notation := fmt.Sprintf("  verify = {\n    provider = \"notation\"\n    certificates = [%q]\n    trusted_identities = [%q]\n  }\n", ca.RootPEM, "x509.subject: "+ca.Subject)
	d, failed = w.plan(config(notation))
	expectWarnings(t, "to notation", d, failed, all, map[string][]string{verifies: {
		"requires notation signatures by certificates of 1 trusted CA(s) with identities x509.subject: " + ca.Subject}})
	w.apply(config(notation))
	d, failed = w.plan(config(""))
	expectWarnings(t, "removed", d, failed, all, map[string][]string{stops: {`Route "signed" no longer verifies signatures: its 1 cluster(s) (` + cluster + ")"}})
	w.apply(config(""))
	if u, err := f.GetRoute("signed"); err != nil || u == nil {
		t.Fatal(err)
	} else if _, ok, _ := unstructured.NestedMap(u.Object, "spec", "verify"); ok {
		t.Errorf("spec.verify still on the hub after it was removed: %v", u.Object["spec"])
	}
	w.destroy()
}
