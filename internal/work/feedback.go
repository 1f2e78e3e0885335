package work

import workv1 "open-cluster-management.io/api/work/v1"

// Feedback is the status feedback w's status carries for one manifest, named by its API group,
// kind, namespace and name; nil while none came back.
func Feedback(w *workv1.ManifestWork, group, kind, namespace, name string) []workv1.FeedbackValue {
	for _, m := range w.Status.ResourceStatus.Manifests {
		r := m.ResourceMeta
		if r.Group == group && r.Kind == kind && r.Name == name && r.Namespace == namespace {
			return m.StatusFeedbacks.Values
		}
	}
	return nil
}
