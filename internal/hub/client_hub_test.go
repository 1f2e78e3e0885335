package hub_test

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// On the local hub: a missing kind is told from a missing object, and ApplyOwned removes what
// another field manager added to the fields the caller owns, which server-side apply leaves.
func TestClientOnHub(t *testing.T) {
	h := testbed.StartT(t)
	ctx := t.Context()
	c, err := hub.NewClient(h.Config, "terraform-provider-fleet")
	if err != nil {
		t.Fatal(err)
	}
	secrets := hub.Kind{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret"}

	t.Run("missing object", func(t *testing.T) {
		_, err := c.Get(ctx, secrets, "default", "nothing-here")
		if !apierrors.IsNotFound(err) || errors.Is(err, hub.ErrKindNotServed) {
			t.Fatalf("Get = %v, want NotFound for the object", err)
		}
	})
	t.Run("missing kind", func(t *testing.T) {
		unserved := hub.Kind{GroupVersionResource: schema.GroupVersionResource{Group: "fleet.umkim.io", Version: "v1alpha1", Resource: "fleetnothings"}, Kind: "FleetNothing"}
		_, err := c.Get(ctx, unserved, "default", "x")
		if !errors.Is(err, hub.ErrKindNotServed) {
			t.Fatalf("Get = %v, want ErrKindNotServed", err)
		}
	})
	t.Run("owned fields converge", func(t *testing.T) {
		enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
		desired := func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]any{"type": "Opaque", "data": map[string]any{"reference": enc("r.io")}}}
			u.SetNamespace("default")
			u.SetName("converge")
			return u
		}
		if _, err := c.ApplyOwned(ctx, secrets, desired(), []string{"data"}); err != nil {
			t.Fatal(err)
		}
		dyn := dynamic.NewForConfigOrDie(h.Config)
		patch := []byte(`{"data":{"agentUsername":"` + enc("intruder") + `"}}`)
		if _, err := dyn.Resource(secrets.GroupVersionResource).Namespace("default").Patch(ctx, "converge", types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
			t.Fatal(err)
		}
		plain, err := c.Apply(ctx, secrets, desired())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := unstructured.NestedString(plain.Object, "data", "agentUsername"); !ok {
			t.Fatal("server-side apply alone removed the other manager's key: the case ApplyOwned exists for is gone")
		}
		out, err := c.ApplyOwned(ctx, secrets, desired(), []string{"data"})
		if err != nil {
			t.Fatal(err)
		}
		data, _, _ := unstructured.NestedStringMap(out.Object, "data")
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		if !slices.Equal(keys, []string{"reference"}) {
			t.Fatalf("data keys after ApplyOwned = %v, want only reference", keys)
		}
	})
}

// On the local hub: an object is adoptable only when this client's earlier create could have
// left it: its label, its field manager, nobody else's fields but status and finalizers, and
// exactly the content the create would write.
func TestAdoptableOnHub(t *testing.T) {
	h := testbed.StartT(t)
	ctx := t.Context()
	const manager = "terraform-provider-fleet"
	c, err := hub.NewClient(h.Config, manager)
	if err != nil {
		t.Fatal(err)
	}
	other, err := hub.NewClient(h.Config, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(h.Config)
	configMaps := hub.Kind{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap"}
	desired := func(name, value, managedBy string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"k": value}}}
		u.SetNamespace("default")
		u.SetName(name)
		u.SetLabels(map[string]string{hub.ManagedByLabel: managedBy})
		return u
	}
	create := func(c *hub.Client, u *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		out, err := c.Apply(ctx, configMaps, u)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	patch := func(name, body, manager string) *unstructured.Unstructured {
		t.Helper()
		out, err := dyn.Resource(configMaps.GroupVersionResource).Namespace("default").Patch(context.Background(), name, types.MergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: manager})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	lost := create(c, desired("lost", "v", manager))
	create(c, desired("finalized", "v", manager))
	withFinalizer := patch("finalized", `{"metadata":{"finalizers":["fleet.umkim.io/cleanup"]}}`, "fleet-controller")
	t.Cleanup(func() { patch("finalized", `{"metadata":{"finalizers":null}}`, "fleet-controller") })
	create(c, desired("edited", "v", manager))
	edited := patch("edited", `{"data":{"extra":"x"}}`, "kubectl-edit")
	foreign := create(other, desired("foreign", "v", manager)) // our label, another manager
	unlabelled := create(c, desired("unlabelled", "v", "kubectl"))

	cases := []struct {
		name    string
		current *unstructured.Unstructured
		desired *unstructured.Unstructured
		want    string // "" for adoptable, else a part of the error
	}{
		{"what the create left", lost, desired("lost", "v", manager), ""},
		{"with a controller's finalizer", withFinalizer, desired("finalized", "v", manager), ""},
		{"another content", lost, desired("lost", "other", manager), "its data differs"},
		{"another manager's field", edited, desired("edited", "v", manager), `field manager "kubectl-edit" owns its data`},
		{"written by another manager", foreign, desired("foreign", "v", manager), `field manager "someone-else" owns its data`},
		{"without this manager's label", unlabelled, desired("unlabelled", "v", manager), `label is "kubectl"`},
	}
	for _, tc := range cases {
		err := c.Adoptable(ctx, configMaps, tc.current, tc.desired)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Adoptable = %v, want adoptable", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Adoptable = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	// The dry run wrote nothing.
	got, err := c.Get(ctx, configMaps, "default", "lost")
	if err != nil || got.GetResourceVersion() != lost.GetResourceVersion() {
		t.Fatalf("after the dry runs: %v, resourceVersion %s, want %s unchanged", err, got.GetResourceVersion(), lost.GetResourceVersion())
	}
}
