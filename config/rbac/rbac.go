// Package rbac embeds the agent's roles: agent/role.yaml, which controller-gen generates from the
// +kubebuilder:rbac markers in internal/agent (`make generate`), and workspace/role.yaml, the
// default role of a workspace's ServiceAccount, written by hand. The chart ships copies of both;
// the test bed installs them on workload clusters as the chart does. It also embeds
// tenant/roles.yaml, the hub's tenant ClusterRoles (written by hand, shipped by the chart in hub
// mode), which the tests grant a tenant.
package rbac

import (
	"bytes"
	"embed"
	"fmt"
	"regexp"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// FS holds the role files.
//
//go:embed agent/role.yaml workspace/role.yaml tenant/roles.yaml
var FS embed.FS

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Agent returns the agent's ClusterRole and its Roles (in fleet-system), as generated.
func Agent() (*rbacv1.ClusterRole, []rbacv1.Role, error) {
	data, err := FS.ReadFile("agent/role.yaml")
	if err != nil {
		return nil, nil, err
	}
	var cluster *rbacv1.ClusterRole
	var roles []rbacv1.Role
	for _, doc := range separator.Split(string(data), -1) {
		if len(bytes.TrimSpace([]byte(doc))) == 0 {
			continue
		}
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			return nil, nil, fmt.Errorf("agent/role.yaml: %w", err)
		}
		switch kind.Kind {
		case "ClusterRole":
			cluster = &rbacv1.ClusterRole{}
			err = yaml.UnmarshalStrict([]byte(doc), cluster)
		case "Role":
			roles = append(roles, rbacv1.Role{})
			err = yaml.UnmarshalStrict([]byte(doc), &roles[len(roles)-1])
		default:
			err = fmt.Errorf("unexpected kind %q", kind.Kind)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("agent/role.yaml: %w", err)
		}
	}
	if cluster == nil {
		return nil, nil, fmt.Errorf("agent/role.yaml has no ClusterRole")
	}
	return cluster, roles, nil
}

// Workspace returns the default ClusterRole of a workspace's ServiceAccount, fleet-workspace.
func Workspace() (*rbacv1.ClusterRole, error) {
	data, err := FS.ReadFile("workspace/role.yaml")
	if err != nil {
		return nil, err
	}
	var r rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return nil, fmt.Errorf("workspace/role.yaml: %w", err)
	}
	return &r, nil
}

// Tenant returns the tenant ClusterRoles, fleet-tenant (bound in a workspace) and
// fleet-tenant-clusters (bound hub-wide), in the file's order.
func Tenant() ([]rbacv1.ClusterRole, error) {
	data, err := FS.ReadFile("tenant/roles.yaml")
	if err != nil {
		return nil, err
	}
	var roles []rbacv1.ClusterRole
	for _, doc := range separator.Split(string(data), -1) {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
			return nil, fmt.Errorf("tenant/roles.yaml: %w", err)
		}
		if r.Kind != "ClusterRole" {
			return nil, fmt.Errorf("tenant/roles.yaml: kind %q, want ClusterRole", r.Kind)
		}
		roles = append(roles, r)
	}
	return roles, nil
}
