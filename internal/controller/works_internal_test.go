package controller

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// TestWorksCompareWithWhatTheHubReturns writes every kind's work as its reconciler builds it
// (a chain, an app's pull and release with a values Secret, an app route's Ingress, a storage
// deployment, pulls) to the local hub and reads it back: the apiserver re-encodes manifests (it
// sorts their keys and drops nothing of ours), and workUpToDate must still find each one
// unchanged, or every reconcile would rewrite it. It must also still see a real change.
func TestWorksCompareWithWhatTheHubReturns(t *testing.T) {
	h := testbed.StartT(t)
	ctx := t.Context()
	c, err := client.New(h.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	const cluster, ws = "cmp-01", "team-a"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}); err != nil {
		t.Fatal(err)
	}

	chain, err := chainWork(ws, cluster, ocichain.Chain{Workspace: ws, Route: "edge",
		Registries: []puller.Registry{{Name: "source", Reference: "src.example.com/fleet"}}})
	if err != nil {
		t.Fatal(err)
	}
	app := &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "web"},
		Spec: v1alpha1.FleetAppSpec{Chart: "hello", Cluster: cluster, Namespace: "web",
			ValuesSecretRef: &v1alpha1.SecretKeyRef{Name: "web-values", Key: "values.yaml"}}}
	chart := &v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}}
	values := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "web-values"}, Data: map[string][]byte{"values.yaml": []byte("replicas: 2\n")}}
	appW, err := appwork.New(app, chart, values, appwork.NamesOf(app))
	if err != nil {
		t.Fatal(err)
	}
	route := &v1alpha1.FleetAppRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "web"},
		Spec: v1alpha1.FleetAppRouteSpec{App: "web", Mode: v1alpha1.RouteMode("site"), Host: "web.example.com", Path: "/",
			Service: v1alpha1.RouteBackend{Name: "web", Port: 80}, TLS: &v1alpha1.RouteTLS{ACMEIssuer: "letsencrypt"}}}
	routeW, err := routeWork(route, app)
	if err != nil {
		t.Fatal(err)
	}
	storageW, err := storagework.New(storagework.Request{Namespace: ws, Name: "store", Cluster: cluster, SiteNamespace: "storage-system",
		DraftName: "draft", Discover: map[string]any{"nodeSelector": map[string]any{"role": "storage"}}, Sizing: map[string]any{"replicas": 3}}, storagework.Report{})
	if err != nil {
		t.Fatal(err)
	}
	pullW, err := pullwork.New(cluster, "pulls-team-a", ws, pullwork.Request{Name: "web", Spec: v1alpha1.OCIPullSpec{Workspace: ws, Repository: "apps/web", Tag: "v1"}})
	if err != nil {
		t.Fatal(err)
	}

	reordered := 0
	// Each as its writer stamps it (chainWork itself, applyWork the others).
	for _, w := range []*workv1.ManifestWork{appW, routeW, storageW, pullW} {
		stampDigest(w)
	}
	for _, desired := range []*workv1.ManifestWork{chain, appW, routeW, storageW, pullW} {
		t.Run(desired.Labels[hub.ComponentLabel], func(t *testing.T) {
			if err := c.Create(ctx, desired.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			var got workv1.ManifestWork
			if err := c.Get(ctx, client.ObjectKeyFromObject(desired), &got); err != nil {
				t.Fatal(err)
			}
			for i := range desired.Spec.Workload.Manifests {
				if !bytes.Equal(got.Spec.Workload.Manifests[i].Raw, desired.Spec.Workload.Manifests[i].Raw) {
					reordered++
				}
			}
			// The cache's copy: its digest checked against the manifests as the hub re-encoded
			// them, and kept.
			cached, err := slimManifestWork(got.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if cw := cached.(*workv1.ManifestWork); cw.Annotations[ManifestsDigestAnnotation] == "" || cw.Annotations[ManifestsDigestAnnotation] != desired.Annotations[ManifestsDigestAnnotation] {
				t.Errorf("work %s/%s: the cache transform lost the digest of manifests the hub only re-encoded: %q, want %q", desired.Namespace, desired.Name,
					cw.Annotations[ManifestsDigestAnnotation], desired.Annotations[ManifestsDigestAnnotation])
			} else if keepsManifests(cw) != (len(cw.Spec.Workload.Manifests) > 0) {
				t.Errorf("work %s/%s: the cache kept %d manifests, keepsManifests says %v", desired.Namespace, desired.Name, len(cw.Spec.Workload.Manifests), keepsManifests(cw))
			}
			if !workUpToDate(&got, desired) {
				t.Errorf("work %s/%s as the hub returns it is not up to date with the same desired work: every reconcile would rewrite it\n got %s\nwant %s",
					desired.Namespace, desired.Name, got.Spec.Workload.Manifests[0].Raw, desired.Spec.Workload.Manifests[0].Raw)
			}
			changed := desired.DeepCopy()
			m := &changed.Spec.Workload.Manifests[len(changed.Spec.Workload.Manifests)-1]
			m.Raw = bytes.Replace(m.Raw, []byte(`"namespace":"`), []byte(`"namespace":"x`), 1)
			if bytes.Equal(m.Raw, desired.Spec.Workload.Manifests[len(changed.Spec.Workload.Manifests)-1].Raw) {
				t.Fatal("the test's change changed nothing")
			}
			stampDigest(changed) // as its writer does
			if workUpToDate(&got, changed) {
				t.Errorf("work %s/%s: a changed manifest compares up to date", desired.Namespace, desired.Name)
			}
		})
	}
	t.Logf("%d manifests came back from the hub with other bytes than were sent", reordered)
}
