package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// A FleetRelease waits for its OCIPull, then the agent installs the chart it pulled (the
// finalizer added), leaves a steady release alone, upgrades it for new values, from spec and
// from a values Secret that wins over them, and uninstalls it when the FleetRelease is deleted.
func TestReleaseLifecycle(t *testing.T) {
	const target = "app-release" // the release's namespace, which the agent creates
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	m := reg.PushChartT(t, "charts/hello", testbed.HelloChart("hello", "0.1.0"))
	putChain(t, c, ocichain.Chain{Workspace: "release", Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	runAgent(t)

	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "hello"},
		Spec: v1alpha1.FleetReleaseSpec{Workspace: "release", App: "hello", Pull: "hello", ReleaseName: "web", Namespace: target,
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hi"}`)}},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, rel) }) // before the agent stops, if the test did not
	s := waitRelease(t, c, rel, "pending without its pull", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleasePending {
			return fmt.Errorf("phase %q", s.Phase)
		}
		return nil
	})
	if !strings.Contains(s.Message, "the OCIPull fleet-system/hello is not on the cluster") || s.ObservedGeneration != 1 || s.Revision != 0 {
		t.Errorf("pending status: %+v; want a message naming the missing OCIPull, observedGeneration 1, no revision", s)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), rel); err != nil || !slices.Contains(rel.Finalizers, v1alpha1.UninstallFinalizer) {
		t.Errorf("finalizers %v (%v); want %s added by the agent", rel.Finalizers, err, v1alpha1.UninstallFinalizer)
	}

	pull := newPull(t, c, ocichain.Namespace, "hello", v1alpha1.OCIPullSpec{Workspace: "release", Repository: "charts/hello", Tag: "0.1.0"})
	s = waitRelease(t, c, rel, "installed", deployed(1, 1))
	if s.Digest != m.Digest.String() || s.Chart != "hello-0.1.0" || s.Message != "" {
		t.Errorf("deployed status: %+v; want digest %s, chart hello-0.1.0, no message", s, m.Digest)
	}
	wantConfigMap(t, c, target, "web-hello", "hi")
	if err := c.Get(t.Context(), client.ObjectKey{Name: target}, &corev1.Namespace{}); err != nil {
		t.Errorf("namespace %s, created by the install: %v", target, err)
	}
	wantWorkspaceAccess(t, c, "release", target)
	if got := helmLabels(t, c, target, "web"); got[v1alpha1.ReleaseWorkspaceLabel] != "release" || got[v1alpha1.ReleaseAppLabel] != "hello" {
		t.Errorf("release Secret labels %v, want the owner workspace release, app hello", got)
	}
	var svc corev1.Service
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: target, Name: "web"}, &svc); err != nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 {
		t.Errorf("Service %s/web: %v, ports %+v; want port 80", target, err, svc.Spec.Ports)
	}

	// Steady: an event (the pull's labels change) reconciles the release, which writes nothing
	// and runs no Helm operation (Helm's history keeps one revision).
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), rel); err != nil {
		t.Fatal(err)
	}
	version := rel.ResourceVersion
	testkit.Update(t, c, pull, func(p *v1alpha1.OCIPull) { metav1.SetMetaDataLabel(&p.ObjectMeta, "touched", "yes") })
	time.Sleep(2 * time.Second)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), rel); err != nil || rel.ResourceVersion != version {
		t.Errorf("steady release written: resourceVersion %s, was %s (%v); status %+v", rel.ResourceVersion, version, err, rel.Status)
	}
	if got := helmRevisions(t, c, target, "web"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("Helm revisions of a steady release: %v, want [1]", got)
	}

	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) { r.Spec.Values.Raw = []byte(`{"greeting":"bonjour"}`) })
	waitRelease(t, c, rel, "upgraded for new values", deployed(2, 2))
	wantConfigMap(t, c, target, "web-hello", "bonjour")

	const secretValue = "from-the-secret"
	values := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "hello-values"},
		Data:       map[string][]byte{"values.yaml": []byte("greeting: " + secretValue + "\n")},
	}
	if err := c.Create(t.Context(), values); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), values) })
	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) {
		r.Spec.ValuesSecretRef = &v1alpha1.SecretKeyRef{Name: "hello-values", Key: "values.yaml"}
	})
	s = waitRelease(t, c, rel, "upgraded for the values Secret", deployed(3, 3))
	wantConfigMap(t, c, target, "web-hello", secretValue)

	// A change of the Secret alone (no new generation) upgrades the release too.
	testkit.Update(t, c, values, func(s *corev1.Secret) { s.Data["values.yaml"] = []byte(`{"greeting": "json-secret"}`) })
	waitRelease(t, c, rel, "upgraded for the Secret's new content", deployed(4, 3))
	wantConfigMap(t, c, target, "web-hello", "json-secret")

	deleteRelease(t, c, rel)
	for name, obj := range map[string]client.Object{"web-hello": &corev1.ConfigMap{}, "web": &corev1.Service{}} {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: target, Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s/%s after the uninstall: %v, want NotFound", obj, target, name, err)
		}
	}
	if got := helmRevisions(t, c, target, "web"); len(got) != 0 {
		t.Errorf("Helm revisions after the uninstall: %v, want none", got)
	}
}

// deployed accepts a status Deployed at revision for generation.
func deployed(revision int32, generation int64) func(v1alpha1.FleetReleaseStatus) error {
	return func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleaseDeployed || s.Revision != revision || s.ObservedGeneration != generation {
			return fmt.Errorf("phase %q, revision %d, observedGeneration %d (message %q); want Deployed, %d, %d",
				s.Phase, s.Revision, s.ObservedGeneration, s.Message, revision, generation)
		}
		return nil
	}
}

// waitRelease polls the release until check accepts its status, and returns it.
func waitRelease(t *testing.T, c client.Client, rel *v1alpha1.FleetRelease, what string, check func(v1alpha1.FleetReleaseStatus) error) v1alpha1.FleetReleaseStatus {
	t.Helper()
	var got v1alpha1.FleetRelease
	testkit.Eventually(t, 30*time.Second, what, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rel), &got); err != nil {
			return err
		}
		return check(got.Status)
	})
	return got.Status
}

// wantConfigMap checks that the ConfigMap ns/name holds greeting.
func wantConfigMap(t *testing.T, c client.Client, ns, name, greeting string) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil || cm.Data["greeting"] != greeting {
		t.Errorf("ConfigMap %s/%s: data %v (%v); want greeting %q", ns, name, cm.Data, err, greeting)
	}
}

// wantWorkspaceAccess checks the workspace's ServiceAccount in fleet-system and its RoleBinding
// to the default workspace role in ns.
func wantWorkspaceAccess(t *testing.T, c client.Client, workspace, ns string) {
	t.Helper()
	name := agent.WorkspaceServiceAccount(workspace)
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ocichain.Namespace, Name: name}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("ServiceAccount %s/%s: %v", ocichain.Namespace, name, err)
	}
	var rb rbacv1.RoleBinding
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rb); err != nil {
		t.Errorf("RoleBinding %s/%s: %v", ns, name, err)
		return
	}
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != agent.DefaultWorkspaceRole || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Kind != rbacv1.ServiceAccountKind || rb.Subjects[0].Namespace != ocichain.Namespace || rb.Subjects[0].Name != name {
		t.Errorf("RoleBinding %s/%s: roleRef %+v, subjects %+v; want ClusterRole %s for ServiceAccount %s/%s",
			ns, name, rb.RoleRef, rb.Subjects, agent.DefaultWorkspaceRole, ocichain.Namespace, name)
	}
}

// helmLabels are the labels of the last release Secret Helm stores for a release in ns.
func helmLabels(t *testing.T, c client.Client, ns, name string) map[string]string {
	t.Helper()
	var secrets corev1.SecretList
	if err := c.List(t.Context(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	var last map[string]string
	newest := 0
	for _, s := range secrets.Items {
		if v, err := strconv.Atoi(s.Labels["version"]); err == nil && v > newest {
			last, newest = s.Labels, v
		}
	}
	return last
}

// helmRevisions lists the revisions Helm stores for a release (its Secrets in ns), sorted.
func helmRevisions(t *testing.T, c client.Client, ns, name string) []string {
	t.Helper()
	var secrets corev1.SecretList
	if err := c.List(t.Context(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range secrets.Items {
		out = append(out, s.Labels["version"])
	}
	slices.Sort(out)
	return out
}

// deleteRelease deletes the release and waits until the agent uninstalled it and let it go.
func deleteRelease(t *testing.T, c client.Client, rel *v1alpha1.FleetRelease) {
	t.Helper()
	if err := c.Delete(context.Background(), rel); apierrors.IsNotFound(err) {
		return
	} else if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the FleetRelease gone after the uninstall", func() error {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(rel), &v1alpha1.FleetRelease{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// A release fails, with a message that says why and quotes no values, when its pull brought no
// chart or its values Secret holds no map of values; deleting a release never installed just
// lets it go.
func TestReleaseFailures(t *testing.T) {
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushT(t, "apps/not-a-chart", "v1", []byte("no chart here"))
	putChain(t, c, ocichain.Chain{Workspace: "release-fail", Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	runAgent(t)
	newPull(t, c, ocichain.Namespace, "not-a-chart", v1alpha1.OCIPullSpec{Workspace: "release-fail", Repository: "apps/not-a-chart", Tag: "v1"})

	const secretValue = "s3cr3t-value"
	values := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "bad-values"},
		Data:       map[string][]byte{"values.yaml": []byte("password: [" + secretValue + "\n")},
	}
	if err := c.Create(t.Context(), values); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), values) })

	for _, tc := range []struct {
		name, want string
		ref        *v1alpha1.SecretKeyRef
	}{
		{"no-chart", "has no layer of media type application/vnd.cncf.helm.chart.content.v1.tar+gzip", nil},
		{"bad-values", "the values Secret fleet-system/bad-values: key values.yaml is not a YAML or JSON map of values", &v1alpha1.SecretKeyRef{Name: "bad-values", Key: "values.yaml"}},
	} {
		rel := &v1alpha1.FleetRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: tc.name, Finalizers: []string{v1alpha1.UninstallFinalizer}},
			Spec:       v1alpha1.FleetReleaseSpec{Workspace: "release-fail", App: tc.name, Pull: "not-a-chart", ReleaseName: tc.name, Namespace: "app-release-fail", ValuesSecretRef: tc.ref},
		}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteRelease(t, c, rel) })
		s := waitRelease(t, c, rel, tc.name+" failed", func(s v1alpha1.FleetReleaseStatus) error {
			if s.Phase != v1alpha1.ReleaseFailed {
				return fmt.Errorf("phase %q (message %q)", s.Phase, s.Message)
			}
			return nil
		})
		if !strings.Contains(s.Message, tc.want) || strings.Contains(s.Message, secretValue) || s.ObservedGeneration != 1 || s.Revision != 0 {
			t.Errorf("%s: status %+v; want a message with %q and no values, observedGeneration 1, no revision", tc.name, s, tc.want)
		}
		deleteRelease(t, c, rel)
	}
}
