package v1alpha1

// Condition types. Each says whether it is normal when True ("positive polarity") or when False
// or absent ("negative polarity"). Ready is derived from the others.
const (
	// ReadyCondition (positive) summarises the object: True when it works as specified.
	ReadyCondition = "Ready"

	// SpecValidCondition (positive) is True when the route's spec passes routing's validation.
	SpecValidCondition = "SpecValid"

	// RegistriesResolvedCondition (positive) is True when every registry of the route's chain is a
	// registry Secret of the workspace.
	RegistriesResolvedCondition = "RegistriesResolved"

	// PriorityConflictCondition (negative) is True when the route shares its priority with
	// another route of the workspace, or is one of several default routes.
	PriorityConflictCondition = "PriorityConflict"

	// ShadowedCondition (negative) is True when the route selects clusters but earlier routes
	// match every one of them first, so that it wins none.
	ShadowedCondition = "Shadowed"

	// AgentCredentialsCondition (positive) is False when a registry of the chain has no agent
	// credentials: its push credentials are delivered to clusters instead (the registry opted in,
	// PushCredentialsDelivered), or the clusters pull from it without credentials
	// (NoAgentCredentials).
	AgentCredentialsCondition = "AgentCredentials"

	// WrittenCondition (positive) is True when what the hub writes for the object is written: for
	// an OCIStorageRoute, every cluster it wins has the route's chain in its ManifestWork on the
	// hub; for a ClusterOCIStorage, its cluster has; for a FleetAppRoute, its work (and in hub
	// mode its gateway ConfigMap) is. It says nothing of the cluster: Delivered does.
	WrittenCondition = "Written"

	// DeliveredCondition (positive) is True when the object is applied on its cluster: the work
	// agent reported the ManifestWork that carries it Applied (and not un-Available) at the work's
	// current generation. For an OCIStorageRoute, every cluster it wins has applied its chain; a
	// FleetAppRoute has it in site mode only (the Ingress on its app's cluster). It
	// is False (WorkPending) while a cluster has not applied the current work, and Unknown
	// (ClusterNotReporting) while a cluster's agent does not report (FleetApp, ClusterOCIStorage;
	// False for a route, whose message names the clusters).
	DeliveredCondition = "Delivered"

	// DeletedCondition (positive) is set on an app or a StorageSiteDeployment that is being
	// deleted when the controller lets it go without the cluster confirming that its work is gone:
	// False with reason ReasonOrphaned, naming the cluster and what may be left on it.
	DeletedCondition = "Deleted"
)

// Condition reasons, CamelCase as Kubernetes requires.
const (
	ReasonReady              = "Ready"
	ReasonValid              = "Valid"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonRegistriesResolved = "RegistriesResolved"
	ReasonRegistryNotFound   = "RegistryNotFound"
	ReasonRegistryInvalid    = "RegistryInvalid"
	ReasonNoConflict         = "NoConflict"
	ReasonSharedPriority     = "SharedPriority"
	ReasonExtraDefault       = "ExtraDefault"
	ReasonNotShadowed        = "NotShadowed"
	ReasonShadowedByEarlier  = "ShadowedByEarlierRoutes"
	ReasonAgentCredentials   = "AgentCredentialsOnly"
	ReasonPushCredentials    = "PushCredentialsDelivered"
	ReasonNoAgentCredentials = "NoAgentCredentials"
	ReasonDelivered          = "Delivered"
	ReasonWritten            = "Written"
	// ReasonWorkApplied (Delivered True): the cluster's work agent applied the work at its
	// generation.
	ReasonWorkApplied = "WorkApplied"
	// ReasonWorkPending (Delivered False): the work is written but its cluster's work agent has
	// not reported it applied at its current generation yet; the message says what it reported.
	ReasonWorkPending = "WorkPending"
	// ReasonClusterNotReporting (Delivered Unknown or False, Ready too): the cluster's
	// ManagedCluster is not available: OCM set ManagedClusterConditionAvailable Unknown (its agent
	// stopped renewing its lease: the cluster is offline or its klusterlet is down) or False (its
	// apiserver does not answer), so what the hub shows of the cluster is as of then and changes
	// do not reach it. The message names the cluster, since when, and OCM's reason. It clears
	// when the cluster reports again.
	ReasonClusterNotReporting = "ClusterNotReporting"
	ReasonNoClusters          = "NoClusters"
	ReasonDeliveryFailed      = "DeliveryFailed"
	ReasonNoRoute             = "NoRoute"
	// ReasonOrphaned: the object went without its cluster confirming that its work is gone (the
	// cluster deleted or unavailable past the bound, its namespace terminating, no ManifestWork
	// kind on the hub, or the object deleted with the orphan-on-delete annotation); what the work
	// made may be left on the cluster.
	ReasonOrphaned = "Orphaned"
	// ReasonWorkTooLarge: the ManifestWork that would carry the object is over the controller's
	// work budget (450 KiB, under OCM's 500 KiB limit); nothing is written, and the message names
	// the largest parts (a registry's CA bundle, an app's values).
	ReasonWorkTooLarge = "WorkTooLarge"
	// ReasonLastGoodChainKept: the cluster's new chain names a registry that is missing or
	// unreadable, so the chain delivered before stays in place.
	ReasonLastGoodChainKept = "LastGoodChainKept"
	// ReasonNameTaken (Ready False, and Delivered False where there is one): what the hub would
	// write for the object has a name already held by another object (its fleet.umkim.io/owner
	// annotation names another, or none), so nothing is written; the message names the holder.
	ReasonNameTaken = "NameTaken"

	// ReasonNotBound (Ready False; Delivered or Joined False too): the cluster the object names
	// is in no ManagedClusterSet bound to the object's workspace by a ManagedClusterSetBinding, so
	// the hub writes nothing for it there (no work, no label). Used by FleetApp, FleetAppRoute,
	// FleetClusterJoin and StorageSiteDeployment; the message names the sets to bind.
	ReasonNotBound = "NotBound"
	// ReasonNotJoined (Ready False; Delivered False too): no FleetClusterJoin joins the cluster the
	// object names to a site (fleetrules.JoinOf finds none of the workspaces that may use it; for a
	// FleetAppRoute, none of its own workspace), so the hub writes nothing for it yet. Used by
	// FleetApp and FleetAppRoute; the message names what to create.
	ReasonNotJoined = "NotJoined"
	// ReasonLabelConflict (Joined False): a label the join would set already has another value,
	// set by hand or by another join; the join leaves it and names it and its value.
	ReasonLabelConflict = "LabelConflict"
)

// Per-site registry references (a registry's reference naming cluster labels).
const (
	// ReferencesResolvedCondition (positive), on an OCIStorageRoute and a ClusterOCIStorage, is
	// False when the reference of a registry of the chain names a cluster label that does not
	// resolve for a cluster, which then gets no entry for that registry; the message names the
	// cluster, the registry and the label. It informs and does not count for Ready: the cluster
	// pulls from the rest of its chain.
	ReferencesResolvedCondition = "ReferencesResolved"

	ReasonReferencesResolved = "ReferencesResolved"
	// ReasonLabelMissing: the cluster does not have the label the reference names.
	ReasonLabelMissing = "LabelMissing"
	// ReasonLabelRefused: the label's value would change the reference's host, port or path shape.
	ReasonLabelRefused = "LabelRefused"
	// ReasonLabelForeign: a cluster join of another workspace set the label.
	ReasonLabelForeign = "LabelForeign"
	// ReasonNoUsableRegistry (Written False, ClusterOCIStorage): no registry of the chain resolves
	// for the cluster, so it gets no chain.
	ReasonNoUsableRegistry = "NoUsableRegistry"
)
