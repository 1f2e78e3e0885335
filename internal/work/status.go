package work

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Applied reports whether the cluster's work agent has applied w as it is now: the work's
// Applied condition is True at the work's generation, and its Available condition, once the
// agent reports it for that generation, is not False (a manifest applied and then gone from the
// cluster). A condition of an older generation answers an older spec and counts as not applied
// yet (OCM addon-framework's rule); why says what is awaited, with the agent's message if any.
func Applied(w *workv1.ManifestWork) (ok bool, why string) {
	applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	switch {
	case applied == nil:
		return false, "the work agent has not reported it yet"
	case applied.ObservedGeneration != w.Generation:
		return false, fmt.Sprintf("the work agent last reported generation %d, not %d", applied.ObservedGeneration, w.Generation)
	case applied.Status != metav1.ConditionTrue:
		return false, "not applied: " + applied.Message
	}
	if avail := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable); avail != nil &&
		avail.ObservedGeneration == w.Generation && avail.Status == metav1.ConditionFalse {
		return false, "applied but not available: " + avail.Message
	}
	return true, ""
}
