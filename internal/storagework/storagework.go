// Package storagework is the ManifestWork that carries a StorageSiteDeployment to its site, and
// the site's answer that OCM's status feedback brings back.
//
// The work lives in the site's namespace on the hub and carries, in the site's operator namespace:
//   - the OperatorOps Discover run, named after what it discovers, so that a changed discovery is
//     a new run;
//   - the draft (ClusterDeploymentConfig) the run writes: read-only until the draft names nodes,
//     then server-side applied with field manager work-agent-hub-deploy (OCM requires the
//     work-agent prefix of the operator's hub-deploy), owning only the sizing fields the
//     request sets and, once approved, spec.approved (nodeSets stay the site's);
//   - the StorageCluster the approved draft expands into, read-only, once the draft names it.
//
// Every manifest has JSONPaths feedback rules. OCM drops a list or object value over 1,024 bytes
// (and needs the work agent's RawFeedbackJsonString gate for any), so nothing that grows with the
// site is read whole:
//   - the node references and the storage cluster's nodes one item per rule, up to MaxNodes: each
//     node reference a scalar, each node of the storage cluster a small object (name, phase,
//     hostname);
//   - the draft's cluster template one scalar per field;
//   - the node sets by name (one rule per set, up to MaxNodeSets) and their groups' names (one list
//     per set, up to MaxGroups); then, once those came back, for each group its devices and its
//     workers in strides: rule k of S reads workers k, k+S, k+2S, ..., with S chosen from the node
//     references so that a stride of the longest names fits 1,024 bytes (stridesFor).
//
// An index past a list's end is a feedback error of that rule only (the agent's
// StatusFeedbackSynced condition, which the hub reads only for the values it dropped); the others
// come back. A value the agent still drops as too large is named in Draft.Omitted, never lost
// silently.
package storagework

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// The site-side kinds are in the group and version of the hub's StorageSiteDeployment.
var (
	Group   = storagev1alpha2.GroupVersion.Group
	Version = storagev1alpha2.GroupVersion.Version
)

const (
	Component = "storage-site"
	// FieldOwner is the field manager of what the hub applies onto the draft: the operator's
	// hub-deploy, with the prefix OCM requires of a ManifestWork's server-side apply manager.
	FieldOwner = "work-agent-hub-deploy"

	// Labels naming the StorageSiteDeployment a work belongs to (it lives in another namespace,
	// where an owner reference cannot point).
	DeploymentNamespaceLabel = "storage.simplyblock.io/deployment-namespace"
	DeploymentNameLabel      = "storage.simplyblock.io/deployment-name"
)

// Request is what a StorageSiteDeployment asks of its site.
type Request struct {
	Namespace, Name string // the StorageSiteDeployment
	Cluster         string // the site's ManagedCluster: the work's namespace
	SiteNamespace   string
	DraftName       string
	// Discover is spec.discover and Sizing spec.sizing, as JSON objects in the operator's
	// shape with only the fields set.
	Discover, Sizing map[string]any
	Approved         bool
}

// WorkPrefix is the prefix of the name of a deployment's work.
const WorkPrefix = "sbsd"

// WorkName is the name of the deployment's work in its site's namespace: sbsd.<namespace>.<name>
// (v1alpha1.WorkspaceObjectName), which no other deployment of any namespace shares.
func WorkName(namespace, name string) string {
	return v1alpha1.WorkspaceObjectName(WorkPrefix, namespace, name, v1alpha1.MaxSubdomain)
}

// Owner is the hub.OwnerAnnotation value of a deployment's work: <namespace>/<name>.
func Owner(namespace, name string) string { return namespace + "/" + name }

// RunName is the name of the OperatorOps that runs r's discovery: a new one for every change of
// what it discovers.
func RunName(r Request) string {
	doc, _ := json.Marshal(map[string]any{"discover": r.Discover, "draft": r.DraftName})
	sum := sha256.Sum256(doc)
	return "hub-discover-" + hex.EncodeToString(sum[:])[:10]
}

// New is the work that carries r to its site, given what the site reported so far.
func New(r Request, last Report) (*workv1.ManifestWork, error) {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
		Name: WorkName(r.Namespace, r.Name), Namespace: r.Cluster,
		Labels: map[string]string{hub.ManagedByLabel: hub.ControllerManager, hub.ComponentLabel: Component,
			DeploymentNamespaceLabel: r.Namespace, DeploymentNameLabel: r.Name},
		Annotations: map[string]string{hub.OwnerAnnotation: Owner(r.Namespace, r.Name)},
	}}
	// Deleting the request never tears the storage down: the site keeps what the work made.
	w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}

	discover := map[string]any{"configName": r.DraftName}
	for k, v := range r.Discover {
		discover[k] = v
	}
	add := func(kind, resource, name string, obj map[string]any, strategy *workv1.UpdateStrategy, paths ...workv1.JsonPath) error {
		obj["apiVersion"], obj["kind"] = Group+"/"+Version, kind
		obj["metadata"] = map[string]any{"name": name, "namespace": r.SiteNamespace}
		raw, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: Group, Resource: resource, Name: name, Namespace: r.SiteNamespace},
			UpdateStrategy:     strategy,
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: paths}},
			FeedbackScrapeType: workv1.FeedbackWatchType,
		})
		return nil
	}
	readOnly := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}
	if err := add("OperatorOps", "operatorops", RunName(r), map[string]any{"spec": map[string]any{"action": "Discover", "discover": discover}}, nil,
		opsPaths...); err != nil {
		return nil, err
	}

	draft, strategy := map[string]any{}, readOnly
	if len(last.Draft.NodeRefs) > 0 && (len(r.Sizing) > 0 || r.Approved) {
		spec := map[string]any{}
		if len(r.Sizing) > 0 {
			spec["cluster"] = r.Sizing
		}
		if r.Approved {
			spec["approved"] = true
		}
		draft["spec"] = spec
		// Force: the discovery wrote the sizing fields first; the request takes over those it sets.
		strategy = &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{FieldManager: FieldOwner, Force: true}}
	}
	if err := add("ClusterDeploymentConfig", "clusterdeploymentconfigs", r.DraftName, draft, strategy, draftPaths(last.Draft)...); err != nil {
		return nil, err
	}
	if name := last.Draft.ClusterRef; name != "" {
		if err := add("StorageCluster", "storageclusters", name, map[string]any{}, readOnly, storagePaths...); err != nil {
			return nil, err
		}
	}
	return w, nil
}

var (
	opsPaths = []workv1.JsonPath{
		{Name: "phase", Path: ".status.phase"},
		{Name: "message", Path: ".status.message"},
		{Name: "configRef", Path: ".status.configRef"},
	}
	draftFixedPaths = append(append([]workv1.JsonPath{
		{Name: "phase", Path: ".status.phase"},
		{Name: "message", Path: ".status.message"},
		{Name: "approved", Path: ".spec.approved"},
		{Name: "clusterRef", Path: ".status.clusterRef"},
		{Name: "cluster.name", Path: ".spec.cluster.name"},
		{Name: "cluster.vcpuCount", Path: ".spec.cluster.vcpuCount"},
		{Name: "cluster.maxSubsystemCount", Path: ".spec.cluster.maxSubsystemCount"},
		{Name: "cluster.minHugePagesSize", Path: ".spec.cluster.minHugePagesSize"},
		{Name: "cluster.enableDriveFormat", Path: ".spec.cluster.enableDriveFormat"},
		{Name: "cluster.enableJournalDevice", Path: ".spec.cluster.enableJournalDevice"},
		{Name: "cluster.stripe.dataChunks", Path: ".spec.cluster.stripe.dataChunks"},
		{Name: "cluster.stripe.parityChunks", Path: ".spec.cluster.stripe.parityChunks"},
		// A set past MaxNodeSets: its name coming back says the draft has more than the hub reads.
		{Name: "nodeSets.more", Path: fmt.Sprintf(".spec.nodeSets[%d].name", MaxNodeSets)},
	}, indexed("nodeRefs", ".status.nodeRefs")...), setPaths()...)
	storagePaths = append([]workv1.JsonPath{
		{Name: "phase", Path: ".status.phase"},
		{Name: "uuid", Path: ".status.uuid"},
		{Name: "pool", Path: ".status.pool"},
	}, indexed("nodes", ".status.nodes")...)
)

// MaxNodes is how many node references and storage nodes the hub reads back from a site: the
// operator's discovery takes at most 128 workers.
const MaxNodes = 128

// MaxNodeSets and MaxGroups bound the draft's node sets and each set's groups that the hub reads
// back (the StorageSiteDeployment's status.draft.nodeSets and groups carry them as maxItems);
// more are named in Draft.Omitted. MaxStrides bounds the worker rules of all groups together, so
// that the rules past a short group's end (feedback errors, which the agent joins into one
// condition message of at most 32 KiB) stay few.
const (
	MaxNodeSets = 8
	MaxGroups   = 16
	MaxStrides  = 64
)

// maxFeedbackJSON is OCM's limit for a list or object feedback value (statusfeedback's
// maxJSONRawLength); the agent drops a longer one.
const maxFeedbackJSON = 1024

// setPaths are the rules for the node sets' names and each set's group names.
func setPaths() []workv1.JsonPath {
	var out []workv1.JsonPath
	for i := range MaxNodeSets {
		out = append(out,
			workv1.JsonPath{Name: fmt.Sprintf("nodeSets.%d.name", i), Path: fmt.Sprintf(".spec.nodeSets[%d].name", i)},
			workv1.JsonPath{Name: fmt.Sprintf("nodeSets.%d.groups", i), Path: fmt.Sprintf(".spec.nodeSets[%d].groups[*].name", i)})
	}
	return out
}

// draftPaths are the draft's rules, given what it reported so far: the fixed ones, and for every
// group already reported its devices and its workers in strides.
func draftPaths(last Draft) []workv1.JsonPath {
	out := slices.Clone(draftFixedPaths)
	groups := 0
	for _, set := range last.NodeSets {
		groups += len(set.Groups)
	}
	if groups == 0 {
		return out
	}
	strides := stridesFor(last.NodeRefs, groups)
	for i, set := range last.NodeSets {
		for j := range set.Groups {
			out = append(out, workv1.JsonPath{Name: fmt.Sprintf("nodeSets.%d.groups.%d.nvme", i, j), Path: fmt.Sprintf(".spec.nodeSets[%d].groups[%d].devices.nvme", i, j)})
			for k := range strides {
				out = append(out, workv1.JsonPath{Name: fmt.Sprintf("nodeSets.%d.groups.%d.workers.%d.%d", i, j, k, strides),
					Path: fmt.Sprintf(".spec.nodeSets[%d].groups[%d].workers[%d::%d]", i, j, k, strides)})
			}
		}
	}
	return out
}

// stridesFor is how many strides each of groups groups' workers are read in: enough that a stride
// of the draft's longest node names (as JSON, quoted and comma-separated) fits OCM's 1,024 bytes
// when one group holds every node, and at most MaxStrides over all groups.
func stridesFor(nodeRefs []string, groups int) int {
	longest := 1
	for _, n := range nodeRefs {
		longest = max(longest, len(n))
	}
	perStride := max(1, (maxFeedbackJSON-2)/(longest+3))
	strides := max(1, (len(nodeRefs)+perStride-1)/perStride)
	return max(1, min(strides, MaxStrides/max(groups, 1)))
}

// indexed are the rules for items 0 to MaxNodes-1 of the list at path, named <name>.<index>.
func indexed(name, path string) []workv1.JsonPath {
	out := make([]workv1.JsonPath, MaxNodes)
	for i := range out {
		out[i] = workv1.JsonPath{Name: fmt.Sprintf("%s.%d", name, i), Path: fmt.Sprintf("%s[%d]", path, i)}
	}
	return out
}

// Report is what the site reported through the work's feedback.
type Report struct {
	// Delivered: the discovery run is applied on the site at the work's generation.
	Delivered bool
	// DeliveryMessage says why not, from the work's conditions.
	DeliveryMessage string
	Run             Run
	Draft           Draft
	Storage         Storage
}

// Run is the OperatorOps discovery's status.
type Run struct{ Name, Phase, Message, ConfigRef string }

// Draft is the ClusterDeploymentConfig's, as far as it exists.
type Draft struct {
	Exists                     bool
	Phase, Message, ClusterRef string
	Approved                   bool
	NodeRefs                   []string
	NodeSets                   []storagev1alpha2.NodeSet
	Cluster                    *storagev1alpha2.Sizing
	// Omitted names what the site has but did not come back: a value the work agent dropped
	// as over 1,024 bytes, or sets and groups past MaxNodeSets and MaxGroups.
	Omitted []string
}

// Storage is the StorageCluster's status.
type Storage struct {
	Name, Phase, UUID, Pool string
	Nodes                   []storagev1alpha2.StorageNodeStatus
}

// Read returns what the site reported through w; the zero Report when nothing came back.
func Read(w *workv1.ManifestWork) (Report, error) {
	var rep Report
	for _, m := range w.Status.ResourceStatus.Manifests {
		values := feedback(m.StatusFeedbacks.Values)
		applied := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied)
		current := applied != nil && applied.Status == metav1.ConditionTrue && applied.ObservedGeneration == w.Generation
		switch m.ResourceMeta.Kind {
		case "OperatorOps":
			rep.Delivered = current
			if !current && applied != nil {
				rep.DeliveryMessage = applied.Message
			}
			rep.Run = Run{Name: m.ResourceMeta.Name, Phase: values.str("phase"), Message: values.str("message"), ConfigRef: values.str("configRef")}
		case "ClusterDeploymentConfig":
			if len(values) == 0 {
				continue // not written by the site yet
			}
			d := Draft{Exists: true, Phase: values.str("phase"), Message: values.str("message"), ClusterRef: values.str("clusterRef"),
				Approved: values.boolean("approved"), Cluster: values.sizing()}
			for i := 0; i < MaxNodes && values.has(fmt.Sprintf("nodeRefs.%d", i)); i++ {
				d.NodeRefs = append(d.NodeRefs, values.str(fmt.Sprintf("nodeRefs.%d", i)))
			}
			var err error
			if d.NodeSets, d.Omitted, err = values.nodeSets(dropped(m.Conditions)); err != nil {
				return rep, fmt.Errorf("draft node sets: %w", err)
			}
			rep.Draft = d
		case "StorageCluster":
			if len(values) == 0 {
				continue
			}
			s := Storage{Name: m.ResourceMeta.Name, Phase: values.str("phase"), UUID: values.str("uuid"), Pool: values.str("pool")}
			for i := 0; i < MaxNodes && values.has(fmt.Sprintf("nodes.%d", i)); i++ {
				var n storagev1alpha2.StorageNodeStatus
				if err := values.decode(fmt.Sprintf("nodes.%d", i), &n); err != nil {
					return rep, fmt.Errorf("storage cluster node %d: %w", i, err)
				}
				s.Nodes = append(s.Nodes, n)
			}
			rep.Storage = s
		}
	}
	return rep, nil
}

// dropped are the names of the rules whose value the work agent dropped as too large, from its
// StatusFeedbackSynced condition of the manifest.
func dropped(conds []metav1.Condition) map[string]bool {
	out := map[string]bool{}
	c := meta.FindStatusCondition(conds, "StatusFeedbackSynced")
	if c == nil || c.Status == metav1.ConditionTrue {
		return out
	}
	for _, m := range droppedValue.FindAllStringSubmatch(c.Message, -1) {
		out[m[1]] = true
	}
	return out
}

// droppedValue is how OCM's status reader (statusfeedback.getValueByJsonPath) reports a value over
// its limit.
var droppedValue = regexp.MustCompile(`json raw string for name (\S+) is larger than the maximum length`)

// nodeSets assembles the draft's node sets from their rules (draftPaths), and names what the
// site has that did not come back: the values in drop, and sets and groups past the bounds.
func (v values) nodeSets(drop map[string]bool) ([]storagev1alpha2.NodeSet, []string, error) {
	var sets []storagev1alpha2.NodeSet
	var omitted []string
	for i := 0; i < MaxNodeSets && v.has(fmt.Sprintf("nodeSets.%d.name", i)); i++ {
		set := storagev1alpha2.NodeSet{Name: v.str(fmt.Sprintf("nodeSets.%d.name", i))}
		key := fmt.Sprintf("nodeSets.%d.groups", i)
		if drop[key] {
			omitted = append(omitted, fmt.Sprintf("nodeSets[%d].groups", i))
		}
		names, err := v.strings(key)
		if err != nil {
			return nil, nil, err
		}
		if len(names) > MaxGroups {
			omitted = append(omitted, fmt.Sprintf("nodeSets[%d].groups[%d:] (the hub reads %d groups of a set)", i, MaxGroups, MaxGroups))
			names = names[:MaxGroups]
		}
		for j, name := range names {
			g := storagev1alpha2.NodeGroup{Name: name}
			key := fmt.Sprintf("nodeSets.%d.groups.%d.", i, j)
			if drop[key+"nvme"] {
				omitted = append(omitted, fmt.Sprintf("nodeSets[%d].groups[%d].devices.nvme", i, j))
			}
			if g.Devices.NVMe, err = v.strings(key + "nvme"); err != nil {
				return nil, nil, err
			}
			var lost bool
			if g.Workers, lost, err = v.strided(key+"workers.", drop); err != nil {
				return nil, nil, err
			}
			if lost {
				omitted = append(omitted, fmt.Sprintf("nodeSets[%d].groups[%d].workers", i, j))
			}
			set.Groups = append(set.Groups, g)
		}
		sets = append(sets, set)
	}
	if v.has("nodeSets.more") {
		omitted = append(omitted, fmt.Sprintf("nodeSets[%d:] (the hub reads %d node sets)", MaxNodeSets, MaxNodeSets))
	}
	return sets, omitted, nil
}

// strided reassembles a list read in strides: the values named <prefix><k>.<n>, stride k of n
// holding items k, k+n, k+2n, ... A stride past the list's end does not come back; when one the
// agent dropped is missing, the list is incomplete: nil and true, never a list with holes.
func (v values) strided(prefix string, drop map[string]bool) ([]string, bool, error) {
	n := 0 // from any stride that came back or was dropped: each name carries the stride count
	for name := range maps.Keys(v) {
		n = max(n, strideCount(name, prefix))
	}
	for name := range drop {
		n = max(n, strideCount(name, prefix))
	}
	for k := range n {
		if drop[fmt.Sprintf("%s%d.%d", prefix, k, n)] {
			return nil, true, nil
		}
	}
	if n < 1 {
		return nil, false, nil
	}
	strides := make([][]string, n)
	for k := range n {
		var err error
		if strides[k], err = v.strings(fmt.Sprintf("%s%d.%d", prefix, k, n)); err != nil {
			return nil, false, err
		}
	}
	var out []string
	for p := 0; p/n < len(strides[p%n]); p++ {
		out = append(out, strides[p%n][p/n])
	}
	return out, false, nil
}

// strideCount is n of a value named <prefix><k>.<n>; 0 for another name.
func strideCount(name, prefix string) int {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0
	}
	_, count, _ := strings.Cut(rest, ".")
	n, _ := strconv.Atoi(count)
	return n
}

// strings reads a list of strings: one value is reported as a scalar, more as a JSON list.
func (v values) strings(name string) ([]string, error) {
	if s := v[name].String; s != nil {
		return []string{*s}, nil
	}
	var out []string
	err := v.decode(name, &out)
	return out, err
}

// sizing is the draft's cluster template, one field per rule; nil when none came back.
func (v values) sizing() *storagev1alpha2.Sizing {
	var s storagev1alpha2.Sizing
	got := false
	i32 := func(name string) *int32 {
		if n := v[name].Integer; n != nil {
			got = true
			return ptr.To(int32(*n))
		}
		return nil
	}
	b := func(name string) *bool {
		if x := v[name].Boolean; x != nil {
			got = true
			return ptr.To(*x)
		}
		return nil
	}
	s.Name, s.MinHugePagesSize = v.str("cluster.name"), v.str("cluster.minHugePagesSize")
	got = s.Name != "" || s.MinHugePagesSize != ""
	s.VCPUCount, s.MaxSubsystemCount = i32("cluster.vcpuCount"), i32("cluster.maxSubsystemCount")
	s.EnableDriveFormat, s.EnableJournalDevice = b("cluster.enableDriveFormat"), b("cluster.enableJournalDevice")
	if d, p := i32("cluster.stripe.dataChunks"), i32("cluster.stripe.parityChunks"); d != nil || p != nil {
		s.Stripe = &storagev1alpha2.Stripe{DataChunks: d, ParityChunks: p}
	}
	if !got {
		return nil
	}
	return &s
}

type values map[string]workv1.FieldValue

func feedback(vs []workv1.FeedbackValue) values {
	out := values{}
	for _, v := range vs {
		out[v.Name] = v.Value
	}
	return out
}

func (v values) str(name string) string {
	if s := v[name].String; s != nil {
		return *s
	}
	return ""
}

func (v values) has(name string) bool {
	_, ok := v[name]
	return ok
}

func (v values) boolean(name string) bool {
	b := v[name].Boolean
	return b != nil && *b
}

// decode reads a list or object value (raw JSON feedback); a missing value leaves into as it is.
func (v values) decode(name string, into any) error {
	raw := v[name].JsonRaw
	if raw == nil {
		return nil
	}
	return json.Unmarshal([]byte(*raw), into)
}
