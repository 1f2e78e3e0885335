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
// (and needs the work agent's RawFeedbackJsonString gate for any), so the lists that grow with
// the site are read one item per rule, up to MaxNodes: each node reference a scalar, each node of
// the storage cluster a small object (name, phase, hostname). An index past a list's end is a
// feedback error of that rule only (the agent's StatusFeedbackSynced condition, which the hub
// does not read); the others come back. The node sets and the cluster template remain whole
// objects.
package storagework

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	if err := add("ClusterDeploymentConfig", "clusterdeploymentconfigs", r.DraftName, draft, strategy, draftPaths...); err != nil {
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
	draftPaths = append([]workv1.JsonPath{
		{Name: "phase", Path: ".status.phase"},
		{Name: "message", Path: ".status.message"},
		{Name: "approved", Path: ".spec.approved"},
		{Name: "clusterRef", Path: ".status.clusterRef"},
		{Name: "nodeSets", Path: ".spec.nodeSets"},
		{Name: "cluster", Path: ".spec.cluster"},
	}, indexed("nodeRefs", ".status.nodeRefs")...)
	storagePaths = append([]workv1.JsonPath{
		{Name: "phase", Path: ".status.phase"},
		{Name: "uuid", Path: ".status.uuid"},
		{Name: "pool", Path: ".status.pool"},
	}, indexed("nodes", ".status.nodes")...)
)

// MaxNodes is how many node references and storage nodes the hub reads back from a site: the
// operator's discovery takes at most 128 workers.
const MaxNodes = 128

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
				Approved: values.boolean("approved")}
			for name, into := range map[string]any{"nodeSets": &d.NodeSets, "cluster": &d.Cluster} {
				if err := values.decode(name, into); err != nil {
					return rep, fmt.Errorf("draft %s: %w", name, err)
				}
			}
			for i := 0; i < MaxNodes && values.has(fmt.Sprintf("nodeRefs.%d", i)); i++ {
				d.NodeRefs = append(d.NodeRefs, values.str(fmt.Sprintf("nodeRefs.%d", i)))
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
