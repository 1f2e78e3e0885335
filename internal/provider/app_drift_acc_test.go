package provider

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// driftChart is a chart whose release is a Deployment <release> of 2 replicas.
const driftChart = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 2
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1.0
`

// TestAccApp_driftRepair runs release drift end to end on real parts and the CLI: a workload
// cluster registered with the suite's hub (its apiserver, OCM's real work agent), the hub's
// routing and apps reconcilers and `fleet-controller agent` (in-process, drift checked every
// second), a registry with the chart. Once the app is deployed, the Deployment's replicas are
// edited on the cluster: the agent reports it, the work's feedback brings it to the FleetApp,
// and a plan (which changes nothing) warns naming the Deployment and repair_drift. An apply with
// repair_drift = true raises repairs once; the agent upgrades the release with the same chart,
// Helm restores the replicas and the drift goes back to 0. A plan with repair_drift still set
// then changes nothing (one repair: Helm has two revisions), and nothing is written while
// steady.
func TestAccApp_driftRepair(t *testing.T) {
	begin := time.Now()
	w := newCLIWorkdir(t)
	fl := startAccFleet(t, []string{"routing", "apps"}, func(o *agent.Options) { o.DriftInterval = time.Second })
	ws, cluster, spoke, logs, hc := fl.ws, fl.cluster, fl.spoke, fl.logs, fl.hub
	fl.registry.PushChartT(t, "fleet/charts/drift", testbed.PackageChart("drift", "0.1.0", driftChart))
	sc, err := client.New(spoke.Config, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	config := func(body string) string {
		return fmt.Sprintf(`
resource "fleet_chart" "c" {
  name       = "drift"
  workspace  = %[1]q
  repository = "charts/drift"
  version    = "0.1.0"
}

resource "fleet_app" "a" {
  name      = "web"
  workspace = %[1]q
  chart     = fleet_chart.c.name
  cluster   = %[2]q
  namespace = "drift"
  wait_for  = "deployed"
%[3]s}
`, ws, cluster, body)
	}
	explain := func() string { return spoke.AgentLog() + "\n" + logs.String() }
	var app v1alpha1.FleetApp
	appDrift := func(what string, count int32) {
		t.Helper()
		start := time.Now()
		testkit.Eventually(t, 2*time.Minute, "FleetApp drift: "+what, func() error {
			if err := hc.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: "web"}, &app); err != nil {
				return err
			}
			if s := app.Status; s.ObservedGeneration != app.Generation || s.Phase != v1alpha1.AppDeployed || s.Drift == nil || s.Drift.Count != count {
				return fmt.Errorf("generation %d, status %+v drift %+v", app.Generation, s, s.Drift)
			}
			return nil
		}, explain)
		t.Logf("FleetApp drift %s (%d) after %v", what, count, time.Since(start).Round(time.Millisecond))
	}

	w.apply(config(""))
	appDrift("checked, none", 0)

	deployment := client.ObjectKey{Namespace: "drift", Name: "web"}
	testkit.Update(t, sc, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name}}, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	appDrift("the edited Deployment", 1)
	if want := []v1alpha1.ObjectRef{{Kind: "Deployment", Namespace: "drift", Name: "web"}}; !slices.Equal(app.Status.Drift.Objects, want) {
		t.Errorf("FleetApp drift objects %+v, want %+v", app.Status.Drift.Objects, want)
	}

	const drifted = "Release drifted on the cluster"
	d, failed := w.plan(config(""))
	expectWarnings(t, "drifted", d, failed, []string{drifted}, map[string][]string{drifted: {
		fmt.Sprintf("FleetApp %s/web: 1 object(s) of Helm release web in namespace drift on cluster %q", ws, cluster),
		"Deployment drift/web.", "Apply with repair_drift = true"}})
	if _, err := w.run("plan", "-detailed-exitcode", "-input=false", "-no-color"); err != nil {
		t.Errorf("a plan of the drifted app without repair_drift must change nothing: %v", err)
	}

	w.apply(config("  repair_drift = true\n"))
	appDrift("repaired", 0)
	var dep appsv1.Deployment
	if err := sc.Get(t.Context(), deployment, &dep); err != nil || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment %s after the repair: replicas %v (%v), want 2 as the chart sets", deployment, dep.Spec.Replicas, err)
	}
	if app.Spec.Repairs != 1 {
		t.Errorf("FleetApp spec.repairs %d after one repair, want 1", app.Spec.Repairs)
	}

	d, failed = w.plan(config("  repair_drift = true\n"))
	expectWarnings(t, "repaired", d, failed, []string{drifted}, nil)
	if _, err := w.run("plan", "-detailed-exitcode", "-input=false", "-no-color"); err != nil {
		t.Errorf("a plan with repair_drift of the repaired app must change nothing: %v", err)
	}

	// Steady: drift checks every second, and neither the FleetRelease nor the FleetApp is written.
	var rel v1alpha1.FleetRelease
	relKey := client.ObjectKey{Namespace: "fleet-system", Name: app.Status.WorkName}
	if err := sc.Get(t.Context(), relKey, &rel); err != nil {
		t.Fatal(err)
	}
	relVersion, appVersion := rel.ResourceVersion, app.ResourceVersion
	time.Sleep(4 * time.Second)
	if err := sc.Get(t.Context(), relKey, &rel); err != nil || rel.ResourceVersion != relVersion {
		t.Errorf("FleetRelease written while steady: resourceVersion %s, was %s (%v)", rel.ResourceVersion, relVersion, err)
	}
	if err := hc.Get(t.Context(), client.ObjectKeyFromObject(&app), &app); err != nil || app.ResourceVersion != appVersion {
		t.Errorf("FleetApp written while steady: resourceVersion %s, was %s (%v)", app.ResourceVersion, appVersion, err)
	}
	var revisions corev1.SecretList
	if err := sc.List(t.Context(), &revisions, client.InNamespace("drift"), client.MatchingLabels{"owner": "helm", "name": "web"}); err != nil || len(revisions.Items) != 2 {
		names := []string{}
		for _, s := range revisions.Items {
			names = append(names, s.Name)
		}
		t.Errorf("Helm revisions of the release: %s (%v), want 2: the install and one repair", strings.Join(names, ", "), err)
	}
	w.destroy()
	t.Logf("TestAccApp_driftRepair: %v in all", time.Since(begin).Round(time.Millisecond))
}
