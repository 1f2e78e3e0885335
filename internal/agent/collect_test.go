package agent_test

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
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

// TestWorkspaceAccessCollected: the agent deletes a workspace's RoleBinding in a namespace when
// the workspace's last release there goes, and its ServiceAccount when its last release on the
// cluster goes; another workspace's ServiceAccount and binding, a RoleBinding made by hand, and
// one of the agent's name made by hand (without the agent's label) stay. One app's name is 200
// characters: its release's owner label is a valid, bounded label value, an app named like that
// label is refused the release, and ownership holds through upgrade and uninstall.
func TestWorkspaceAccessCollected(t *testing.T) {
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/hello", testbed.HelloChart("hello", "0.1.0"))
	for _, ws := range []string{"gc-one", "gc-two"} {
		putChain(t, c, ocichain.Chain{Workspace: ws, Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
		newPull(t, c, ocichain.Namespace, ws, v1alpha1.OCIPullSpec{Workspace: ws, Repository: "charts/hello", Tag: "0.1.0"})
	}
	runAgent(t)
	one, two := agent.WorkspaceServiceAccount("gc-one"), agent.WorkspaceServiceAccount("gc-two")

	// By hand: a RoleBinding of another name in gc-a, and, in gc-e (the administrator's namespace
	// for gc-one), one of the agent's name without its label, which the agent then uses as it is.
	for _, ns := range []string{"gc-a", "gc-e"} {
		if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1alpha1.ReleaseWorkspaceLabel: "gc-one"}}}); err != nil {
			t.Fatal(err)
		}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ocichain.Namespace, Name: one}}
	role := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agent.DefaultWorkspaceRole}
	byHand := []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "gc-a", Name: "made-by-hand"}, Subjects: subject, RoleRef: role},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "gc-e", Name: one}, Subjects: subject, RoleRef: role},
	}
	for _, rb := range byHand {
		if err := c.Create(t.Context(), rb); err != nil {
			t.Fatal(err)
		}
	}

	long := strings.Repeat("a-very-long-app-name-", 10)[:200]
	newRelease := func(name, ws, app, namespace string) *v1alpha1.FleetRelease {
		t.Helper()
		rel := &v1alpha1.FleetRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: name},
			Spec: v1alpha1.FleetReleaseSpec{Workspace: ws, App: app, Pull: ws, ReleaseName: "web", Namespace: namespace,
				Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"` + name + `"}`)}},
		}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteRelease(t, c, rel) })
		waitRelease(t, c, rel, name+" deployed", deployed(1, 1))
		return rel
	}
	relA := newRelease("gc-a", "gc-one", long, "gc-a")
	relA2 := newRelease("gc-a2", "gc-one", "other", "gc-a2") // a second namespace ...
	relB := newRelease("gc-b", "gc-one", "web", "gc-b")
	relE := newRelease("gc-e", "gc-one", "web", "gc-e")
	relD := newRelease("gc-d", "gc-two", "web", "gc-d")
	deleteRelease(t, c, relA2)

	// The 200-character app name: a valid label value of at most 63 characters, the release the app's.
	label := helmLabels(t, c, "gc-a", "web")[v1alpha1.ReleaseAppLabel]
	if len(label) > v1alpha1.MaxLabel || label != v1alpha1.ReleaseOwner("gc-one", long)[v1alpha1.ReleaseAppLabel] || !strings.HasPrefix(label, "a-very-long-app-name-") {
		t.Errorf("owner label of the 200-character app: %q (%d characters), want its bounded form", label, len(label))
	}
	// An app named like that label is another app: refused the release, which stays as it is.
	lookalike := &v1alpha1.FleetRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "gc-lookalike"},
		Spec: v1alpha1.FleetReleaseSpec{Workspace: "gc-one", App: label, Pull: "gc-one", ReleaseName: "web", Namespace: "gc-a",
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"lookalike"}`)}}}
	if err := c.Create(t.Context(), lookalike); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, lookalike) })
	waitRelease(t, c, lookalike, "the look-alike app refused", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleaseOwnedElsewhere {
			return fmt.Errorf("phase %q (%s), want OwnedElsewhere", s.Phase, s.Message)
		}
		return nil
	})
	deleteRelease(t, c, lookalike)
	wantConfigMap(t, c, "gc-a", "web-hello", "gc-a")

	testkit.Update(t, c, relA, func(r *v1alpha1.FleetRelease) { r.Spec.Values.Raw = []byte(`{"greeting":"again"}`) })
	waitRelease(t, c, relA, "the long-named app's release upgraded, still its own", deployed(2, 2))
	wantConfigMap(t, c, "gc-a", "web-hello", "again")

	exists := func(obj client.Object, ns, name string) bool {
		t.Helper()
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	want := func(step string, sa map[string]bool, rbs map[string]bool) {
		t.Helper()
		for name, ok := range sa {
			if got := exists(&corev1.ServiceAccount{}, ocichain.Namespace, name); got != ok {
				t.Errorf("%s: ServiceAccount %s exists %v, want %v", step, name, got, ok)
			}
		}
		for key, ok := range rbs {
			ns, name, _ := strings.Cut(key, "/")
			if got := exists(&rbacv1.RoleBinding{}, ns, name); got != ok {
				t.Errorf("%s: RoleBinding %s exists %v, want %v", step, key, got, ok)
			}
		}
	}
	want("a namespace's last release gone", map[string]bool{one: true, two: true},
		map[string]bool{"gc-a2/" + one: false, "gc-a/" + one: true, "gc-b/" + one: true, "gc-e/" + one: true, "gc-d/" + two: true})

	deleteRelease(t, c, relA)
	if got := helmRevisions(t, c, "gc-a", "web"); len(got) != 0 {
		t.Errorf("the long-named app's release after its FleetRelease went: revisions %v, want none (uninstalled as its own)", got)
	}
	deleteRelease(t, c, relE)
	want("gc-a's and gc-e's releases gone", map[string]bool{one: true, two: true},
		map[string]bool{"gc-a/" + one: false, "gc-a/made-by-hand": true, "gc-e/" + one: true, "gc-b/" + one: true, "gc-d/" + two: true})

	deleteRelease(t, c, relB)
	want("the workspace's last release gone", map[string]bool{one: false, two: true},
		map[string]bool{"gc-b/" + one: false, "gc-a/made-by-hand": true, "gc-e/" + one: true, "gc-d/" + two: true})

	// The workspace comes back: the agent makes its account and binding again.
	relB = newRelease("gc-b-again", "gc-one", "web", "gc-b")
	wantWorkspaceAccess(t, c, "gc-one", "gc-b")
	deleteRelease(t, c, relB)
	deleteRelease(t, c, relD)
	want("every release gone", map[string]bool{one: false, two: false},
		map[string]bool{"gc-b/" + one: false, "gc-d/" + two: false, "gc-a/made-by-hand": true, "gc-e/" + one: true})
}

// TestReleaseLabelledBeforeTheHash: a release an older agent installed carries the workspace and
// app labels but no app-hash label; it is still the app's, so the agent upgrades it (no adopt
// needed) and labels it the new way; another app of the workspace is refused it.
func TestReleaseLabelledBeforeTheHash(t *testing.T) {
	const target = "old-labels"
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/hello", testbed.HelloChart("hello", "0.1.0"))
	putChain(t, c, ocichain.Chain{Workspace: "old", Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	newPull(t, c, ocichain.Namespace, "old", v1alpha1.OCIPullSpec{Workspace: "old", Repository: "charts/hello", Tag: "0.1.0"})
	runAgent(t)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target, Labels: map[string]string{v1alpha1.ReleaseWorkspaceLabel: "old"}}}); err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.LoadArchive(strings.NewReader(string(testbed.HelloChart("hello", "0.1.0"))))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := agent.HelmConfig(spoke.Config, target)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "web", target
	install.Labels = map[string]string{v1alpha1.ReleaseWorkspaceLabel: "old", v1alpha1.ReleaseAppLabel: "web"} // as agents before the hash label did
	if _, err := install.RunWithContext(t.Context(), chrt, map[string]any{"greeting": "old"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = action.NewUninstall(cfg).Run("web") })

	newRelease := func(name, app string) *v1alpha1.FleetRelease {
		rel := &v1alpha1.FleetRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: name},
			Spec: v1alpha1.FleetReleaseSpec{Workspace: "old", App: app, Pull: "old", ReleaseName: "web", Namespace: target,
				Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"` + app + `"}`)}},
		}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteRelease(t, c, rel) })
		return rel
	}
	other := newRelease("old-api", "api")
	s := waitRelease(t, c, other, "another app refused the old release", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleaseOwnedElsewhere {
			return fmt.Errorf("phase %q (%s)", s.Phase, s.Message)
		}
		return nil
	})
	if !strings.Contains(s.Message, `app "web" of workspace "old"`) {
		t.Errorf("refusal %q does not name the owner app web", s.Message)
	}
	deleteRelease(t, c, other)

	rel := newRelease("old-web", "web")
	waitRelease(t, c, rel, "the old release upgraded as the app's own", deployed(2, 1))
	wantConfigMap(t, c, target, "web-hello", "web")
	if got, want := helmLabels(t, c, target, "web"), v1alpha1.ReleaseOwner("old", "web"); !hasLabels(got, want) {
		t.Errorf("labels after the upgrade %v, want the new owner labels %v", got, want)
	}
	deleteRelease(t, c, rel)
	if got := helmRevisions(t, c, target, "web"); len(got) != 0 {
		t.Errorf("revisions after the app went: %v, want none", got)
	}
}
