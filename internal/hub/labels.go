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

// What a configuration with the provider's owner setting marks the objects it writes with.
const (
	// ConfigurationOwnerAnnotation holds the provider's owner setting (e.g. team-a/infra), whole.
	ConfigurationOwnerAnnotation = "fleet.umkim.io/configuration-owner"
	// ConfigurationOwnerLabel holds it as a label value (ConfigurationOwnerLabelValue), for
	// kubectl get -l; the annotation is what the provider reads.
	ConfigurationOwnerLabel = "fleet.umkim.io/configuration-owner"
)

// What the apps and app-routes reconcilers mark their objects with.
const (
	// OwnerAnnotation names, as <namespace>/<name>, the FleetApp, FleetAppRoute or
	// StorageSiteDeployment a ManifestWork carries: the work lives in the cluster's namespace,
	// where no owner reference can point, and a name of up to 253 characters does not fit a
	// label. fleet-controller updates or deletes a work only when it names the object at hand.
	OwnerAnnotation = "fleet.umkim.io/owner"
	// GatewayLabel marks the hub ConfigMaps that the hub's gateway reads its routes from.
	GatewayLabel = "fleet.umkim.io/gateway"
	// GatewayTraefik is the GatewayLabel value of Traefik dynamic-configuration fragments.
	GatewayTraefik = "traefik"
)

// OrphanOnDeleteAnnotation, "true" on a FleetApp or a StorageSiteDeployment, lets it go at its
// deletion without waiting for its cluster to confirm that its ManifestWork is gone: the work is
// deleted on the hub, the object goes at once, Deleted=False/Orphaned and a Warning Event name
// what may be left on the cluster. The provider sets it just before it deletes a resource whose
// force_destroy is true.
const OrphanOnDeleteAnnotation = "fleet.umkim.io/orphan-on-delete"
