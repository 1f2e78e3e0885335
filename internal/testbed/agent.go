package testbed

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/config/rbac"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
)

const (
	// FleetAgentAccount is the ServiceAccount `fleet-controller agent` runs as on a workload
	// cluster, in fleet-system, as the chart (agent mode) names it.
	FleetAgentAccount = "fleet-controller-agent"
	// GrantedLabel marks what GrantFleetAgent creates, so that a test that lists a cluster's
	// objects can tell the test bed's grants from what the works carry.
	GrantedLabel = "testbed.fleet.umkim.io/granted"
)

// GrantFleetAgent gives the cluster that cfg administers what the chart (agent mode) installs
// for `fleet-controller agent`: the fleet-system namespace, the ServiceAccount
// FleetAgentAccount there, the agent's generated roles (config/rbac/agent) bound to it and the
// default workspace ClusterRole (config/rbac/workspace). It returns cfg impersonating that
// ServiceAccount: an agent run with it holds only the chart's roles. Objects that exist are
// left as they are.
func GrantFleetAgent(ctx context.Context, cfg *rest.Config) (*rest.Config, error) {
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	cluster, roles, err := rbac.Agent()
	if err != nil {
		return nil, err
	}
	workspace, err := rbac.Workspace()
	if err != nil {
		return nil, err
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ocichain.Namespace, Name: FleetAgentAccount}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ocichain.Namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: FleetAgentAccount}},
		workspace, cluster,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.Name}},
	}
	for i := range roles {
		r := &roles[i]
		objs = append(objs, r, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name}})
	}
	for _, o := range objs {
		if _, ok := o.(*corev1.Namespace); !ok { // the works carry fleet-system too
			labels := o.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[GrantedLabel] = "true"
			o.SetLabels(labels)
		}
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("granting fleet-controller agent: %T %s: %w", o, o.GetName(), err)
		}
	}
	agent := rest.CopyConfig(cfg)
	agent.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ocichain.Namespace + ":" + FleetAgentAccount}
	return agent, nil
}
