package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageSiteDeploymentSpec requests the storage cluster of one managed site: which nodes the
// site's discovery considers, how the draft it writes is sized, and whether the draft is approved.
//
// The request travels to the site in one ManifestWork in the site's hub namespace: first an
// OperatorOps that discovers the site's nodes and writes a draft (a ClusterDeploymentConfig), then,
// once the draft names nodes, the sizing and the approval applied onto that draft. Approving the
// draft makes the site expand it into a StorageCluster.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.approved) || !oldSelf.approved || self.approved",message="approval is one-way: an approved deployment cannot be un-approved"
type StorageSiteDeploymentSpec struct {
	// Cluster is the name of the OCM ManagedCluster (the site) whose storage is requested. The
	// ManifestWork and any ManagedClusterViews live in the hub namespace of that name. It cannot
	// be changed: request another site's storage with another StorageSiteDeployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable"
	Cluster string `json:"cluster"`

	// SiteNamespace is the namespace on the site where the simplyblock operator runs, and where
	// the discovery, the draft and the storage cluster are created.
	// +optional
	// +kubebuilder:default=simplyblock
	// +kubebuilder:validation:MaxLength=63
	SiteNamespace string `json:"siteNamespace,omitempty"`

	// DraftName is the name of the ClusterDeploymentConfig (the draft) the discovery writes on the
	// site, and that the sizing and the approval are applied to. It cannot be changed.
	// +optional
	// +kubebuilder:default=site-draft
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="draftName is immutable"
	DraftName string `json:"draftName,omitempty"`

	// Discover chooses the nodes the site's discovery inspects. Changing it starts a new
	// discovery run.
	// +optional
	Discover DiscoverSpec `json:"discover,omitempty"`

	// Sizing is applied onto the draft once the discovery has written it. A field left out keeps
	// the value the discovery wrote.
	// +optional
	Sizing *Sizing `json:"sizing,omitempty"`

	// Approved approves the site's draft, which makes the site expand it into a storage cluster.
	// Approval is one-way: once true it cannot be set back to false, as the draft's own approval
	// cannot. Approve after reviewing the nodes in status.draft (phase Drafted).
	// +optional
	// +kubebuilder:default=false
	Approved bool `json:"approved,omitempty"`
}

// DiscoverSpec chooses the site's nodes the discovery inspects.
type DiscoverSpec struct {
	// EnableControlPlaneNodes lets the discovery consider control-plane nodes too; by default it
	// considers workers only.
	// +optional
	EnableControlPlaneNodes bool `json:"enableControlPlaneNodes,omitempty"`

	// Workers names the site's nodes to inspect. Empty means every worker.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=253
	Workers []string `json:"workers,omitempty"`

	// NodeSelector limits the discovery to the site's nodes with these labels, at most 64.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// Sizing is a storage cluster's template: in spec, what to apply onto the draft; in
// status.draft.cluster, the draft's template as the site reports it. Every field is optional: an
// absent one keeps what the discovery wrote.
type Sizing struct {
	// Name is the name of the storage cluster the draft expands into.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// VCPUCount is the number of vCPUs each storage node reserves.
	// +optional
	// +kubebuilder:validation:Minimum=1
	VCPUCount *int32 `json:"vcpuCount,omitempty"`

	// MinHugePagesSize is the huge-page memory each storage node needs at least, a Kubernetes
	// quantity such as "8G" or "16Gi".
	// +optional
	// +kubebuilder:validation:Pattern=`^(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	MinHugePagesSize string `json:"minHugePagesSize,omitempty"`

	// MaxSubsystemCount is the most NVMe-oF subsystems (volumes) a storage node serves.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxSubsystemCount *int32 `json:"maxSubsystemCount,omitempty"`

	// EnableDriveFormat lets the expansion format the drives it takes (their data is lost).
	// +optional
	EnableDriveFormat *bool `json:"enableDriveFormat,omitempty"`

	// EnableJournalDevice puts each node's journal on a device of its own.
	// +optional
	EnableJournalDevice *bool `json:"enableJournalDevice,omitempty"`

	// Stripe is the erasure-coding layout of the cluster's volumes.
	// +optional
	Stripe *Stripe `json:"stripe,omitempty"`
}

// Stripe is an erasure-coding layout: data chunks plus parity chunks per stripe.
type Stripe struct {
	// DataChunks is the number of data chunks in a stripe.
	// +optional
	// +kubebuilder:validation:Minimum=1
	DataChunks *int32 `json:"dataChunks,omitempty"`

	// ParityChunks is the number of parity chunks in a stripe: how many lost chunks a stripe
	// survives.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ParityChunks *int32 `json:"parityChunks,omitempty"`
}

// Phase is where a StorageSiteDeployment is on its way to an online storage cluster.
// +kubebuilder:validation:Enum=Pending;Discovering;Drafted;Deploying;Online;Failed
type Phase string

const (
	// PhasePending: the request is accepted but not yet delivered to the site.
	PhasePending Phase = "Pending"
	// PhaseDiscovering: the discovery is on the site; its draft names no nodes yet.
	PhaseDiscovering Phase = "Discovering"
	// PhaseDrafted: the draft names nodes and waits for review and approval (spec.approved).
	PhaseDrafted Phase = "Drafted"
	// PhaseDeploying: the draft is approved and the site expands it into a storage cluster.
	PhaseDeploying Phase = "Deploying"
	// PhaseOnline: the storage cluster is online; status.storageCluster has its uuid and pool.
	PhaseOnline Phase = "Online"
	// PhaseFailed: the site's draft or the expansion failed; status.message says why.
	PhaseFailed Phase = "Failed"
)

// DraftPhase is the phase of the site's draft (ClusterDeploymentConfig), as the site reports it.
// +kubebuilder:validation:Enum=Draft;Expanding;Expanded;Failed
type DraftPhase string

const (
	// DraftPhaseDraft: the draft is written and not yet approved.
	DraftPhaseDraft DraftPhase = "Draft"
	// DraftPhaseExpanding: the approved draft is being expanded into a storage cluster.
	DraftPhaseExpanding DraftPhase = "Expanding"
	// DraftPhaseExpanded: the storage cluster and its nodes are created.
	DraftPhaseExpanded DraftPhase = "Expanded"
	// DraftPhaseFailed: the draft failed validation or expansion; its message says why.
	DraftPhaseFailed DraftPhase = "Failed"
)

// StorageSiteDeploymentStatus is the site's answer, projected back to the hub.
type StorageSiteDeploymentStatus struct {
	// Phase is where the deployment is: Pending, Discovering, Drafted (review the draft and
	// approve), Deploying, Online, or Failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Message says, in one sentence, what the deployment waits for or why it failed.
	// +optional
	Message string `json:"message,omitempty"`

	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// WorkName is the name of the ManifestWork, in the cluster's hub namespace, that carries the
	// request to the site.
	// +optional
	WorkName string `json:"workName,omitempty"`

	// Draft is the site's draft as the discovery wrote it and the sizing changed it: review its
	// nodes before approving.
	// +optional
	Draft *DraftStatus `json:"draft,omitempty"`

	// StorageCluster is the storage cluster the approved draft expanded into. Its uuid is what a
	// StorageClass names as cluster_id, and its pool what it names as pool_name.
	// +optional
	StorageCluster *StorageClusterStatus `json:"storageCluster,omitempty"`

	// Conditions: Delivered (the work is applied on the site), Discovered (the draft names
	// nodes), Approved (the site's draft is approved), Ready (the storage cluster is Online).
	// Delivered and Ready are False with reason NameTaken when the request's ManifestWork name is
	// held by another object, and Unknown with reason ClusterNotReporting while the site's cluster
	// does not report. Stalled (True, reason WorkTooLarge) while the request's work is over the
	// work budget; Ready then repeats it.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DraftStatus is the site's draft (ClusterDeploymentConfig) as projected back to the hub.
type DraftStatus struct {
	// Name is the draft's name on the site.
	// +optional
	Name string `json:"name,omitempty"`

	// Phase is the draft's phase on the site: Draft, Expanding, Expanded or Failed.
	// +optional
	Phase DraftPhase `json:"phase,omitempty"`

	// Message is the draft's own message: its validation findings or why it failed.
	// +optional
	Message string `json:"message,omitempty"`

	// Approved is true once the site's draft carries the approval.
	// +optional
	Approved bool `json:"approved,omitempty"`

	// Cluster is the draft's cluster template, with the requested sizing applied.
	// +optional
	Cluster *Sizing `json:"cluster,omitempty"`

	// NodeSets are the nodes and devices the discovery found, grouped as the draft groups them.
	// The hub reads up to 8 node sets of up to 16 groups each; more are named in omitted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	NodeSets []NodeSet `json:"nodeSets,omitempty"`

	// NodeRefs names the site's nodes the draft takes.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	NodeRefs []string `json:"nodeRefs,omitempty"`

	// Omitted names the parts of the site's draft that did not come back to the hub, such as
	// nodeSets[0].groups[1].workers: a value over the 1,024 bytes OCM's work agent reports for a
	// list (it drops a longer one), or node sets and groups past the hub's bounds. The site's
	// draft has them; read them there. Empty when the draft arrived whole.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Omitted []string `json:"omitted,omitempty"`
}

// NodeSet is a set of the draft's nodes, in groups.
type NodeSet struct {
	// Name of the node set.
	Name string `json:"name"`

	// Groups of workers that share a device layout.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Groups []NodeGroup `json:"groups,omitempty"`
}

// NodeGroup is a group of workers of a node set and the devices each contributes.
type NodeGroup struct {
	// Name of the group.
	Name string `json:"name"`

	// Workers are the site's node names in this group.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Workers []string `json:"workers,omitempty"`

	// Devices each worker of the group contributes.
	// +optional
	Devices Devices `json:"devices,omitempty"`
}

// Devices are a node's storage devices.
type Devices struct {
	// NVMe lists the NVMe devices, by PCI address or device name as the discovery found them.
	// +optional
	// +listType=atomic
	NVMe []string `json:"nvme,omitempty"`
}

// StorageClusterStatus is the site's StorageCluster and its StorageNodes, projected back.
type StorageClusterStatus struct {
	// Name of the StorageCluster on the site.
	// +optional
	Name string `json:"name,omitempty"`

	// UUID is the storage cluster's id: what a StorageClass names as cluster_id.
	// +optional
	UUID string `json:"uuid,omitempty"`

	// Phase is the StorageCluster's phase on the site; Online when it serves volumes.
	// +optional
	Phase string `json:"phase,omitempty"`

	// Pool is the storage pool volumes are created in: what a StorageClass names as pool_name.
	// +optional
	Pool string `json:"pool,omitempty"`

	// Nodes are the cluster's StorageNodes.
	// +optional
	// +listType=map
	// +listMapKey=name
	Nodes []StorageNodeStatus `json:"nodes,omitempty"`
}

// StorageNodeStatus is one StorageNode of the site's storage cluster.
type StorageNodeStatus struct {
	// Name of the StorageNode.
	Name string `json:"name"`

	// Phase of the StorageNode on the site; Online when it serves.
	// +optional
	Phase string `json:"phase,omitempty"`

	// Hostname of the node it runs on.
	// +optional
	Hostname string `json:"hostname,omitempty"`
}

// StorageSiteDeployment requests a managed site's simplyblock storage cluster from the hub: the
// site's discovery, the sizing of the draft it writes, and the one-way approval that expands the
// draft into a storage cluster. Its status shows the draft's nodes for review and, once Online, the
// cluster's uuid, pool and nodes. Deleting it leaves the storage cluster on the site.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbsd
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Approved",type=boolean,JSONPath=`.spec.approved`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Draft phase",type=string,JSONPath=`.status.draft.phase`
// +kubebuilder:printcolumn:name="Storage phase",type=string,JSONPath=`.status.storageCluster.phase`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StorageSiteDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StorageSiteDeploymentSpec   `json:"spec"`
	Status StorageSiteDeploymentStatus `json:"status,omitempty"`
}

// StorageSiteDeploymentList is a list of StorageSiteDeployments.
//
// +kubebuilder:object:root=true
type StorageSiteDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StorageSiteDeployment `json:"items"`
}
