package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestRouteValidationOnHub installs the generated CRD on a real kube-apiserver and checks that
// the schema's pattern, item and CEL rules reject what they should and accept what they should.
func TestRouteValidationOnHub(t *testing.T) {
	h := testbed.StartT(t)
	ctx := t.Context()
	const ns = "ws"
	routes := testkit.Namespaced(t, h.Config, v1alpha1.GroupVersion.WithResource("ocistorageroutes"), ns)

	n := 0
	route := func(spec map[string]any) *unstructured.Unstructured {
		n++
		full := map[string]any{"priority": int64(n), "registries": []any{"primary"}}
		for k, v := range spec {
			full[k] = v
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "OCIStorageRoute",
			"metadata": map[string]any{"name": fmt.Sprintf("r%d", n), "namespace": ns},
			"spec":     full,
		}}
	}
	accept := func(t *testing.T, spec map[string]any) *unstructured.Unstructured {
		t.Helper()
		got, err := routes.Create(ctx, route(spec), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with spec %v: %v", spec, err)
		}
		return got
	}
	reject := func(t *testing.T, spec map[string]any, wantInMessage ...string) {
		t.Helper()
		_, err := routes.Create(ctx, route(spec), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create with spec %v: error %v, want Invalid", spec, err)
		}
		for _, w := range wantInMessage {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("create with spec %v: error %q does not mention %q", spec, err, w)
			}
		}
	}

	t.Run("replicationWait", func(t *testing.T) {
		for in, want := range map[string]time.Duration{
			"10m": 10 * time.Minute, "0": 0, "0s": 0, "1h30m": 90 * time.Minute, "1.5h": 90 * time.Minute,
			"300ms": 300 * time.Millisecond, "90s": 90 * time.Second, "2µs": 2 * time.Microsecond,
			"24h": 24 * time.Hour, "1439m": 1439 * time.Minute,
		} {
			got := accept(t, map[string]any{"replicationWait": in})
			if s, _, _ := unstructured.NestedString(got.Object, "spec", "replicationWait"); s != in {
				t.Errorf("replicationWait %q read back as %q", in, s)
			}
			// The typed route keeps the string, which parses to the duration.
			data, err := got.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var typed v1alpha1.OCIStorageRoute
			if err := json.Unmarshal(data, &typed); err != nil {
				t.Fatalf("replicationWait %q: the typed route does not decode: %v", in, err)
			}
			if d, err := time.ParseDuration(typed.Spec.ReplicationWait); err != nil || d != want {
				t.Errorf("replicationWait %q decodes to %q (%v, %v), want %v", in, typed.Spec.ReplicationWait, d, err, want)
			}
		}
		for _, in := range []string{"1d", "-5m", "10", "abc", "", "1h ", "-0s", strings.Repeat("1", 65) + "s"} {
			reject(t, map[string]any{"replicationWait": in}, "spec.replicationWait")
		}
		// Over a day, and beyond what a duration can hold (which once stopped the controller
		// from reading any route): refused, naming the bound.
		for _, in := range []string{"24h0m1s", "25h", "1441m", "3000000h"} {
			reject(t, map[string]any{"replicationWait": in}, "spec.replicationWait")
		}
		reject(t, map[string]any{"replicationWait": "48h"}, "at most a day (24h)")
	})

	t.Run("default route names no clusters", func(t *testing.T) {
		const msg = "a default route catches the clusters no other route matched"
		reject(t, map[string]any{"default": true, "clusterNames": []any{"edge-1"}}, msg)
		reject(t, map[string]any{"default": true, "clusterGroups": []any{"berlin"}}, msg)
		reject(t, map[string]any{"default": true, "clusterSelectors": []any{map[string]any{}}}, msg)
		accept(t, map[string]any{"default": true})
		accept(t, map[string]any{"default": true, "clusterNames": []any{}})
		accept(t, map[string]any{"default": false, "clusterNames": []any{"edge-1"}})
		accept(t, map[string]any{"clusterNames": []any{"edge-1"}, "clusterGroups": []any{"berlin"},
			"clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"site": "berlin"}}}})
	})

	t.Run("names", func(t *testing.T) {
		accept(t, map[string]any{"clusterNames": []any{"edge-1", "berlin.edge-2"}, "clusterGroups": []any{"eu"},
			"registries": []any{"harbor", "zot.mirror"}})
		reject(t, map[string]any{"clusterNames": []any{"edge-1", "Edge_2"}}, "spec.clusterNames[1]")
		reject(t, map[string]any{"clusterGroups": []any{"eu-"}}, "spec.clusterGroups[0]")
		reject(t, map[string]any{"registries": []any{"harbor/fleet"}}, "spec.registries[0]")
		reject(t, map[string]any{"clusterNames": []any{strings.Repeat("a", 254)}}, "spec.clusterNames[0]")
	})

	t.Run("bounds", func(t *testing.T) {
		names := func(prefix string, n int) []any {
			out := make([]any, n)
			for i := range out {
				out[i] = fmt.Sprintf("%s-%d", prefix, i)
			}
			return out
		}
		sel := func(labels, exprs, values int) map[string]any {
			ml := map[string]any{}
			for i := range labels {
				ml[fmt.Sprintf("k%d", i)] = "v"
			}
			vals := names("v", values)
			var es []any
			for i := range exprs {
				es = append(es, map[string]any{"key": fmt.Sprintf("e%d", i), "operator": "In", "values": vals})
			}
			return map[string]any{"matchLabels": ml, "matchExpressions": es}
		}
		accept(t, map[string]any{"priority": int64(math.MaxInt32), "clusterNames": names("c", 1000), "clusterGroups": names("g", 100),
			"clusterSelectors": []any{sel(64, 32, 64)}, "registries": names("r", 16)})
		reject(t, map[string]any{"priority": int64(math.MaxInt32) + 1, "clusterNames": []any{"a"}}, "spec.priority")
		reject(t, map[string]any{"clusterNames": names("c", 1001)}, "spec.clusterNames", "1000")
		reject(t, map[string]any{"clusterGroups": names("g", 101)}, "spec.clusterGroups", "100")
		reject(t, map[string]any{"registries": names("r", 17), "clusterNames": []any{"a"}}, "spec.registries", "16")
		many := make([]any, 33)
		for i := range many {
			many[i] = map[string]any{}
		}
		reject(t, map[string]any{"clusterSelectors": many}, "spec.clusterSelectors", "32")
		reject(t, map[string]any{"clusterSelectors": []any{sel(65, 0, 0)}}, "spec.clusterSelectors[0].matchLabels")
		reject(t, map[string]any{"clusterSelectors": []any{sel(0, 33, 1)}}, "spec.clusterSelectors[0].matchExpressions")
		reject(t, map[string]any{"clusterSelectors": []any{sel(0, 1, 65)}}, "spec.clusterSelectors[0].matchExpressions[0].values")
	})

	// The provider applies with force as its field manager; an element someone else added must
	// not survive that apply, or the route never converges to the configuration.
	t.Run("provider's apply replaces lists another manager extended", func(t *testing.T) {
		const provider = "terraform-provider-fleet"
		obj := route(map[string]any{"clusterNames": []any{"a", "b"}, "clusterGroups": []any{"eu"}})
		name := obj.GetName()
		if _, err := routes.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: provider, Force: true}); err != nil {
			t.Fatal(err)
		}
		patch := `{"spec":{"clusterNames":["a","b","c"],"clusterGroups":["eu","us"]}}`
		if _, err := routes.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
			t.Fatal(err)
		}
		got, err := routes.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: provider, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		for field, want := range map[string][]string{"clusterNames": {"a", "b"}, "clusterGroups": {"eu"}} {
			if s, _, _ := unstructured.NestedStringSlice(got.Object, "spec", field); !slices.Equal(s, want) {
				t.Errorf("after the provider's second apply spec.%s = %v, want %v", field, s, want)
			}
		}
	})
}

// TestPrinterColumns asks the hub for the tables `kubectl get` prints and checks their columns.
func TestPrinterColumns(t *testing.T) {
	h := testbed.StartT(t)
	for resource, want := range map[string][]string{
		"ocistorageroutes":   {"Name", "Priority", "Default", "Registries", "Matched", "Ready", "Reason", "Age"},
		"clusterocistorages": {"Name", "Route", "Chain", "Matched By", "Active", "Pulled", "Waiting", "Failed", "Unknown", "Ready", "Age"},
		"fleetsites":         {"Name", "Display Name", "Joined", "WAN", "Ready", "Age"},
		"fleetclusterjoins":  {"Name", "Cluster", "Site", "Ingress", "Joined", "Ready", "Reason", "Age"},
		"fleetcharts":        {"Name", "Repository", "Version", "Digest", "Apps", "Age"},
		"fleetapps":          {"Name", "Chart", "Cluster", "Namespace", "Phase", "Revision", "Registry", "Age"},
		"fleetapproutes":     {"Name", "App", "Mode", "URL", "Ready", "Reason", "Age"},
		"fleetreleases":      {"Name", "Release", "Namespace", "Phase", "Revision", "Chart", "Age"},
	} {
		if got := testkit.PrinterColumns(t, h.Config, v1alpha1.GroupVersion.WithResource(resource)).Names; !slices.Equal(got, want) {
			t.Errorf("kubectl get %s columns: %v, want %v", resource, got, want)
		}
	}
}
