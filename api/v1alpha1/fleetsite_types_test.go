package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestSiteAndJoinValidationOnHub installs the generated CRDs on a real kube-apiserver and checks
// the CEL rules and patterns of FleetSite and FleetClusterJoin, and the immutability of a join's cluster.
func TestSiteAndJoinValidationOnHub(t *testing.T) {
	h := testbed.StartT(t)
	ctx := t.Context()
	const ns = "ws"
	sites := testkit.Namespaced(t, h.Config, v1alpha1.GroupVersion.WithResource("fleetsites"), ns)
	joins := testkit.Namespaced(t, h.Config, v1alpha1.GroupVersion.WithResource("fleetclusterjoins"), ns)
	n := 0
	obj := func(kind string, spec map[string]any) *unstructured.Unstructured {
		n++
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": kind,
			"metadata": map[string]any{"name": fmt.Sprintf("o%d", n), "namespace": ns}, "spec": spec}}
	}
	create := func(t *testing.T, ri dynamic.ResourceInterface, kind string, spec map[string]any, wantInMessage ...string) *unstructured.Unstructured {
		t.Helper()
		got, err := ri.Create(ctx, obj(kind, spec), metav1.CreateOptions{})
		if len(wantInMessage) == 0 {
			if err != nil {
				t.Fatalf("create %s %v: %v", kind, spec, err)
			}
			return got
		}
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create %s %v: error %v, want Invalid", kind, spec, err)
		}
		for _, w := range wantInMessage {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("create %s %v: %q does not mention %q", kind, spec, err, w)
			}
		}
		return nil
	}
	entry := func(id, method string, extra map[string]any) map[string]any {
		e := map[string]any{"id": id, "method": method, "address": "203.0.113.10"}
		for k, v := range extra {
			e[k] = v
		}
		return e
	}
	ingress := func(entries ...any) map[string]any { return map[string]any{"edge": map[string]any{"ingress": entries}} }

	t.Run("site", func(t *testing.T) {
		got := create(t, sites, "FleetSite", map[string]any{
			"displayName": "Berlin store",
			"edge": map[string]any{"ingress": []any{
				entry("wan", "port_forward", map[string]any{"ports": map[string]any{"http": int64(30080), "https": int64(30443)}}),
				entry("proxy", "reverse_proxy", nil)}},
			"hubGateway": map[string]any{"enabled": true, "domain": "berlin.example.com"},
			"jumphost":   map[string]any{"host": "bastion.example.com", "user": "ops", "credentialsSecretRef": map[string]any{"name": "bastion", "key": "ssh-privatekey"}},
		})
		if p, ok, _ := unstructured.NestedInt64(got.Object, "spec", "jumphost", "port"); ok {
			t.Errorf("jumphost.port defaulted to %d, want unset (22 is implied)", p)
		}
		create(t, sites, "FleetSite", map[string]any{}) // no WAN path: valid, the status says so
		create(t, sites, "FleetSite", ingress(entry("wan", "port_forward", nil)), "a port_forward entry names the NodePorts")
		create(t, sites, "FleetSite", ingress(entry("wan", "port_forward", map[string]any{"ports": map[string]any{}})), "a port_forward entry names the NodePorts")
		create(t, sites, "FleetSite", ingress(entry("wan", "carrier_pigeon", nil)), "spec.edge.ingress[0].method")
		create(t, sites, "FleetSite", ingress(entry("a", "reverse_proxy", nil), entry("a", "reverse_proxy", nil)), "Duplicate value")
		create(t, sites, "FleetSite", ingress(entry("Bad_ID", "reverse_proxy", nil)), "spec.edge.ingress[0].id")
		create(t, sites, "FleetSite", ingress(entry("wan", "port_forward", map[string]any{"ports": map[string]any{"https": int64(70000)}})), "spec.edge.ingress[0].ports.https")
		create(t, sites, "FleetSite", map[string]any{"hubGateway": map[string]any{"enabled": true}}, "an enabled hub gateway needs a domain")
		create(t, sites, "FleetSite", map[string]any{"hubGateway": map[string]any{"enabled": false}})
		create(t, sites, "FleetSite", map[string]any{"jumphost": map[string]any{"host": "b", "password": "inline"}}) // unknown fields are pruned
		create(t, sites, "FleetSite", map[string]any{"jumphost": map[string]any{"host": "b", "credentialsSecretRef": map[string]any{"name": "s"}}}, "spec.jumphost.credentialsSecretRef.key")
	})

	t.Run("join", func(t *testing.T) {
		got := create(t, joins, "FleetClusterJoin", map[string]any{"cluster": "eu-01", "site": "berlin", "edge": map[string]any{"ingressId": "wan"},
			"capabilities": []any{"gpu", "storage"}})
		create(t, joins, "FleetClusterJoin", map[string]any{"cluster": "eu-01", "site": "berlin", "capabilities": []any{"gpu", "gpu"}}, "Duplicate value")
		create(t, joins, "FleetClusterJoin", map[string]any{"cluster": "eu-01", "site": "berlin", "capabilities": []any{"GPU"}}, "spec.capabilities[0]")
		create(t, joins, "FleetClusterJoin", map[string]any{"cluster": "Eu_01", "site": "berlin"}, "spec.cluster")
		create(t, joins, "FleetClusterJoin", map[string]any{"site": "berlin"}, "spec.cluster")
		patch := `{"spec":{"cluster":"eu-02"}}`
		_, err := joins.Patch(ctx, got.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "cluster is immutable") {
			t.Errorf("changing the cluster: %v, want Invalid: cluster is immutable", err)
		}
		patch = `{"spec":{"site":"hamburg","capabilities":["gpu"]}}`
		if _, err := joins.Patch(ctx, got.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Errorf("changing site and capabilities: %v", err)
		}
	})
}
