package v1alpha2

// Condition types of a StorageSiteDeployment. All have positive polarity: True is normal. Ready is
// derived from the others.
const (
	// DeliveredCondition is True when the ManifestWork carrying the request is applied on the site.
	DeliveredCondition = "Delivered"

	// DiscoveredCondition is True when the site's draft names nodes.
	DiscoveredCondition = "Discovered"

	// ApprovedCondition is True when the site's draft carries the approval.
	ApprovedCondition = "Approved"

	// ReadyCondition is True when the site's StorageCluster is Online.
	ReadyCondition = "Ready"
)

// Condition reasons, CamelCase as Kubernetes requires.
const (
	// ReasonWorkApplied (Delivered True): the work agent applied every manifest on the site.
	ReasonWorkApplied = "WorkApplied"
	// ReasonWorkPending (Delivered False/Unknown): the work is created but not yet applied.
	ReasonWorkPending = "WorkPending"
	// ReasonDeliveryFailed (Delivered False): the work could not be written or applied.
	ReasonDeliveryFailed = "DeliveryFailed"
	// ReasonClusterNotFound (Delivered False): no ManagedCluster of spec.cluster on the hub.
	ReasonClusterNotFound = "ClusterNotFound"

	// ReasonWaitingForSite (Discovered/Approved/Ready Unknown or False): the site has not answered yet.
	ReasonWaitingForSite = "WaitingForSite"
	// ReasonDraftHasNodes (Discovered True): the draft names nodes.
	ReasonDraftHasNodes = "DraftHasNodes"
	// ReasonDraftHasNoNodes (Discovered False): the draft exists but names no nodes.
	ReasonDraftHasNoNodes = "DraftHasNoNodes"
	// ReasonDraftFailed (Discovered/Ready False): the site's draft is Failed.
	ReasonDraftFailed = "DraftFailed"

	// ReasonNotApproved (Approved False): spec.approved is false.
	ReasonNotApproved = "NotApproved"
	// ReasonApprovalDelivered (Approved False/Unknown): the approval is in the work, the draft does
	// not carry it yet.
	ReasonApprovalDelivered = "ApprovalDelivered"
	// ReasonDraftApproved (Approved True): the site's draft carries the approval.
	ReasonDraftApproved = "DraftApproved"

	// ReasonDeploying (Ready False): the approved draft is being expanded.
	ReasonDeploying = "Deploying"
	// ReasonOnline (Ready True): the storage cluster is Online.
	ReasonOnline = "Online"
	// ReasonStorageClusterFailed (Ready False): the site's storage cluster reports a failure.
	ReasonStorageClusterFailed = "StorageClusterFailed"
)
