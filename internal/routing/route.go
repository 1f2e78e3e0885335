package routing

import "time"

// Bounds of a route, the same in the CRD (OCIStorageRoute), the provider's schema and the
// controller: generous for people, small enough that a route, its chain work and the plan
// stay cheap. ValidateRoute checks them. (Priority is any int64 here; the CRD and the provider
// bound it to an int32's range, 0 and up.)
const (
	MaxReplicationWait   = 24 * time.Hour // a day: longer means the mirror is not a mirror
	MaxClusterNames      = 1000
	MaxClusterGroups     = 100
	MaxClusterSelectors  = 32
	MaxMatchLabels       = 64
	MaxMatchExpressions  = 32
	MaxRequirementValues = 64
	MaxRegistries        = 16
)

// Route sends the clusters it matches to an ordered chain of registries.
type Route struct {
	Name     string
	Priority int64 // lower is tried first; unique among a workspace's non-default routes
	// Default marks the catch-all route: it has no criteria and matches every cluster no other
	// route matched, whatever its Priority.
	Default          bool
	ClusterNames     []string   // clusters matched by name
	ClusterGroups    []string   // clusters matched by membership of these cluster groups
	ClusterSelectors []Selector // clusters matched by labels, when any selector matches
	Registries       []string   // the chain, in the order a cluster tries them
	ReplicationWait  time.Duration
}

// Selector is a Kubernetes label selector: every MatchLabels pair and every MatchExpressions
// requirement must hold. An empty Selector matches every cluster.
type Selector struct {
	MatchLabels      map[string]string
	MatchExpressions []Requirement
}

// Requirement is one label-selector expression.
type Requirement struct {
	Key      string
	Operator Operator
	Values   []string // non-empty for In and NotIn, empty for Exists and DoesNotExist
}

// Operator is a label-selector operator.
type Operator string

// The supported operators. NotIn and DoesNotExist match a cluster that lacks the key.
const (
	In           Operator = "In"
	NotIn        Operator = "NotIn"
	Exists       Operator = "Exists"
	DoesNotExist Operator = "DoesNotExist"
)

// Cluster is what routing needs to know about a managed cluster.
type Cluster struct {
	Name   string
	Labels map[string]string
	Groups []string // the cluster groups (ManagedClusterSets) it belongs to
	// Foreign are the label keys another workspace set on the cluster (a cluster join of
	// another workspace), with who set them: a registry reference does not resolve with them.
	Foreign map[string]string
}

// Criterion is the kind of route criterion that matched a cluster.
type Criterion uint8

// The criteria, in the order they are reported when several match. Unmatched is the zero value.
const (
	Unmatched Criterion = iota
	ByName
	ByGroup
	BySelector
	ByDefault
)

// MatchedBy names the criterion of its route that matched a cluster.
type MatchedBy struct {
	Criterion Criterion
	Selector  int // index into ClusterSelectors when Criterion is BySelector
}

// Path is the route attribute the criterion comes from: cluster_names, cluster_groups,
// cluster_selectors[1] or default; nil when unmatched. Its CRD form names the route's field.
func (m MatchedBy) Path() Path {
	switch m.Criterion {
	case ByName:
		return Path{Attr("cluster_names")}
	case ByGroup:
		return Path{Attr("cluster_groups")}
	case BySelector:
		return Path{Attr("cluster_selectors"), Index(m.Selector)}
	case ByDefault:
		return Path{Attr("default")}
	}
	return nil
}

// String renders the criterion as the route attribute it comes from: "cluster_names",
// "cluster_groups", "cluster_selectors[1]" or "default"; "" when unmatched.
func (m MatchedBy) String() string { return m.Path().String() }

// Resolution is the route and chain one cluster uses.
type Resolution struct {
	Cluster  string
	Route    string // "" when no route matches
	Priority int64
	// Registries is shared with the Router and must not be modified.
	Registries      []string
	ReplicationWait time.Duration
	MatchedBy       MatchedBy
}

// Matched reports whether a route matched the cluster.
func (r Resolution) Matched() bool { return r.Route != "" }
