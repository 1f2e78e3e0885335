package testkit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// Settled fails unless, after two seconds (for what the last change set off), the objects'
// resourceVersions and the hub-write metric (fleet_hub_writes_total) stay as they are for
// window: a settled hub writes nothing.
func Settled(t testing.TB, c client.Client, window time.Duration, objs ...client.Object) {
	t.Helper()
	rv := func() []string {
		var out []string
		for _, o := range objs {
			o := o.DeepCopyObject().(client.Object)
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%T %s/%s@%s", o, o.GetNamespace(), o.GetName(), o.GetResourceVersion()))
		}
		return out
	}
	time.Sleep(2 * time.Second)
	before, written := rv(), Counter("fleet_hub_writes_total", nil)
	time.Sleep(window)
	if after := rv(); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("over %v:\n%s\nbecame\n%s", window, strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	if n := Counter("fleet_hub_writes_total", nil) - written; n != 0 {
		t.Errorf("%v hub writes over %v; want none", n, window)
	}
}

// LoosenCRD replaces the schema of one property of the spec of a CRD of ours by a bare
// {"type": "string"}, as a CRD written before a bound existed would have it, and returns the
// function that restores the CRD (the test's Cleanup restores it too). The apiserver takes a
// few moments to serve the new schema.
func LoosenCRD(t testing.TB, c client.Client, crd, property string) (restore func()) {
	t.Helper()
	ctx := context.Background() // restore runs in Cleanup too, after t.Context() is done
	get := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, client.ObjectKey{Name: crd}, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	orig := get()
	origSpec, _, _ := unstructured.NestedMap(orig.Object, "spec")
	loose := orig.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(loose.Object, "spec", "versions")
	for i := range versions {
		v := versions[i].(map[string]any)
		if err := unstructured.SetNestedMap(v, map[string]any{"type": "string"},
			"schema", "openAPIV3Schema", "properties", "spec", "properties", property); err != nil {
			t.Fatal(err)
		}
	}
	if err := unstructured.SetNestedSlice(loose.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, loose); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		cur := get()
		if err := unstructured.SetNestedMap(cur.Object, origSpec, "spec"); err != nil {
			t.Fatal(err)
		}
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// GatewayFragments are the Traefik fragments of the hub gateway's namespace
// (controller.DefaultGatewayNamespace) by file name (<ConfigMap>.yaml), as the documented Traefik
// setup loads them: only that namespace, only the ConfigMaps with the gateway label.
func GatewayFragments(t testing.TB, c client.Client) map[string]string {
	t.Helper()
	var cms corev1.ConfigMapList
	if err := c.List(t.Context(), &cms, client.InNamespace(controller.DefaultGatewayNamespace), client.MatchingLabels{hub.GatewayLabel: hub.GatewayTraefik}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range cms.Items {
		out[cm.Name+".yaml"] = cm.Data[controller.TraefikKey]
	}
	return out
}
