package hub_test

import (
	"encoding/base64"
	"errors"
	"slices"
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
