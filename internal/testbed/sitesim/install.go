package sitesim

import (
	"context"
	"embed"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/config/crd"
	"github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

// CRDFS holds the site CRDs controller-gen writes from package v1alpha2 (see generate.go).
//
//go:embed crd/*.yaml
var CRDFS embed.FS

// WorkClusterRole is the ClusterRole on the site that lets OCM's work agent manage the site
// kinds: the label aggregates it into the agent's execution role, as an operator's chart does
// for the kinds a hub delivers through ManifestWorks.
const WorkClusterRole = "open-cluster-management:simplyblock:aggregate-to-work"

const establishTimeout = 30 * time.Second

// CRDs parses the site CRDs.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return crd.ParseFS(CRDFS, "crd/*.yaml")
}

// Install creates or updates the site CRDs and waits until they are served, the ClusterRole
// WorkClusterRole, and the namespace DefaultNamespace. It is idempotent.
func Install(ctx context.Context, cfg *rest.Config) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	s := Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("site simulator: %w", err)
	}
	c = client.WithFieldOwner(c, FieldManager)
	for _, want := range crds {
		if err := createOrReplace(ctx, c, want); err != nil {
			return fmt.Errorf("site simulator: CRD %s: %w", want.Name, err)
		}
	}
	for _, want := range crds {
		if err := waitEstablished(ctx, c, want.Name); err != nil {
			return fmt.Errorf("site simulator: CRD %s: %w", want.Name, err)
		}
	}
	for _, obj := range []client.Object{workClusterRole(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace}}} {
		if err := createOrReplace(ctx, c, obj); err != nil {
			return fmt.Errorf("site simulator: %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// workClusterRole grants OCM's work agent the site kinds
// (open-cluster-management.io/aggregate-to-work).
func workClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:   WorkClusterRole,
			Labels: map[string]string{"open-cluster-management.io/aggregate-to-work": "true"},
		},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha2.GroupVersion.Group},
			Resources: []string{"operatorops", "clusterdeploymentconfigs", "storageclusters", "storagenodes"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		}},
	}
}

// createOrReplace creates obj, or replaces an existing CRD's spec or ClusterRole's rules and
// labels; an existing namespace is left alone.
func createOrReplace(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	switch want := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		var got apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil {
			return err
		}
		got.Spec = want.Spec
		return c.Update(ctx, &got)
	case *rbacv1.ClusterRole:
		var got rbacv1.ClusterRole
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil {
			return err
		}
		got.Labels, got.Rules = want.Labels, want.Rules
		return c.Update(ctx, &got)
	}
	return nil
}

// waitEstablished polls until the CRD's Established condition is True.
func waitEstablished(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, establishTimeout, true, func(ctx context.Context) (bool, error) {
		var got apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
