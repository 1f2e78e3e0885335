package v1alpha2_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestStorageSiteDeploymentValidationOnHub installs the generated CRD on a real kube-apiserver and
// checks the rules the apiserver enforces: defaults, field limits, the immutable cluster and
// draftName, and the one-way approval, through update, merge patch and server-side apply.
func TestStorageSiteDeploymentValidationOnHub(t *testing.T) {
	h := testbed.StartT(t)
	ctx := t.Context()
	const ns = "sites"
	sbsd := testkit.Namespaced(t, h.Config, v1alpha2.GroupVersion.WithResource("storagesitedeployments"), ns)

	obj := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha2.GroupVersion.String(), "kind": "StorageSiteDeployment",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     spec,
		}}
	}
	create := func(t *testing.T, name string, spec map[string]any) *unstructured.Unstructured {
		t.Helper()
		got, err := sbsd.Create(ctx, obj(name, spec), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s with spec %v: %v", name, spec, err)
		}
		return got
	}
	wantInvalid := func(t *testing.T, what string, err error, wantInMessage ...string) {
		t.Helper()
		if !apierrors.IsInvalid(err) {
			t.Fatalf("%s: error %v, want Invalid", what, err)
		}
		for _, w := range wantInMessage {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", what, err, w)
			}
		}
	}
	patch := func(name, p string) error {
		_, err := sbsd.Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	specOf := func(t *testing.T, name string) map[string]any {
		t.Helper()
		got, err := sbsd.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec, _, _ := unstructured.NestedMap(got.Object, "spec")
		return spec
	}

	t.Run("defaults", func(t *testing.T) {
		got := create(t, "defaults", map[string]any{"cluster": "edge-1"})
		for field, want := range map[string]any{"siteNamespace": "simplyblock", "draftName": "site-draft", "approved": false} {
			if v, ok, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", field); !ok || v != want {
				t.Errorf("spec.%s = %v (set %v), want the default %v", field, v, ok, want)
			}
		}
		// Every reader decodes it into the typed kind.
		data, err := got.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var typed v1alpha2.StorageSiteDeployment
		if err := json.Unmarshal(data, &typed); err != nil {
			t.Fatal(err)
		}
		if typed.Spec.Cluster != "edge-1" || typed.Spec.DraftName != "site-draft" || typed.Spec.Sizing != nil {
			t.Errorf("typed spec = %+v", typed.Spec)
		}
	})

	t.Run("field rules on create", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			spec map[string]any
			want string
		}{
			{"cluster required", map[string]any{}, "spec.cluster"},
			{"cluster empty", map[string]any{"cluster": ""}, "spec.cluster"},
			{"cluster too long", map[string]any{"cluster": strings.Repeat("a", 64)}, "spec.cluster"},
			{"siteNamespace too long", map[string]any{"cluster": "c", "siteNamespace": strings.Repeat("a", 64)}, "spec.siteNamespace"},
			{"draftName too long", map[string]any{"cluster": "c", "draftName": strings.Repeat("a", 64)}, "spec.draftName"},
			{"vcpuCount zero", map[string]any{"cluster": "c", "sizing": map[string]any{"vcpuCount": int64(0)}}, "spec.sizing.vcpuCount"},
			{"maxSubsystemCount zero", map[string]any{"cluster": "c", "sizing": map[string]any{"maxSubsystemCount": int64(0)}}, "spec.sizing.maxSubsystemCount"},
			{"bad quantity", map[string]any{"cluster": "c", "sizing": map[string]any{"minHugePagesSize": "8 gigs"}}, "spec.sizing.minHugePagesSize"},
			{"duplicate worker", map[string]any{"cluster": "c", "discover": map[string]any{"workers": []any{"w1", "w1"}}}, "spec.discover.workers"},
		} {
			_, err := sbsd.Create(ctx, obj("bad", tc.spec), metav1.CreateOptions{})
			wantInvalid(t, tc.name, err, tc.want)
		}
		full := create(t, "full", map[string]any{
			"cluster": "edge-2", "siteNamespace": "sb", "draftName": "d1", "approved": true,
			"discover": map[string]any{"enableControlPlaneNodes": true, "workers": []any{"w1", "w2"}, "nodeSelector": map[string]any{"storage": "nvme"}},
			"sizing": map[string]any{"name": "sc", "vcpuCount": int64(4), "minHugePagesSize": "8G", "maxSubsystemCount": int64(64),
				"enableDriveFormat": false, "enableJournalDevice": true, "stripe": map[string]any{"dataChunks": int64(2), "parityChunks": int64(1)}},
		})
		if v, _, _ := unstructured.NestedBool(full.Object, "spec", "sizing", "enableDriveFormat"); v {
			t.Error("an explicit false sizing flag was not kept")
		}
		if _, ok, _ := unstructured.NestedFieldNoCopy(full.Object, "spec", "sizing", "enableDriveFormat"); !ok {
			t.Error("an explicit false sizing flag was dropped: absent must stay distinct from false")
		}
	})

	t.Run("cluster and draftName are immutable", func(t *testing.T) {
		create(t, "immutable", map[string]any{"cluster": "edge-1", "draftName": "first"})
		wantInvalid(t, "change cluster", patch("immutable", `{"spec":{"cluster":"edge-2"}}`), "cluster is immutable")
		wantInvalid(t, "change draftName", patch("immutable", `{"spec":{"draftName":"second"}}`), "draftName is immutable")
		if err := patch("immutable", `{"spec":{"siteNamespace":"other","sizing":{"vcpuCount":2}}}`); err != nil {
			t.Errorf("a mutable field: %v", err)
		}
		spec := specOf(t, "immutable")
		if spec["cluster"] != "edge-1" || spec["draftName"] != "first" || spec["siteNamespace"] != "other" {
			t.Errorf("spec after the patches = %v", spec)
		}
	})

	t.Run("approval is one-way", func(t *testing.T) {
		create(t, "approval", map[string]any{"cluster": "edge-1"})
		if err := patch("approval", `{"spec":{"approved":false}}`); err != nil {
			t.Errorf("false to false: %v", err)
		}
		if err := patch("approval", `{"spec":{"approved":true}}`); err != nil {
			t.Fatalf("approve: %v", err)
		}
		wantInvalid(t, "un-approve", patch("approval", `{"spec":{"approved":false}}`), "approval is one-way")
		// Removing the field defaults it back to false: rejected as well.
		wantInvalid(t, "remove approved", patch("approval", `{"spec":{"approved":null}}`), "approval is one-way")
		// The provider's way: a server-side apply of the whole spec by its field manager.
		apply := obj("approval", map[string]any{"cluster": "edge-1", "approved": false})
		_, err := sbsd.Apply(ctx, "approval", apply, metav1.ApplyOptions{FieldManager: "terraform-provider-fleet", Force: true})
		wantInvalid(t, "un-approve by apply", err, "approval is one-way")
		if err := patch("approval", `{"spec":{"approved":true,"sizing":{"name":"x"}}}`); err != nil {
			t.Errorf("an approved deployment stays editable: %v", err)
		}
		if v, _, _ := unstructured.NestedBool(specOf(t, "approval"), "approved"); !v {
			t.Error("approved is no longer true")
		}
	})
}

// TestPrinterColumns asks the hub for the table `kubectl get sbsd` prints and checks its columns.
func TestPrinterColumns(t *testing.T) {
	h := testbed.StartT(t)
	cols := testkit.PrinterColumns(t, h.Config, v1alpha2.GroupVersion.WithResource("storagesitedeployments"))
	want := []string{"Name", "Cluster", "Approved", "Phase", "Draft phase", "Storage phase", "Message", "Age"}
	if !slices.Equal(cols.Names, want) {
		t.Errorf("kubectl get storagesitedeployments columns: %v, want %v", cols.Names, want)
	}
	if cols.Priority["Message"] != 1 || cols.Priority["Phase"] != 0 {
		t.Errorf("column priorities %v: Message only with -o wide", cols.Priority)
	}

	// The short name and the namespaced scope, as kubectl discovers them.
	cs, err := kubernetes.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := cs.Discovery().ServerResourcesForGroupVersion(v1alpha2.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rl.APIResources {
		if r.Name == "storagesitedeployments" {
			if !slices.Equal(r.ShortNames, []string{"sbsd"}) || !r.Namespaced {
				t.Errorf("short names %v, namespaced %v; want [sbsd], true", r.ShortNames, r.Namespaced)
			}
			return
		}
	}
	t.Error("storagesitedeployments is not served")
}
