package controller

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/probework"
	"github.com/umkim/terraform-provider-fleet/internal/work"
)

// ManagedBy is the value of the managed-by label on every object the controller writes.
const ManagedBy = hub.ControllerManager

// componentOCIChain is the hub.ComponentLabel of the works that carry chains.
const componentOCIChain = "oci-chain"

// WorkName is the name of the ManifestWork that carries a workspace's chain to a cluster, in
// the cluster's namespace on the hub.
func WorkName(workspace string) string { return "oci-chain-" + workspace }

// chainWork is the ManifestWork that delivers a chain to a cluster: the fleet-system namespace
// (left in place when the work is deleted: other workspaces and the agent live there too), a
// Secret holding the chain document and the RegistryProbe whose feedback reports reachability.
func chainWork(workspace, cluster string, chain ocichain.Chain) (*workv1.ManifestWork, error) {
	doc, err := chain.Marshal()
	if err != nil {
		return nil, err
	}
	labels := map[string]any{hub.ManagedByLabel: ManagedBy, hub.WorkspaceLabel: workspace}
	manifests, err := rawManifests(
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ocichain.Namespace}},
		map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata": map[string]any{"name": ocichain.SecretName(workspace), "namespace": ocichain.Namespace, "labels": labels},
			"data":     map[string]any{ocichain.Key: base64.StdEncoding.EncodeToString(doc)},
		},
	)
	if err != nil {
		return nil, err
	}
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: WorkName(workspace), Namespace: cluster,
			Labels: map[string]string{hub.ManagedByLabel: ManagedBy, hub.WorkspaceLabel: workspace, hub.ComponentLabel: componentOCIChain},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: manifests},
			DeleteOption: &workv1.DeleteOption{
				PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
				SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{{Resource: "namespaces", Name: ocichain.Namespace}}},
			},
		},
	}
	// The cluster's agent probes the chain's registries and reports through this object's feedback.
	if err := probework.Add(w, workspace); err != nil {
		return nil, err
	}
	stampDigest(w)
	return w, nil
}

// chainParts are the inputs of a chain work a person can make smaller: the registries' CA
// bundles.
func chainParts(chain ocichain.Chain) []work.Part {
	parts := make([]work.Part, 0, len(chain.Registries))
	for _, r := range chain.Registries {
		parts = append(parts, work.Part{What: fmt.Sprintf("registry %q's CA bundle (cacerts)", r.Name), Size: len(r.CACerts)})
	}
	return parts
}

// rawManifests encodes manifests as the apiserver serves them back (JSON with sorted keys), so
// that an unchanged work compares equal byte for byte.
func rawManifests(objs ...map[string]any) ([]workv1.Manifest, error) {
	out := make([]workv1.Manifest, len(objs))
	for i, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		out[i] = workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	}
	return out, nil
}

// workUpToDate reports whether an observed work carries what desired does: the same manifests
// (by digest: manifestsUpToDate), delete option and labels. Fields others set (the apiserver's
// defaults, other labels) are ignored.
func workUpToDate(observed, desired *workv1.ManifestWork) bool {
	for k, v := range desired.Labels {
		if observed.Labels[k] != v {
			return false
		}
	}
	return specUpToDate(observed, desired)
}

// specUpToDate reports whether an observed work's spec carries what desired's does (the part
// of workUpToDate whose change makes the apiserver bump the work's generation).
func specUpToDate(observed, desired *workv1.ManifestWork) bool {
	return manifestsUpToDate(observed, desired) &&
		equality.Semantic.DeepEqual(observed.Spec.DeleteOption, desired.Spec.DeleteOption) &&
		equality.Semantic.DeepEqual(observed.Spec.ManifestConfigs, desired.Spec.ManifestConfigs)
}
