package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// Helm acts for a workspace as the workspace's ServiceAccount, fleet-workspace-<workspace> in the
// agent's namespace, which the agent creates: one account per workspace and cluster, whatever
// the number of its apps, so it cannot ride in an app's ManifestWork (the first work deleted
// would delete it under the others). In each namespace a workspace releases to, a RoleBinding of
// the same name binds it the workspace ClusterRole (--workspace-role, the chart's
// agent.workspaceRole). The agent itself only creates these and impersonates the accounts.
//
// A release namespace is the workspace's when it carries the label fleet.umkim.io/workspace with
// the workspace's name: the agent sets it on the namespaces it creates, an administrator may set
// it on others. The agent binds a workspace nowhere else, so that no workspace gets rights in
// kube-system or in another workspace's namespace by naming it.
//
// When a FleetRelease goes, the agent deletes what no other release needs (collect): the
// RoleBinding in its namespace once the workspace has no other release there, the ServiceAccount
// once the workspace has no other release on the cluster. It deletes only objects of its own
// names that carry the workspace label it sets; a RoleBinding or ServiceAccount made by hand stays.

// +kubebuilder:rbac:groups="",namespace=fleet-system,resources=serviceaccounts,verbs=get;create;delete;impersonate
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=fleet-workspace

// DefaultWorkspaceRole is the ClusterRole bound to each workspace's ServiceAccount in the
// namespaces of its releases, which the chart creates (agent.workspaceRole).
const DefaultWorkspaceRole = "fleet-workspace"

// workspacePrefix starts the names of a workspace's ServiceAccount and RoleBindings. A workspace
// is a namespace name, so prefix+workspace is a valid name and no two workspaces share one.
const workspacePrefix = "fleet-workspace-"

// WorkspaceServiceAccount is the name of the ServiceAccount Helm acts as for workspace, in the
// agent's namespace, and of the RoleBindings that grant it the workspace role.
func WorkspaceServiceAccount(workspace string) string { return workspacePrefix + workspace }

// workspaceAccess sets up what Helm needs to act for a workspace in a release namespace.
type workspaceAccess struct {
	// Client writes; Reader reads uncached (the cache holds only the agent's namespace).
	Client client.Client
	Reader client.Reader
	// Config is the agent's REST config, impersonated per workspace.
	Config *rest.Config
	// Namespace is the agent's namespace, where the ServiceAccounts live.
	Namespace string
	// Role is the ClusterRole the RoleBindings grant.
	Role string
}

// config is the agent's config acting as workspace's ServiceAccount. The API server adds the
// account's groups (system:serviceaccounts and system:serviceaccounts:<namespace>).
func (a *workspaceAccess) config(workspace string) *rest.Config {
	cfg := rest.CopyConfig(a.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + a.Namespace + ":" + WorkspaceServiceAccount(workspace)}
	return cfg
}

// ensure creates, when missing, the workspace's ServiceAccount, the release namespace and the
// RoleBinding there that grants the account the workspace role (re-created if it grants another).
func (a *workspaceAccess) ensure(ctx context.Context, workspace, namespace string) error {
	name := WorkspaceServiceAccount(workspace)
	labels := map[string]string{v1alpha1.ReleaseWorkspaceLabel: workspace}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: name, Labels: labels}}
	if err := a.create(ctx, sa, &corev1.ServiceAccount{}); err != nil {
		return fmt.Errorf("the ServiceAccount %s/%s of workspace %s: %w", a.Namespace, name, workspace, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: labels}}
	var existing corev1.Namespace
	if err := a.create(ctx, ns, &existing); err != nil {
		return fmt.Errorf("the release namespace %s: %w", namespace, err)
	}
	if existing.Name != "" && existing.Labels[v1alpha1.ReleaseWorkspaceLabel] != workspace {
		// Binding the workspace role in a namespace that is not the workspace's (kube-system,
		// another workspace's) would hand the workspace what lives there.
		return fmt.Errorf("the release namespace %s exists and is not workspace %s's (label %s=%q): the agent binds workspace %s "+
			"only in namespaces it created for it; label the namespace %s=%s to let the workspace release there, or choose another namespace",
			namespace, workspace, v1alpha1.ReleaseWorkspaceLabel, existing.Labels[v1alpha1.ReleaseWorkspaceLabel], workspace, v1alpha1.ReleaseWorkspaceLabel, workspace)
	}
	want := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: a.Role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: a.Namespace, Name: name}},
	}
	var got rbacv1.RoleBinding
	created := false
	err := a.Reader.Get(ctx, client.ObjectKeyFromObject(want), &got)
	switch {
	case apierrors.IsNotFound(err):
		err, created = a.Client.Create(ctx, want), true
	case err == nil && (got.RoleRef != want.RoleRef || len(got.Subjects) != 1 || got.Subjects[0] != want.Subjects[0]):
		// A role reference cannot change: replace the binding (the role was reconfigured).
		if err = a.Client.Delete(ctx, &got, client.Preconditions{UID: &got.UID}); err == nil || apierrors.IsNotFound(err) {
			err, created = a.Client.Create(ctx, want), true
		}
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the RoleBinding %s/%s of workspace %s to ClusterRole %s: %w", namespace, name, workspace, a.Role, err)
	}
	if created {
		return a.awaitBinding(ctx, workspace, namespace)
	}
	return nil
}

// bindingWait bounds how long a new RoleBinding may take to reach the API server's authorizer.
const bindingWait = 10 * time.Second

// awaitBinding waits until the API server lets the workspace's ServiceAccount list Secrets in
// namespace, as Helm does first: its RBAC authorizer sees a new binding a moment later.
func (a *workspaceAccess) awaitBinding(ctx context.Context, workspace, namespace string) error {
	cs, err := kubernetes.NewForConfig(a.config(workspace))
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, bindingWait, true, func(ctx context.Context) (bool, error) {
		_, last = cs.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the RoleBinding %s/%s of workspace %s to ClusterRole %s is not in effect after %s (does the ClusterRole exist and grant Secrets?): %w",
			namespace, WorkspaceServiceAccount(workspace), workspace, a.Role, bindingWait, last)
	}
	return nil
}

// create creates obj unless it exists; an existing one is read, uncached, into into, which is
// left empty when obj was created.
func (a *workspaceAccess) create(ctx context.Context, obj, into client.Object) error {
	err := a.Reader.Get(ctx, client.ObjectKeyFromObject(obj), into)
	if apierrors.IsNotFound(err) {
		if err = a.Client.Create(ctx, obj); apierrors.IsAlreadyExists(err) {
			err = a.Reader.Get(ctx, client.ObjectKeyFromObject(obj), into) // created meanwhile
		}
	}
	return err
}

// workspaceNamespace tells whether the release namespace is there and the workspace's.
func (a *workspaceAccess) workspaceNamespace(ctx context.Context, workspace, namespace string) (bool, error) {
	var ns corev1.Namespace
	err := a.Reader.Get(ctx, client.ObjectKey{Name: namespace}, &ns)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && ns.Labels[v1alpha1.ReleaseWorkspaceLabel] == workspace, err
}

// collect deletes what ensure made for gone's workspace that none of releases (the FleetReleases
// of the agent's namespace) needs: the RoleBinding in gone's namespace when no other release of
// the workspace goes there, and the ServiceAccount when the workspace has no other release. A
// release being deleted needs nothing: its own uninstall ensures what it uses, then collects.
func (a *workspaceAccess) collect(ctx context.Context, gone *v1alpha1.FleetRelease, releases []v1alpha1.FleetRelease) error {
	workspace, namespace := gone.Spec.Workspace, gone.Spec.Namespace
	inWorkspace, inNamespace := false, false
	for i := range releases {
		r := &releases[i]
		if r.UID == gone.UID || !r.DeletionTimestamp.IsZero() || r.Spec.Workspace != workspace {
			continue
		}
		inWorkspace = true
		inNamespace = inNamespace || r.Spec.Namespace == namespace
	}
	name := WorkspaceServiceAccount(workspace)
	if !inNamespace {
		if err := a.deleteOwn(ctx, &rbacv1.RoleBinding{}, client.ObjectKey{Namespace: namespace, Name: name}, workspace); err != nil {
			return fmt.Errorf("the RoleBinding %s/%s of workspace %s: %w", namespace, name, workspace, err)
		}
	}
	if !inWorkspace {
		if err := a.deleteOwn(ctx, &corev1.ServiceAccount{}, client.ObjectKey{Namespace: a.Namespace, Name: name}, workspace); err != nil {
			return fmt.Errorf("the ServiceAccount %s/%s of workspace %s: %w", a.Namespace, name, workspace, err)
		}
	}
	return nil
}

// deleteOwn deletes the object at key if it carries workspace's label, as ensure made it, and is
// still the object read (preconditions); one that is gone or not the agent's is left alone.
func (a *workspaceAccess) deleteOwn(ctx context.Context, obj client.Object, key client.ObjectKey, workspace string) error {
	if err := a.Reader.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if obj.GetLabels()[v1alpha1.ReleaseWorkspaceLabel] != workspace {
		return nil
	}
	uid, version := obj.GetUID(), obj.GetResourceVersion()
	return client.IgnoreNotFound(a.Client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &version}))
}
