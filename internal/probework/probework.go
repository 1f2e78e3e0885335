// Package probework is the RegistryProbe the hub delivers with each workspace's chain (in the
// chain's ManifestWork, beside the chain Secret), and the reachability its status feedback brings
// back: which registries of the chain the cluster's agent reaches, or the failure class, and when
// the agent last confirmed it.
//
// The feedback is three scalars (no RawFeedbackJsonString gate needed): the results as one
// string "<registry>=<state>,…", probedAt, and the generations that tell a result from an older
// spec. The agent writes the status only on a change and at least every --probe-refresh, and the
// work agent sends feedback only when it changes (FeedbackScrapeType Watch), so a steady fleet
// costs the hub one feedback update per cluster, workspace and refresh bound.
package probework

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	hubwork "github.com/umkim/terraform-provider-fleet/internal/work"
)

// Name is the name of a workspace's RegistryProbe on a cluster: its chain Secret's.
func Name(workspace string) string { return ocichain.SecretName(workspace) }

var feedbackPaths = []workv1.JsonPath{
	{Name: "workspace", Path: ".spec.workspace"},
	{Name: "generation", Path: ".metadata.generation"},
	{Name: "observedGeneration", Path: ".status.observedGeneration"},
	{Name: "results", Path: ".status.results"},
	{Name: "probedAt", Path: ".status.probedAt"},
}

// Add appends workspace's RegistryProbe to w, with the feedback rules that bring its results back.
func Add(w *workv1.ManifestWork, workspace string) error {
	gv := v1alpha1.GroupVersion
	// Encoded as a map, as the apiserver serves it back (sorted keys, no empty status).
	raw, err := json.Marshal(map[string]any{
		"apiVersion": gv.String(), "kind": "RegistryProbe",
		"metadata": map[string]any{"name": Name(workspace), "namespace": ocichain.Namespace},
		"spec":     map[string]any{"workspace": workspace},
	})
	if err != nil {
		return err
	}
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: gv.Group, Resource: "registryprobes", Name: Name(workspace), Namespace: ocichain.Namespace},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: feedbackPaths}},
		FeedbackScrapeType: workv1.FeedbackWatchType,
	})
	return nil
}

// Read returns the reachability of the registries of chain that w's RegistryProbe of workspace
// reports, in chain order; nil while no result for the probe's current spec came back. Results
// for registries no longer in chain are dropped.
func Read(w *workv1.ManifestWork, workspace string, chain []string) []v1alpha1.RegistryReachability {
	values := hubwork.Feedback(w, v1alpha1.GroupVersion.Group, "RegistryProbe", ocichain.Namespace, Name(workspace))
	var echo, results, probedAt string
	var gen, observed int64
	for _, v := range values {
		s, n := pullwork.Scalar(v)
		switch v.Name {
		case "workspace":
			echo = s
		case "generation":
			gen = n
		case "observedGeneration":
			observed = n
		case "results":
			results = s
		case "probedAt":
			probedAt = s
		}
	}
	if echo != workspace || gen == 0 || gen != observed || results == "" {
		return nil
	}
	var at *metav1.Time
	if t, err := time.Parse(time.RFC3339, probedAt); err == nil {
		at = &metav1.Time{Time: t}
	}
	byName := map[string]string{}
	for _, r := range strings.Split(results, ",") {
		if name, state, ok := strings.Cut(r, "="); ok && name != "" && state != "" {
			byName[name] = state
		}
	}
	var out []v1alpha1.RegistryReachability
	for _, name := range chain {
		if state, ok := byName[name]; ok && !slices.ContainsFunc(out, func(r v1alpha1.RegistryReachability) bool { return r.Registry == name }) {
			out = append(out, v1alpha1.RegistryReachability{Registry: name, State: state, ProbedAt: at})
		}
	}
	return out
}
