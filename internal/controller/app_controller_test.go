package controller_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

const chartDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// appView reads and writes a workspace's apps, charts and their works on the hub.
type appView struct {
	t       *testing.T
	c       client.Client
	ws      string
	cluster string
}

func (v appView) create(objs ...client.Object) {
	v.t.Helper()
	for _, o := range objs {
		if err := v.c.Create(v.t.Context(), o); err != nil {
			v.t.Fatal(err)
		}
	}
}

// managedCluster creates a ManagedCluster of that name reached at url, and its namespace, in a
// ManagedClusterSet of its own name that a binding in ws binds: ws may use it.
func managedCluster(t *testing.T, c client.Client, ws, name, url string) {
	t.Helper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: name}}}
	if url != "" {
		mc.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: url}}
	}
	for _, o := range []client.Object{mc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}, bindingOf(ws, name)} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// bindingOf is the ManagedClusterSetBinding of set in ws.
func bindingOf(ws, set string) *clusterv1beta2.ManagedClusterSetBinding {
	return &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
}

func (v appView) app(name, chart string, change ...func(*v1alpha1.FleetApp)) *v1alpha1.FleetApp {
	a := &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: v.ws, Name: name},
		Spec: v1alpha1.FleetAppSpec{Chart: chart, Cluster: v.cluster, Namespace: "shop", Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}}}
	for _, c := range change {
		c(a)
	}
	return a
}

// appIs waits until app name's status, at its generation, has phase and a Ready condition of
// readyReason, and passes check.
func (v appView) appIs(name string, phase v1alpha1.AppPhase, readyReason string, check func(*v1alpha1.FleetApp) error) *v1alpha1.FleetApp {
	v.t.Helper()
	var a v1alpha1.FleetApp
	testkit.Eventually(v.t, converge, "app "+name+" "+string(phase), func() error {
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.ws, Name: name}, &a); err != nil {
			return err
		}
		if a.Status.ObservedGeneration != a.Generation {
			return fmt.Errorf("observedGeneration %d of %d", a.Status.ObservedGeneration, a.Generation)
		}
		c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ReadyCondition)
		if a.Status.Phase != phase || c == nil || c.Reason != readyReason || (c.Status == metav1.ConditionTrue) != (phase == v1alpha1.AppDeployed) {
			return fmt.Errorf("phase %s, Ready %+v; want %s, %s", a.Status.Phase, c, phase, readyReason)
		}
		if check != nil {
			return check(&a)
		}
		return nil
	})
	return &a
}

// work waits until app name's work exists and passes check, and returns it.
func (v appView) work(name string, check func(*workv1.ManifestWork) error) *workv1.ManifestWork {
	v.t.Helper()
	var w workv1.ManifestWork
	testkit.Eventually(v.t, converge, "work of app "+name, func() error {
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.cluster, Name: "app." + v.ws + "." + name}, &w); err != nil {
			return err
		}
		if check != nil {
			return check(&w)
		}
		return nil
	})
	return &w
}

// manifests decodes a work's manifests by kind.
func manifests(t *testing.T, w *workv1.ManifestWork) (pulls []v1alpha1.OCIPull, releases []v1alpha1.FleetRelease, secrets []corev1.Secret) {
	t.Helper()
	for _, m := range w.Spec.Workload.Manifests {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(m.Raw, &tm); err != nil {
			t.Fatal(err)
		}
		var into any
		switch tm.Kind {
		case "OCIPull":
			pulls = append(pulls, v1alpha1.OCIPull{})
			into = &pulls[len(pulls)-1]
		case "FleetRelease":
			releases = append(releases, v1alpha1.FleetRelease{})
			into = &releases[len(releases)-1]
		case "Secret":
			secrets = append(secrets, corev1.Secret{})
			into = &secrets[len(secrets)-1]
		default:
			t.Fatalf("work %s carries a %s", w.Name, tm.Kind)
		}
		if err := json.Unmarshal(m.Raw, into); err != nil {
			t.Fatal(err)
		}
	}
	return pulls, releases, secrets
}

func feedbackStr(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: &v}}
}

func feedbackInt(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}}
}

// report writes w's status as OCM's work agent would: applied at its generation, with the
// OCIPull's and (when release is not nil) the FleetRelease's feedback.
func (v appView) report(w *workv1.ManifestWork, pull v1alpha1.OCIPullStatus, release *v1alpha1.FleetReleaseStatus) {
	v.t.Helper()
	now := metav1.Now()
	applied := []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "applied", LastTransitionTime: now}}
	pulls, _, _ := manifests(v.t, w)
	p := pulls[0]
	pullValues := []workv1.FeedbackValue{feedbackStr("workspace", p.Spec.Workspace), feedbackStr("repository", p.Spec.Repository),
		feedbackInt("generation", 1), feedbackInt("observedGeneration", 1), feedbackStr("state", string(pull.State)),
		feedbackStr("registry", pull.Registry), feedbackInt("attempts", int64(pull.Attempts))}
	for name, s := range map[string]string{"tag": p.Spec.Tag, "askedDigest": p.Spec.Digest, "digest": pull.Digest, "reason": pull.Reason, "message": pull.Message} {
		if s != "" {
			pullValues = append(pullValues, feedbackStr(name, s))
		}
	}
	status := workv1.ManifestWorkStatus{
		Conditions: []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "applied",
			ObservedGeneration: w.Generation, LastTransitionTime: now}},
		ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 0, Group: "fleet.umkim.io", Version: "v1alpha1", Kind: "OCIPull", Resource: "ocipulls",
				Name: p.Name, Namespace: "fleet-system"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: pullValues}, Conditions: applied,
		}}},
	}
	if release != nil {
		status.ResourceStatus.Manifests = append(status.ResourceStatus.Manifests, workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 1, Group: "fleet.umkim.io", Version: "v1alpha1", Kind: "FleetRelease", Resource: "fleetreleases",
				Name: p.Name, Namespace: "fleet-system"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{feedbackInt("generation", 1), feedbackInt("observedGeneration", release.ObservedGeneration),
				feedbackStr("phase", string(release.Phase)), feedbackInt("revision", int64(release.Revision)), feedbackStr("digest", release.Digest),
				feedbackStr("chart", release.Chart), feedbackStr("message", release.Message)}},
			Conditions: applied,
		})
	}
	err := retryStatus(v, w, func(w *workv1.ManifestWork) { w.Status = status })
	if err != nil {
		v.t.Fatal(err)
	}
}

// retryStatus re-reads w and writes its status through the status subresource until no conflict.
func retryStatus(v appView, w *workv1.ManifestWork, change func(*workv1.ManifestWork)) error {
	for {
		if err := v.c.Get(v.t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		change(w)
		err := v.c.Status().Update(v.t.Context(), w)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// TestApps: an app on a cluster that no join joins to a site waits (Pending, NotJoined, no work)
// until a join names the cluster; its work then carries the chart's OCIPull (tag, then the pinned digest), a
// FleetRelease with the uninstall finalizer and, only when asked, the values Secret's one key;
// its phase follows the work's feedback (none: Pending; WaitingForArtifact; Deployed with the
// revision); the chart counts its apps and takes the digest pulled; a missing chart or Secret is
// Pending with its reason; steady state writes nothing; deleting the app waits for the work to go,
// then drops the finalizer.
func TestApps(t *testing.T) {
	const ws, cluster = "apps-ws", "app-01"
	_, c := startHub(t)
	ctx := t.Context()
	v := appView{t, c, ws, cluster}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "")
	defer runControllers(t, sharedHub.Config, "apps")()

	start := time.Now()
	v.create(&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"},
		Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}}, v.app("web", "hello"))
	// The cluster is not joined to a site: the app waits, with no work, and says what to create.
	notJoined := `cluster "app-01" is not joined to a site: no FleetClusterJoin names it; create one in workspace apps-ws (fleet_cluster_join) naming it, and the app is delivered once it is`
	v.appIs("web", v1alpha1.AppPending, v1alpha1.ReasonNotJoined, func(a *v1alpha1.FleetApp) error {
		if d := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.DeliveredCondition); d == nil || d.Status != metav1.ConditionFalse || d.Reason != v1alpha1.ReasonNotJoined || d.Message != notJoined {
			return fmt.Errorf("Delivered %+v, want False/NotJoined %q", d, notJoined)
		}
		if a.Status.Message != notJoined || a.Status.WorkName != "" {
			return fmt.Errorf("message %q, workName %q", a.Status.Message, a.Status.WorkName)
		}
		return nil
	})
	time.Sleep(time.Second) // the app waits: still no work
	if err := c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: "app." + ws + ".web"}, &workv1.ManifestWork{}); !apierrors.IsNotFound(err) {
		t.Fatalf("work of an app on a cluster no join joins: %v, want none", err)
	}
	// Joined (the join's own status does not matter to the app): the work is delivered.
	v.create(&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}})
	w := v.work("web", nil)
	if l := w.Labels; l[hub.ManagedByLabel] != hub.ControllerManager || l[hub.WorkspaceLabel] != ws || l[hub.ComponentLabel] != "app" {
		t.Errorf("work labels %v", l)
	}
	pulls, releases, secrets := manifests(t, w)
	if len(pulls) != 1 || len(releases) != 1 || len(secrets) != 0 {
		t.Fatalf("work carries %d pulls, %d releases, %d secrets; want 1, 1, 0", len(pulls), len(releases), len(secrets))
	}
	if p := pulls[0]; p.Namespace != "fleet-system" || p.Spec != (v1alpha1.OCIPullSpec{Workspace: ws, Repository: "charts/hello", Tag: "0.1.0"}) {
		t.Errorf("pull %s/%s %+v", p.Namespace, p.Name, p.Spec)
	}
	rel := releases[0]
	if rel.Spec.Pull != pulls[0].Name || rel.Spec.ReleaseName != "web" || rel.Spec.Namespace != "shop" || string(rel.Spec.Values.Raw) != `{"replicas":2}` ||
		rel.Spec.ValuesSecretRef != nil || strings.Join(rel.Finalizers, ",") != v1alpha1.UninstallFinalizer {
		t.Errorf("release %+v finalizers %v", rel.Spec, rel.Finalizers)
	}
	a := v.appIs("web", v1alpha1.AppPending, "Pending", func(a *v1alpha1.FleetApp) error {
		if a.Status.WorkName != w.Name || !controllerutil.ContainsFinalizer(a, "fleet.umkim.io/app") {
			return fmt.Errorf("workName %q finalizers %v", a.Status.WorkName, a.Finalizers)
		}
		return nil
	})
	if d := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.DeliveredCondition); d == nil || d.Reason != "WorkPending" {
		t.Errorf("Delivered %+v", d)
	}
	chartIs := func(apps int32, digest string) {
		t.Helper()
		testkit.Eventually(t, converge, "chart hello status", func() error {
			var ch v1alpha1.FleetChart
			if err := c.Get(ctx, types.NamespacedName{Namespace: ws, Name: "hello"}, &ch); err != nil {
				return err
			}
			if ch.Status.Apps != apps || ch.Status.Digest != digest || ch.Status.ObservedGeneration != ch.Generation {
				return fmt.Errorf("status %+v, want %d apps, digest %q", ch.Status, apps, digest)
			}
			return nil
		})
	}
	chartIs(1, "")
	t.Logf("work and status in %v", time.Since(start))

	// The cluster's agent reports: the chart is missing at the registry, then pulled and deployed.
	v.report(w, v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullWaitingForArtifact, Registry: "mirror-eu", Reason: "NotFound", Attempts: 3, Message: "manifest unknown"}, nil)
	v.appIs("web", v1alpha1.AppWaitingForArtifact, "WaitingForArtifact", func(a *v1alpha1.FleetApp) error {
		if a.Status.Registry != "mirror-eu" || a.Status.Reason != "NotFound" || a.Status.Attempts != 3 || !strings.Contains(a.Status.Message, "charts/hello:0.1.0") {
			return fmt.Errorf("status %+v", a.Status)
		}
		if d := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.DeliveredCondition); d == nil || d.Reason != "WorkApplied" {
			return fmt.Errorf("Delivered %+v", d)
		}
		return nil
	})
	v.report(w, v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Registry: "mirror-eu", Digest: chartDigest},
		&v1alpha1.FleetReleaseStatus{ObservedGeneration: 1, Phase: v1alpha1.ReleaseDeployed, Revision: 1, Digest: chartDigest, Chart: "hello-0.1.0"})
	v.appIs("web", v1alpha1.AppDeployed, "Deployed", func(a *v1alpha1.FleetApp) error {
		if a.Status.Revision != 1 || a.Status.Digest != chartDigest || a.Status.Reason != "" || !strings.Contains(a.Status.Message, "hello-0.1.0 revision 1") || a.Status.ChartGeneration != 1 {
			return fmt.Errorf("status %+v", a.Status)
		}
		return nil
	})
	chartIs(1, chartDigest)

	// Steady state: nothing more is written.
	time.Sleep(2 * time.Second)
	before := writes("", "")
	time.Sleep(3 * time.Second)
	if after := writes("", ""); after != before {
		t.Errorf("steady state wrote %v times", after-before)
	}

	// Pinning the digest pulls by digest; the new work generation is not reported yet.
	var ch v1alpha1.FleetChart
	ch.Namespace, ch.Name = ws, "hello"
	testkit.Update(t, c, &ch, func(ch *v1alpha1.FleetChart) { ch.Spec.Version, ch.Spec.Digest = "", chartDigest })
	v.work("web", func(w *workv1.ManifestWork) error {
		if pulls, _, _ := manifests(t, w); pulls[0].Spec.Digest != chartDigest || pulls[0].Spec.Tag != "" {
			return fmt.Errorf("pull %+v", pulls[0].Spec)
		}
		return nil
	})
	// The app's status describes the new chart (its generation) and waits for its pull.
	v.appIs("web", v1alpha1.AppPending, "Pending", func(a *v1alpha1.FleetApp) error {
		if a.Status.ChartGeneration != ch.Generation || ch.Generation != 2 {
			return fmt.Errorf("chartGeneration %d, chart's generation %d", a.Status.ChartGeneration, ch.Generation)
		}
		return nil
	})

	// A values Secret: missing, then present; only its key goes, and never into the status.
	const password = "s3cret-value"
	v.create(v.app("api", "hello", func(a *v1alpha1.FleetApp) {
		a.Spec.ValuesSecretRef = &v1alpha1.SecretKeyRef{Name: "api-values", Key: "values.yaml"}
	}), v.app("orphan", "no-such-chart"))
	v.appIs("api", v1alpha1.AppPending, "ValuesSecretNotFound", nil)
	v.appIs("orphan", v1alpha1.AppPending, "ChartNotFound", nil)
	v.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "api-values"},
		Data: map[string][]byte{"values.yaml": []byte("password: " + password + "\n"), "other": []byte("kept on the hub")}})
	api := v.app("api", "")
	testkit.Update(t, c, api, func(a *v1alpha1.FleetApp) { a.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3}`)} }) // the Secret is read on the app's next reconcile
	w = v.work("api", nil)
	_, releases, secrets = manifests(t, w)
	if len(secrets) != 1 || len(secrets[0].Data) != 1 || string(secrets[0].Data["values.yaml"]) != "password: "+password+"\n" || secrets[0].Namespace != "fleet-system" {
		t.Errorf("values secret %s/%s with %d keys", secrets[0].Namespace, secrets[0].Name, len(secrets[0].Data))
	}
	if ref := releases[0].Spec.ValuesSecretRef; ref == nil || ref.Name != secrets[0].Name || ref.Key != "values.yaml" {
		t.Errorf("release valuesSecretRef %+v", ref)
	}
	api = v.appIs("api", v1alpha1.AppPending, "Pending", nil)
	if raw, _ := json.Marshal(api.Status); strings.Contains(string(raw), password) {
		t.Error("the app's status carries the Secret's value")
	}
	chartIs(2, chartDigest)

	// Deleting the app deletes its work and waits until the work is gone (here a finalizer stands
	// in for the agent's uninstall), then drops its finalizer.
	testkit.Update(t, c, w, func(w *workv1.ManifestWork) { w.Finalizers = append(w.Finalizers, "test.fleet.umkim.io/agent") })
	if err := c.Delete(ctx, api); err != nil {
		t.Fatal(err)
	}
	v.work("api", func(w *workv1.ManifestWork) error {
		if w.DeletionTimestamp.IsZero() {
			return fmt.Errorf("work %s not deleted", w.Name)
		}
		return nil
	})
	time.Sleep(time.Second) // the app must still be there, its finalizer waiting for the work
	if err := c.Get(ctx, client.ObjectKeyFromObject(api), api); err != nil || !controllerutil.ContainsFinalizer(api, "fleet.umkim.io/app") {
		t.Fatalf("app while its work is deleted: %v, finalizers %v", err, api.Finalizers)
	}
	testkit.Update(t, c, w, func(w *workv1.ManifestWork) { w.Finalizers = nil })
	testkit.Eventually(t, converge, "app api gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(api), api); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	chartIs(1, chartDigest)
	t.Logf("done in %v", time.Since(start))
}

// TestAppsAndRoutesWithGeneratedRBAC runs the apps and app-routes reconcilers as a ServiceAccount
// that holds only the generated ClusterRole (config/rbac/role.yaml): an app with a values Secret
// gets its work and the chart its count, a hub-mode route its work and ConfigMap, and deleting
// both removes what they made.
func TestAppsAndRoutesWithGeneratedRBAC(t *testing.T) {
	const ws, cluster, sa, ns = "rbac-apps-ws", "rbac-app-01", "fleet-controller-apps", "kube-system"
	h, c := startHub(t)
	ctx := t.Context()
	v := routeView{appView{t, c, ws, cluster}}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	gatewayNamespace(t, c)
	managedCluster(t, c, ws, cluster, "https://192.0.2.20:6443")
	defer runControllers(t, roleConfig(t, h, c, "rbac-apps-test", sa, ns), "apps,app-routes")()

	v.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "web-values"}, Data: map[string][]byte{"values.yaml": []byte("a: 1\n")}},
		&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"}, Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}},
		v.app("web", "hello", func(a *v1alpha1.FleetApp) {
			a.Spec.ValuesSecretRef = &v1alpha1.SecretKeyRef{Name: "web-values", Key: "values.yaml"}
		}),
		&v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "berlin"},
			Spec: v1alpha1.FleetSiteSpec{HubGateway: &v1alpha1.HubGateway{Enabled: true, Domain: "apps.example.com"}}},
		&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}},
		v.route("web", "web", v1alpha1.RouteHub, "web.apps.example.com", nil))
	w := v.work("web", nil)
	if _, _, secrets := manifests(t, w); len(secrets) != 1 {
		t.Errorf("work carries %d Secrets, want 1", len(secrets))
	}
	v.appIs("web", v1alpha1.AppPending, "Pending", nil)
	testkit.Eventually(t, converge, "chart hello counts its app", func() error {
		var ch v1alpha1.FleetChart
		if err := c.Get(ctx, types.NamespacedName{Namespace: ws, Name: "hello"}, &ch); err != nil {
			return err
		}
		if ch.Status.Apps != 1 {
			return fmt.Errorf("apps %d", ch.Status.Apps)
		}
		return nil
	})
	gw := controller.DefaultGatewayNamespace
	v.routeIs("web", "True/Published", gw+"/"+controller.GatewayName(ws, "web"), "http://web.apps.example.com/", "192.0.2.20")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gw, Name: controller.GatewayName(ws, "web")}}
	for _, o := range []client.Object{v.route("web", "", "", "", nil), v.app("web", "")} {
		if err := c.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		v.gone(o)
	}
	v.gone(cm)
	v.gone(w)
	v.gone(&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "route." + ws + ".web"}})
}
