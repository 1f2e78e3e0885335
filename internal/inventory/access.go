package inventory

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// Access decides which clusters a workspace may use, by OCM's tenancy model: exactly the
// ManagedClusters in the ManagedClusterSets that a ManagedClusterSetBinding in the workspace's
// namespace binds. The routing inventory (Assemble), every hub reconciler that acts on a named
// cluster and the provider's plan checks all decide it here.
type Access struct {
	workspace string
	bound     map[string]bool
	sets      []clusterSet // every readable set, sorted by name
	// Invalid are the bound sets that cannot be read (a bad label selector): they hold no cluster.
	Invalid []Invalid
}

// BoundSets are the cluster sets the bindings bind (their spec.clusterSet).
func BoundSets(bindings []clusterv1beta2.ManagedClusterSetBinding) []string {
	out := make([]string, 0, len(bindings))
	for i := range bindings {
		if s := bindings[i].Spec.ClusterSet; s != "" {
			out = append(out, s)
		}
	}
	return out
}

// NewAccess is the access of workspace, whose bindings bind the sets named bound, given every
// ManagedClusterSet of the hub (the unbound ones too: they name the sets a message suggests
// binding).
func NewAccess(workspace string, bound []string, sets []clusterv1beta2.ManagedClusterSet) *Access {
	a := &Access{workspace: workspace, bound: map[string]bool{}}
	for _, s := range bound {
		a.bound[s] = true
	}
	for i := range sets {
		cs, err := newClusterSet(&sets[i])
		if err != nil {
			if a.bound[sets[i].Name] {
				a.Invalid = append(a.Invalid, Invalid{clusterSetKind.Kind, sets[i].Name, err})
			}
			continue
		}
		a.sets = append(a.sets, cs)
	}
	slices.SortFunc(a.sets, func(x, y clusterSet) int { return strings.Compare(x.name, y.name) })
	return a
}

// Groups are the readable cluster sets bound to the workspace, sorted.
func (a *Access) Groups() []string {
	var out []string
	for _, s := range a.sets {
		if a.bound[s.name] {
			out = append(out, s.name)
		}
	}
	return out
}

// Of is cluster's access: the sets that hold it, and which of them are bound to the workspace.
// Only the cluster's name and labels are read.
func (a *Access) Of(cluster metav1.Object) ClusterAccess {
	ca := ClusterAccess{Workspace: a.workspace, Cluster: cluster.GetName()}
	for _, s := range a.sets {
		if s.contains(cluster.GetLabels()) {
			ca.Sets = append(ca.Sets, s.name)
			if a.bound[s.name] {
				ca.Bound = append(ca.Bound, s.name)
			}
		}
	}
	return ca
}

// ClusterAccess says whether a workspace may use one cluster, and why.
type ClusterAccess struct {
	Workspace, Cluster string
	Sets               []string // every ManagedClusterSet that holds the cluster, sorted
	Bound              []string // of Sets, those bound to the workspace
}

// Allowed reports whether the cluster is in a set bound to the workspace.
func (c ClusterAccess) Allowed() bool { return len(c.Bound) > 0 }

// NotBound says why the workspace may not use the cluster and what binding to add; "" when it
// may.
func (c ClusterAccess) NotBound() string {
	if c.Allowed() {
		return ""
	}
	if len(c.Sets) == 0 {
		return fmt.Sprintf("cluster %s is in no ManagedClusterSet bound to workspace %s, nor in any other: add it to a ManagedClusterSet and bind that set with a ManagedClusterSetBinding in %s",
			c.Cluster, c.Workspace, c.Workspace)
	}
	return fmt.Sprintf("cluster %s is in no ManagedClusterSet bound to workspace %s: bind one of its sets (%s) with a ManagedClusterSetBinding in %s",
		c.Cluster, c.Workspace, strings.Join(c.Sets, ", "), c.Workspace)
}
