// Package routing decides which OCI storage route, and so which ordered chain of registries, each
// cluster of a workspace pulls from. It is pure: no client, no I/O.
//
// A cluster matches a route when its name is in ClusterNames, it is a member of a cluster group
// (an OCM ManagedClusterSet) in ClusterGroups, or its labels match any of ClusterSelectors, with
// Kubernetes label-selector semantics (an empty selector matches every cluster). Routes are tried
// in ascending Priority and the first match wins. The one Default route takes no criteria and
// catches every cluster no other route matched, whatever its priority. A cluster that no route
// matches has no chain.
//
// Validate and ValidateRoute check configuration and return Problems with field paths. Compile
// builds an immutable Router that resolves a cluster by looking up only the routes its name,
// groups and labels could match; ResolveAll adds per-route membership, unmatched clusters and
// shadowed routes, Diff lists the clusters a change moves, and StaticShadows finds routes that an
// earlier route makes unreachable on any inventory.
package routing
