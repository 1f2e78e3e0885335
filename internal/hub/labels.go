package hub

// Labels of the objects the provider and fleet-controller write on the hub.
const (
	// ManagedByLabel names the writer of an object: a provider's field manager, so that kubectl
	// users can see which objects Terraform manages, or ControllerManager.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ControllerManager is the managed-by value of what fleet-controller writes.
	ControllerManager = "fleet-controller"
	// WorkspaceLabel names the workspace of a ManifestWork. A work lives in its cluster's
	// namespace, where an owner reference to the workspace cannot point, so it carries the
	// workspace as a label and is found by it, as OCM's ManifestWorkReplicaSet controller finds
	// its works.
	WorkspaceLabel = "fleet.umkim.io/workspace"
	// ComponentLabel says what a ManifestWork carries, e.g. a workspace's chain or pulls.
	ComponentLabel = "app.kubernetes.io/component"
)
