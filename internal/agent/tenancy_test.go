package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// The agent (running as its ServiceAccount with the chart's roles only) acts on OCIPulls and
// FleetReleases of its own namespace: in another namespace they get no status and no finalizer,
// while one in fleet-system is reconciled.
func TestOwnNamespaceOnly(t *testing.T) {
	const other = "tenant-elsewhere"
	c := startSpoke(t, other)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/hello", testbed.HelloChart("hello", "0.1.0"))
	putChain(t, c, ocichain.Chain{Workspace: "elsewhere", Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	// A chain Secret in the other namespace too, so that only the namespace makes the difference.
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: ocichain.SecretName("elsewhere")}}
	if err := c.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), foreign) })
	runAgent(t)

	spec := v1alpha1.FleetReleaseSpec{Workspace: "elsewhere", App: "web", Pull: "hello", ReleaseName: "web", Namespace: "app-elsewhere"}
	outside := &v1alpha1.FleetRelease{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "web"}, Spec: spec}
	inside := &v1alpha1.FleetRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "elsewhere-web"}, Spec: spec}
	for _, r := range []*v1alpha1.FleetRelease{outside, inside} {
		if err := c.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { deleteRelease(t, c, inside) })
	t.Cleanup(func() { _ = c.Delete(context.Background(), outside) })
	pullOutside := newPull(t, c, other, "hello", v1alpha1.OCIPullSpec{Workspace: "elsewhere", Repository: "charts/hello", Tag: "0.1.0"})
	pullInside := newPull(t, c, ocichain.Namespace, "hello", v1alpha1.OCIPullSpec{Workspace: "elsewhere", Repository: "charts/hello", Tag: "0.1.0"})

	waitFor(t, c, pullInside, 30*time.Second, "the pull in fleet-system pulled", pulled)
	waitRelease(t, c, inside, "the release in fleet-system deployed", deployed(1, 1))
	time.Sleep(2 * time.Second) // room for an agent that would act on the others
	var p v1alpha1.OCIPull
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pullOutside), &p); err != nil || p.Status.State != "" || p.Status.ObservedGeneration != 0 {
		t.Errorf("OCIPull %s/%s: status %+v (%v); want none: it is outside the agent's namespace", other, p.Name, p.Status, err)
	}
	var r v1alpha1.FleetRelease
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(outside), &r); err != nil || r.Status.Phase != "" || len(r.Finalizers) != 0 {
		t.Errorf("FleetRelease %s/%s: status %+v, finalizers %v (%v); want none: it is outside the agent's namespace", other, r.Name, r.Status, r.Finalizers, err)
	}
}

// clusterRoleChart creates a ConfigMap and a ClusterRole (without rules: creating it needs only
// the right to create ClusterRoles, not the rights it would grant).
const clusterRoleChart = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hello
data:
  greeting: {{ .Values.greeting | quote }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}-cluster-wide
rules: []
`

// Helm acts as the workspace's ServiceAccount: under the default workspace role a chart that
// creates a ClusterRole fails with a forbidden error naming the account; once an administrator
// grants the account ClusterRoles, the release deploys, and its uninstall removes them.
func TestReleaseAsWorkspaceServiceAccount(t *testing.T) {
	const ws, target = "tenant-a", "app-tenant-a"
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/wide", testbed.PackageChart("wide", "0.1.0", clusterRoleChart))
	putChain(t, c, ocichain.Chain{Workspace: ws, Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	runAgent(t)
	newPull(t, c, ocichain.Namespace, "wide", v1alpha1.OCIPullSpec{Workspace: ws, Repository: "charts/wide", Tag: "0.1.0"})

	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "wide"},
		Spec:       v1alpha1.FleetReleaseSpec{Workspace: ws, App: "wide", Pull: "wide", ReleaseName: "wide", Namespace: target},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, rel) })
	account := "system:serviceaccount:" + ocichain.Namespace + ":" + agent.WorkspaceServiceAccount(ws)
	s := waitRelease(t, c, rel, "failed: the workspace may not create ClusterRoles", func(s v1alpha1.FleetReleaseStatus) error {
		if s.Phase != v1alpha1.ReleaseFailed {
			return fmt.Errorf("phase %q (message %q)", s.Phase, s.Message)
		}
		return nil
	})
	if !strings.Contains(s.Message, "forbidden") || !strings.Contains(s.Message, account) || !strings.Contains(s.Message, "clusterroles") {
		t.Errorf("failed release message %q; want a forbidden error on clusterroles naming %s", s.Message, account)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "wide-cluster-wide"}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole wide-cluster-wide: %v, want NotFound", err)
	}
	wantWorkspaceAccess(t, c, ws, target)

	// The administrator widens the workspace's rights: a ClusterRole bound to its account.
	widen := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a-cluster-roles"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: widen.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: widen.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ocichain.Namespace, Name: agent.WorkspaceServiceAccount(ws)}}}
	for _, o := range []client.Object{widen, binding} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		// The uninstall needs the widened rights too: it goes first.
		t.Cleanup(func() { deleteRelease(t, c, rel); _ = c.Delete(context.Background(), o) })
	}
	// A new generation retries at once (else the retry after a failure comes in 30 s). The
	// refused install stored no revision (Helm stops at its check of existing objects), so this
	// is revision 1.
	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) {
		r.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"wide"}`)}
	})
	waitRelease(t, c, rel, "deployed once the role is widened", deployed(1, 2))
	if err := c.Get(t.Context(), client.ObjectKey{Name: "wide-cluster-wide"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("ClusterRole wide-cluster-wide after the widened install: %v", err)
	}
	wantConfigMap(t, c, target, "wide-hello", "wide")

	deleteRelease(t, c, rel)
	if err := c.Get(t.Context(), client.ObjectKey{Name: "wide-cluster-wide"}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole wide-cluster-wide after the uninstall: %v, want NotFound", err)
	}
}

// A release the agent did not install for the app, by hand (the Helm SDK as the cluster's
// administrator) or for another app, is left untouched: the FleetRelease is OwnedElsewhere, the
// revision stays, and deleting the FleetRelease does not uninstall it. With adopt the agent
// upgrades it and records the app as its owner, and then uninstalls it. A workspace cannot
// release into a namespace that is not its own (another workspace's, kube-system): it is not
// bound there.
func TestReleaseOwnedElsewhere(t *testing.T) {
	const target = "app-owned"
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/hello", testbed.HelloChart("hello", "0.1.0"))
	for _, ws := range []string{"owner-one", "owner-two"} {
		putChain(t, c, ocichain.Chain{Workspace: ws, Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	}
	runAgent(t)
	newPull(t, c, ocichain.Namespace, "owned-one", v1alpha1.OCIPullSpec{Workspace: "owner-one", Repository: "charts/hello", Tag: "0.1.0"})
	newPull(t, c, ocichain.Namespace, "owned-two", v1alpha1.OCIPullSpec{Workspace: "owner-two", Repository: "charts/hello", Tag: "0.1.0"})

	// The administrator's namespace, which they let workspace one release to, and a release
	// there by hand: `helm install byhand`.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target, Labels: map[string]string{v1alpha1.ReleaseWorkspaceLabel: "owner-one"}}}
	if err := c.Create(t.Context(), ns); err != nil {
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
	install.ReleaseName, install.Namespace = "byhand", target
	if _, err := install.RunWithContext(t.Context(), chrt, map[string]any{"greeting": "by-hand"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = action.NewUninstall(cfg).Run("byhand") })

	newRelease := func(name, ws, app, namespace, releaseName string, adopt bool, greeting string) *v1alpha1.FleetRelease {
		t.Helper()
		rel := &v1alpha1.FleetRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: name},
			Spec: v1alpha1.FleetReleaseSpec{Workspace: ws, App: app, Pull: "owned-" + strings.TrimPrefix(ws, "owner-"), ReleaseName: releaseName,
				Namespace: namespace, Adopt: adopt, Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"` + greeting + `"}`)}},
		}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteRelease(t, c, rel) })
		return rel
	}
	ownedElsewhere := func(want string) func(v1alpha1.FleetReleaseStatus) error {
		return func(s v1alpha1.FleetReleaseStatus) error {
			if s.Phase != v1alpha1.ReleaseOwnedElsewhere || !strings.Contains(s.Message, want) || s.Revision != 0 {
				return fmt.Errorf("phase %q, revision %d, message %q; want OwnedElsewhere, no revision, a message with %q", s.Phase, s.Revision, s.Message, want)
			}
			return nil
		}
	}
	failedWith := func(want string) func(v1alpha1.FleetReleaseStatus) error {
		return func(s v1alpha1.FleetReleaseStatus) error {
			if s.Phase != v1alpha1.ReleaseFailed || !strings.Contains(s.Message, want) {
				return fmt.Errorf("phase %q, message %q; want Failed with %q", s.Phase, s.Message, want)
			}
			return nil
		}
	}

	// The hand-installed release is refused and left as it is, also once the FleetRelease goes.
	refused := newRelease("owned-refused", "owner-one", "web", target, "byhand", false, "from-the-app")
	waitRelease(t, c, refused, "refused: installed by hand", ownedElsewhere("not installed by fleet-controller agent"))
	deleteRelease(t, c, refused)
	if got := helmRevisions(t, c, target, "byhand"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("revisions of the hand-installed release: %v, want [1] (neither upgraded nor uninstalled)", got)
	}
	wantConfigMap(t, c, target, "byhand-hello", "by-hand")

	// Another app of the workspace may not take over the app's release.
	mine := newRelease("owned-mine", "owner-one", "web", target, "shared", false, "one")
	waitRelease(t, c, mine, "app web's release deployed", deployed(1, 1))
	theirs := newRelease("owned-theirs", "owner-one", "api", target, "shared", false, "api")
	waitRelease(t, c, theirs, "app api refused", ownedElsewhere(`app "web" of workspace "owner-one"`))
	deleteRelease(t, c, theirs)
	if got := helmRevisions(t, c, target, "shared"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("revisions of app web's release after app api's came and went: %v, want [1]", got)
	}
	wantConfigMap(t, c, target, "shared-hello", "one")

	// Workspace two may not release into workspace one's namespace nor into kube-system: it is
	// bound in neither, and nothing of it is installed there.
	for _, namespace := range []string{target, "kube-system"} {
		rel := newRelease("owned-two-"+namespace, "owner-two", "web", namespace, "shared", false, "two")
		waitRelease(t, c, rel, "workspace two refused in "+namespace, failedWith("is not workspace owner-two's"))
		err := c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: agent.WorkspaceServiceAccount("owner-two")}, &rbacv1.RoleBinding{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("RoleBinding of workspace two in %s: %v, want NotFound", namespace, err)
		}
		deleteRelease(t, c, rel)
	}
	if got := helmRevisions(t, c, target, "shared"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("revisions of app web's release after workspace two's came and went: %v, want [1]", got)
	}
	if got := helmRevisions(t, c, "kube-system", "shared"); len(got) != 0 {
		t.Errorf("workspace two's release in kube-system: revisions %v, want none", got)
	}

	// Adopt: the hand-installed release is upgraded and becomes the app's, then uninstalled.
	adopted := newRelease("owned-adopted", "owner-one", "adopter", target, "byhand", true, "adopted")
	waitRelease(t, c, adopted, "adopted", deployed(2, 1))
	wantConfigMap(t, c, target, "byhand-hello", "adopted")
	if got, want := helmLabels(t, c, target, "byhand"), v1alpha1.ReleaseOwner("owner-one", "adopter"); !hasLabels(got, want) {
		t.Errorf("labels of the adopted release %v, want the owner's %v", got, want)
	}
	deleteRelease(t, c, adopted)
	if got := helmRevisions(t, c, target, "byhand"); len(got) != 0 {
		t.Errorf("revisions of the adopted release after its FleetRelease went: %v, want none", got)
	}
}

// hasLabels tells whether got holds every label of want.
func hasLabels(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
