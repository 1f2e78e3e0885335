package controller

import (
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
)

// The cache keeps of a ManagedCluster what the reconcilers read (labels, annotations, spec but its
// CA bundles, the availability condition) and drops what the klusterlet reports and no
// reconciler reads.
func TestSlimManagedCluster(t *testing.T) {
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"zone": "z1"}, Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "registration"}}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: "https://c1", CABundle: []byte("-----BEGIN CERTIFICATE-----")}}},
		Status: clusterv1.ManagedClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue, Message: "joined"},
				{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue}, {Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue}},
			Capacity:      clusterv1.ResourceList{clusterv1.ResourceCPU: resource.MustParse("8")},
			Allocatable:   clusterv1.ResourceList{clusterv1.ResourceCPU: resource.MustParse("7")},
			Version:       clusterv1.ManagedClusterVersion{Kubernetes: "v1.31.0"},
			ClusterClaims: []clusterv1.ManagedClusterClaim{{Name: "id.k8s.io", Value: "c1"}},
		},
	}
	var transform func(any) (any, error)
	for obj, by := range CacheOptions().ByObject {
		if _, ok := obj.(*clusterv1.ManagedCluster); ok {
			transform = by.Transform
		}
	}
	if transform == nil {
		t.Fatal("no transform of ManagedClusters in the cache options")
	}
	out, err := transform(mc)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*clusterv1.ManagedCluster)
	if got.ManagedFields != nil || got.Status.Capacity != nil || got.Status.Allocatable != nil || got.Status.Version.Kubernetes != "" || got.Status.ClusterClaims != nil ||
		got.Spec.ManagedClusterClientConfigs[0].CABundle != nil {
		t.Errorf("kept what no reconciler reads: %+v", got)
	}
	if got.Labels["zone"] != "z1" || got.Annotations["a"] != "b" || got.Spec.ManagedClusterClientConfigs[0].URL != "https://c1" ||
		!got.Spec.HubAcceptsClient || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != clusterv1.ManagedClusterConditionAvailable ||
		got.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("dropped what a reconciler reads: %+v", got)
	}
}

// Every other cached object loses its managedFields and keeps the rest, a work its status.
func TestCacheStripsManagedFields(t *testing.T) {
	opts := CacheOptions()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "fleet-controller"}}},
		Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue}}}}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "tofu"}}}, Data: map[string][]byte{"k": []byte("v")}}
	for _, obj := range []metav1.Object{w, s} {
		if _, err := opts.DefaultTransform(obj); err != nil {
			t.Fatal(err)
		}
		if obj.GetManagedFields() != nil {
			t.Errorf("%s: managedFields kept", obj.GetName())
		}
	}
	if len(w.Status.Conditions) != 1 || string(s.Data["k"]) != "v" {
		t.Errorf("dropped more than managedFields: %+v %+v", w.Status, s.Data)
	}
}

// A cached work loses its manifests, keeps its status and a digest that matches them, and drops
// one that does not (manifests changed by hand); passed through again (the informer may), it keeps
// what the first pass checked.
func TestSlimManifestWork(t *testing.T) {
	stamped := func() *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{hub.ComponentLabel: componentOCIChain}},
			Spec:   workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(`{"kind":"Secret","apiVersion":"v1"}`)}}}}},
			Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue}}}}
		stampDigest(w)
		return w
	}
	w := stamped()
	want := w.Annotations[ManifestsDigestAnnotation]
	w.Spec.Workload.Manifests[0].Raw = []byte(`{"apiVersion":"v1","kind":"Secret"}`) // re-encoded, the same value
	for pass := 1; pass <= 2; pass++ {
		if _, err := slimManifestWork(w); err != nil {
			t.Fatal(err)
		}
		if w.Spec.Workload.Manifests != nil || len(w.Status.Conditions) != 1 || w.Annotations[ManifestsDigestAnnotation] != want {
			t.Errorf("pass %d: manifests %v, status %v, digest %q (want none, kept, %q)", pass, w.Spec.Workload.Manifests, w.Status, w.Annotations[ManifestsDigestAnnotation], want)
		}
	}
	edited := stamped()
	edited.Spec.Workload.Manifests[0].Raw = []byte(`{"apiVersion":"v1","kind":"Secret","data":{"k":"dg=="}}`)
	if _, err := slimManifestWork(edited); err != nil {
		t.Fatal(err)
	}
	if d, ok := edited.Annotations[ManifestsDigestAnnotation]; ok {
		t.Errorf("a hand-edited work keeps its digest %q in the cache: it would never be repaired", d)
	}
	pull := stamped()
	pull.Labels[hub.ComponentLabel] = pullwork.Component
	if _, err := slimManifestWork(pull); err != nil {
		t.Fatal(err)
	}
	if len(pull.Spec.Workload.Manifests) != 1 {
		t.Error("a pull work lost its manifests: pull-status reads them")
	}
}

// Chain works of a workspace that carry equal delete options and manifest configs share one
// cached copy of each; a work whose configs differ keeps its own, and the works of another
// workspace, or whose manifests the cache keeps, are compared only among themselves or not at all.
func TestCachedWorksShareTheirSpecParts(t *testing.T) {
	var transform func(any) (any, error)
	for obj, by := range CacheOptions().ByObject {
		if _, ok := obj.(*workv1.ManifestWork); ok {
			transform = by.Transform
		}
	}
	work := func(ws, component, path string) *workv1.ManifestWork {
		return &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{hub.WorkspaceLabel: ws, hub.ComponentLabel: component}},
			Spec: workv1.ManifestWorkSpec{
				DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan},
				ManifestConfigs: []workv1.ManifestConfigOption{{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "registryprobes", Name: "p"},
					FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "results", Path: path}}}}}},
			},
		}
	}
	slim := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		out, err := transform(w)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*workv1.ManifestWork)
	}
	a, b := slim(work("ws1", componentOCIChain, ".status.results")), slim(work("ws1", componentOCIChain, ".status.results"))
	if a.Spec.DeleteOption != b.Spec.DeleteOption || &a.Spec.ManifestConfigs[0] != &b.Spec.ManifestConfigs[0] {
		t.Error("two equal works of a workspace do not share their delete option and manifest configs")
	}
	c := slim(work("ws1", componentOCIChain, ".status.other"))
	if &c.Spec.ManifestConfigs[0] == &a.Spec.ManifestConfigs[0] || c.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths[0].Path != ".status.other" {
		t.Errorf("a work with other configs got the shared ones: %+v", c.Spec.ManifestConfigs)
	}
	if c.Spec.DeleteOption != a.Spec.DeleteOption {
		t.Error("a work whose delete option is equal does not share it")
	}
	if d := slim(work("ws2", componentOCIChain, ".status.results")); &d.Spec.ManifestConfigs[0] == &a.Spec.ManifestConfigs[0] {
		t.Error("a work of another workspace shares the first workspace's configs")
	}
	p1, p2 := slim(work("ws1", pullwork.Component, ".status.results")), slim(work("ws1", pullwork.Component, ".status.results"))
	if &p1.Spec.ManifestConfigs[0] == &p2.Spec.ManifestConfigs[0] {
		t.Error("pull works, which the cache keeps whole, share their configs")
	}
}

// The cached chain works and ClusterOCIStorages whose labels or annotations are equal share one
// map; one whose labels differ keeps its own, and a pull work, which its reconciler reads whole,
// is left as decoded.
func TestCachedObjectsShareTheirMetadataMaps(t *testing.T) {
	transforms := map[string]func(any) (any, error){}
	for obj, by := range CacheOptions().ByObject {
		switch obj.(type) {
		case *workv1.ManifestWork:
			transforms["work"] = by.Transform
		case *v1alpha1.ClusterOCIStorage:
			transforms["storage"] = by.Transform
		}
	}
	slim := func(kind string, obj metav1.Object) metav1.Object {
		out, err := transforms[kind](obj)
		if err != nil {
			t.Fatal(err)
		}
		return out.(metav1.Object)
	}
	work := func(component, digest string) metav1.Object {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w",
			Labels:      map[string]string{hub.WorkspaceLabel: "ws", hub.ComponentLabel: component},
			Annotations: map[string]string{ManifestsDigestAnnotation: digest}}}
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	a, b, c := slim("work", work(componentOCIChain, "d1")), slim("work", work(componentOCIChain, "d1")), slim("work", work(componentOCIChain, "d2"))
	if !same(a.GetLabels(), b.GetLabels()) || !same(a.GetAnnotations(), b.GetAnnotations()) {
		t.Error("two works with equal labels and annotations do not share them")
	}
	if !same(a.GetLabels(), c.GetLabels()) || same(a.GetAnnotations(), c.GetAnnotations()) || c.GetAnnotations()[ManifestsDigestAnnotation] != "d2" {
		t.Errorf("a work of another chain: labels shared %v, annotations %v (want shared labels, its own digest)", same(a.GetLabels(), c.GetLabels()), c.GetAnnotations())
	}
	if p1, p2 := slim("work", work(pullwork.Component, "d1")), slim("work", work(pullwork.Component, "d1")); same(p1.GetLabels(), p2.GetLabels()) {
		t.Error("pull works, which the cache keeps whole, share their labels")
	}
	storage := func(labels map[string]string) metav1.Object {
		return &v1alpha1.ClusterOCIStorage{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: labels,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "fleet"}}}}
	}
	s1, s2 := slim("storage", storage(map[string]string{hub.ManagedByLabel: ManagedBy})), slim("storage", storage(map[string]string{hub.ManagedByLabel: ManagedBy}))
	s3 := slim("storage", storage(map[string]string{hub.ManagedByLabel: ManagedBy, "edited": "by-hand"}))
	if !same(s1.GetLabels(), s2.GetLabels()) || same(s1.GetLabels(), s3.GetLabels()) || len(s3.GetLabels()) != 2 {
		t.Errorf("storages: equal labels shared %v, edited labels %v kept apart %v", same(s1.GetLabels(), s2.GetLabels()), s3.GetLabels(), !same(s1.GetLabels(), s3.GetLabels()))
	}
	if s1.GetManagedFields() != nil {
		t.Error("a cached storage keeps its managed fields")
	}
}

// Sharing goes on past sharedMapsMax distinct maps (a long-lived hub's digests): once that many
// are kept they are dropped, and equal maps decoded afterwards share one again.
func TestSharedMapsKeepSharingPastTheirBound(t *testing.T) {
	s := newSharedMaps()
	for i := range sharedMapsMax + 10 {
		s.intern(map[string]string{"digest": strconv.Itoa(i)})
	}
	a, b := map[string]string{"digest": "late"}, map[string]string{"digest": "late"}
	if got := s.intern(a); reflect.ValueOf(got).Pointer() != reflect.ValueOf(a).Pointer() {
		t.Fatal("the first map of its content past the bound is not the one kept")
	}
	if got := s.intern(b); reflect.ValueOf(got).Pointer() != reflect.ValueOf(a).Pointer() {
		t.Errorf("past %d distinct maps, an equal map is not shared: sharing stopped for good", sharedMapsMax)
	}
	if len(s.byKey) > sharedMapsMax {
		t.Errorf("%d maps kept, want at most %d", len(s.byKey), sharedMapsMax)
	}
}
