package agent_test

import (
	"strings"
	"testing"

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
// characters: its release's owner label is a valid, bounded label value, and ownership holds
// through upgrade and uninstall.
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
