package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// DriftChartTemplate is a chart's templates with a Deployment <release> of 2 replicas and a
// ConfigMap <release>-config.
const driftChartTemplate = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: 2
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1.0
        resources: {limits: {cpu: 500m}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
`

// The agent compares a deployed release with the cluster every drift interval: a steady
// release it checks again and again without a status write, and what the chart does not set
// (a label added by hand, the apiserver's defaults) is no drift; a Deployment's replicas
// edited and a ConfigMap deleted on the cluster are reported as drift, named, counted and
// sorted; a new generation (spec.repairs raised, as the hub asks for a repair) upgrades the
// release with the same chart and values, Helm's three-way merge restores both objects, and
// the drift goes back to none at once.
func TestReleaseDrift(t *testing.T) {
	const target, ws = "app-drift", "drift"
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/drift", testbed.PackageChart("drift", "0.1.0", driftChartTemplate))
	putChain(t, c, ocichain.Chain{Workspace: ws, Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	const interval = 2 * time.Second
	runAgent(t, func(o *agent.Options) { o.DriftInterval = interval })

	newPull(t, c, ocichain.Namespace, "drift", v1alpha1.OCIPullSpec{Workspace: ws, Repository: "charts/drift", Tag: "0.1.0"})
	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "drift"},
		Spec:       v1alpha1.FleetReleaseSpec{Workspace: ws, App: "drift", Pull: "drift", ReleaseName: "web", Namespace: target},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, rel) })
	begin := time.Now()
	waitRelease(t, c, rel, "installed, no drift", drift(1, 1, 0))
	t.Logf("installed and checked in %v", time.Since(begin).Round(time.Millisecond))

	// Steady: three intervals of checks write nothing.
	steady := func(what string) {
		t.Helper()
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), rel); err != nil {
			t.Fatal(err)
		}
		version := rel.ResourceVersion
		time.Sleep(3*interval + interval/2)
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), rel); err != nil || rel.ResourceVersion != version {
			t.Errorf("%s: release written while steady: resourceVersion %s, was %s (%v); status %+v", what, rel.ResourceVersion, version, err, rel.Status)
		}
	}
	// What the chart does not set is no drift: a label and an annotation added on the cluster.
	var dep appsv1.Deployment
	key := client.ObjectKey{Namespace: target, Name: "web"}
	testkit.Update(t, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "web"}}, func(d *appsv1.Deployment) {
		metav1.SetMetaDataLabel(&d.ObjectMeta, "team", "ops")
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, "note", "added by hand")
	})
	steady("after the install, with a label and an annotation added")
	waitRelease(t, c, rel, "no drift for what the chart does not set", drift(1, 1, 0))
	testkit.Update(t, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "web"}}, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	begin = time.Now()
	s := waitRelease(t, c, rel, "the edited Deployment reported", drift(1, 1, 1))
	t.Logf("edited replicas reported in %v", time.Since(begin).Round(time.Millisecond))
	if want := []v1alpha1.ObjectRef{{Kind: "Deployment", Namespace: target, Name: "web"}}; !slices.Equal(s.Drift.Objects, want) {
		t.Errorf("drifted objects %+v, want %+v", s.Drift.Objects, want)
	}
	if err := c.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "web-config"}}); err != nil {
		t.Fatal(err)
	}
	s = waitRelease(t, c, rel, "the deleted ConfigMap reported too", drift(1, 1, 2))
	if want := []v1alpha1.ObjectRef{{Kind: "ConfigMap", Namespace: target, Name: "web-config"}, {Kind: "Deployment", Namespace: target, Name: "web"}}; !slices.Equal(s.Drift.Objects, want) {
		t.Errorf("drifted objects %+v, want %+v", s.Drift.Objects, want)
	}
	steady("while drifted")

	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) { r.Spec.Repairs = 1 })
	begin = time.Now()
	waitRelease(t, c, rel, "repaired by an upgrade", drift(2, 2, 0))
	t.Logf("repaired in %v", time.Since(begin).Round(time.Millisecond))
	if err := c.Get(t.Context(), key, &dep); err != nil || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment %s after the repair: replicas %v (%v), want 2 as the chart sets", key, dep.Spec.Replicas, err)
	}
	wantConfigMap(t, c, target, "web-config", "hello")
	if got := helmRevisions(t, c, target, "web"); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("Helm revisions after one repair: %v, want [1 2]", got)
	}
	steady("after the repair")
	if got := helmRevisions(t, c, target, "web"); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("Helm revisions once steady again: %v, want [1 2] (one repair)", got)
	}
}

// drift accepts a status Deployed at revision for generation whose drift check found count
// drifted objects.
func drift(revision int32, generation int64, count int32) func(v1alpha1.FleetReleaseStatus) error {
	return func(s v1alpha1.FleetReleaseStatus) error {
		if err := deployed(revision, generation)(s); err != nil {
			return err
		}
		if s.Drift == nil || s.Drift.Count != count || len(s.Drift.Objects) != int(count) {
			return fmt.Errorf("drift %+v, want %d objects", s.Drift, count)
		}
		return nil
	}
}

// The drift interval is off (0) or at least a second: never a hot loop.
func TestDriftIntervalBounds(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 999 * time.Millisecond} {
		_, err := agent.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, agent.Options{CacheDir: t.TempDir(), DriftInterval: d})
		if err == nil || !strings.Contains(err.Error(), "--drift-interval "+d.String()+": give 0 (no drift checks) or at least 1s") {
			t.Errorf("DriftInterval %v: %v, want an error naming --drift-interval and its bounds", d, err)
		}
	}
}
