package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"os"
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

// TestChartAppAndRouteValidationOnHub installs the generated CRDs on a real kube-apiserver and
// checks the CEL rules, enums and defaults of FleetChart, FleetApp and FleetAppRoute, and the
// immutability of an app's cluster, namespace and release name.
func TestChartAppAndRouteValidationOnHub(t *testing.T) {
	h := testbed.StartT(t)
	ctx := t.Context()
	const ns = "ws"
	resource := func(name string) dynamic.ResourceInterface {
		return testkit.Namespaced(t, h.Config, v1alpha1.GroupVersion.WithResource(name), ns)
	}
	charts, apps, routes := resource("fleetcharts"), resource("fleetapps"), resource("fleetapproutes")
	// invalid checks that err is Invalid and mentions each of want.
	invalid := func(t *testing.T, what string, err error, want ...string) {
		t.Helper()
		if !apierrors.IsInvalid(err) {
			t.Fatalf("%s: error %v, want Invalid", what, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", what, err, w)
			}
		}
	}
	create := func(t *testing.T, ri dynamic.ResourceInterface, kind, name string, spec map[string]any) (*unstructured.Unstructured, error) {
		t.Helper()
		return ri.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}, metav1.CreateOptions{})
	}
	patch := func(ri dynamic.ResourceInterface, name, spec string) error {
		_, err := ri.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":`+spec+`}`), metav1.PatchOptions{})
		return err
	}

	t.Run("chart", func(t *testing.T) {
		_, err := create(t, charts, "FleetChart", "none", map[string]any{"repository": "charts/hello"})
		invalid(t, "a chart without version or digest", err, "give the chart's version (its tag) or its digest, not both")
		_, err = create(t, charts, "FleetChart", "both", map[string]any{"repository": "charts/hello", "version": "0.1.0", "digest": "sha256:" + strings.Repeat("ab", 32)})
		invalid(t, "a chart with version and digest", err, "give the chart's version (its tag) or its digest, not both")
		_, err = create(t, charts, "FleetChart", "plus", map[string]any{"repository": "charts/hello", "version": "1.0.0+build"})
		invalid(t, "a version with +", err, "spec.version")
		_, err = create(t, charts, "FleetChart", "short", map[string]any{"repository": "charts/hello", "digest": "sha256:abc"})
		invalid(t, "a short digest", err, "spec.digest")
		if _, err := create(t, charts, "FleetChart", "hello", map[string]any{"repository": "charts/hello", "version": "0.1.0"}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("app", func(t *testing.T) {
		_, err := create(t, apps, "FleetApp", "list", map[string]any{"chart": "hello", "cluster": "eu-01", "namespace": "web", "values": []any{"a"}})
		invalid(t, "values that are not an object", err, "spec.values")
		if _, err := create(t, apps, "FleetApp", "web", map[string]any{"chart": "hello", "cluster": "eu-01", "namespace": "web",
			"values": map[string]any{"greeting": "hi", "nested": map[string]any{"n": int64(2)}}}); err != nil {
			t.Fatal(err)
		}
		invalid(t, "changing the cluster", patch(apps, "web", `{"cluster":"eu-02"}`), "cluster is immutable")
		invalid(t, "changing the namespace", patch(apps, "web", `{"namespace":"other"}`), "namespace is immutable")
		invalid(t, "naming the release afterwards", patch(apps, "web", `{"releaseName":"web2"}`), "releaseName is immutable")
		if err := patch(apps, "web", `{"values":{"greeting":"hello"},"chart":"hello2"}`); err != nil {
			t.Errorf("changing values and chart: %v", err)
		}
		if _, err := create(t, apps, "FleetApp", "named", map[string]any{"chart": "hello", "cluster": "eu-01", "namespace": "web", "releaseName": "web-a"}); err != nil {
			t.Fatal(err)
		}
		invalid(t, "renaming the release", patch(apps, "named", `{"releaseName":"web-b"}`), "releaseName is immutable")
		invalid(t, "dropping the release name", patch(apps, "named", `{"releaseName":null}`), "releaseName is immutable")
	})

	t.Run("route", func(t *testing.T) {
		svc := map[string]any{"name": "web", "port": int64(80)}
		got, err := create(t, routes, "FleetAppRoute", "web", map[string]any{"app": "web", "host": "web.example.com", "service": svc})
		if err != nil {
			t.Fatal(err)
		}
		mode, _, _ := unstructured.NestedString(got.Object, "spec", "mode")
		path, _, _ := unstructured.NestedString(got.Object, "spec", "path")
		if mode != "site" || path != "/" {
			t.Errorf("defaults: mode %q path %q, want site and /", mode, path)
		}
		_, err = create(t, routes, "FleetAppRoute", "nohost", map[string]any{"app": "web", "mode": "hub", "service": svc})
		invalid(t, "a hub route without a host", err, "host is required unless mode is none")
		if _, err := create(t, routes, "FleetAppRoute", "off", map[string]any{"app": "web", "mode": "none", "service": svc}); err != nil {
			t.Errorf("a route in mode none without a host: %v", err)
		}
		_, err = create(t, routes, "FleetAppRoute", "pigeon", map[string]any{"app": "web", "mode": "pigeon", "host": "a.example.com", "service": svc})
		invalid(t, "an unknown mode", err, "spec.mode")
		_, err = create(t, routes, "FleetAppRoute", "twotls", map[string]any{"app": "web", "host": "a.example.com", "service": svc,
			"tls": map[string]any{"secretName": "a", "acmeIssuer": "b"}})
		invalid(t, "two TLS sources", err, "give exactly one of secretName and acmeIssuer")
		_, err = create(t, routes, "FleetAppRoute", "relpath", map[string]any{"app": "web", "host": "a.example.com", "path": "api", "service": svc})
		invalid(t, "a relative path", err, "spec.path")
	})

	// The same cases as fleetrules.TestRoutePath: the apiserver's CEL agrees with CheckRoutePath.
	t.Run("route paths", func(t *testing.T) {
		svc := map[string]any{"name": "web", "port": int64(80)}
		raw, err := os.ReadFile("../../internal/fleetrules/testdata/route-paths.json")
		if err != nil {
			t.Fatal(err)
		}
		var cases []struct {
			Path string `json:"path"`
			OK   bool   `json:"ok"`
			Case string `json:"case"`
		}
		if err := json.Unmarshal(raw, &cases); err != nil {
			t.Fatal(err)
		}
		for i, c := range cases {
			_, err := create(t, routes, "FleetAppRoute", fmt.Sprintf("path-%02d", i), map[string]any{"app": "web", "host": "a.example.com", "path": c.Path, "service": svc})
			switch {
			case c.OK && err != nil:
				t.Errorf("%s: path %q refused: %v", c.Case, c.Path, err)
			case !c.OK:
				invalid(t, c.Case, err, "spec.path", "path must be / or /-separated segments")
			}
		}
	})
}
