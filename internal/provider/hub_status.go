package provider

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// decodeHub converts a hub object read as unstructured into its API type; on failure it adds an
// error naming the object and returns false.
func decodeHub[T any](obj *unstructured.Unstructured, into *T, diags *diag.Diagnostics) bool {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		diags.AddError("Unreadable "+obj.GetKind()+" on the hub", fmt.Sprintf("%s/%s: %v", obj.GetNamespace(), obj.GetName(), err))
		return false
	}
	return true
}

// awaitInterval is how often an apply that waits reads the object's status.
var awaitInterval = 2 * time.Second

// phaseWait is what an apply waits for: a status.phase the hub reports for the object's current
// generation.
type phaseWait struct {
	kind hub.Kind
	// want names what is waited for, in messages ("Deployed", "online").
	want string
	// done are the phases that end the wait; failed are those that fail the apply.
	done   []string
	failed []string
	// on names where the object acts, in the failure's message (`cluster "eu-01"`).
	on string
	// reporter says what must run on the hub for the object to get a status at all.
	reporter string
}

// awaitPhase polls the applied object until its status reaches one of w.done or w.failed for
// its current generation, or ctx ends; it returns the object as last read.
func awaitPhase(ctx context.Context, c *hub.Client, applied *unstructured.Unstructured, w phaseWait) (*unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	ns, name := applied.GetNamespace(), applied.GetName()
	last := applied
	var phase, message string
	err := wait.PollUntilContextCancel(ctx, awaitInterval, true, func(ctx context.Context) (bool, error) {
		obj, err := c.Get(ctx, w.kind, ns, name)
		if err != nil {
			return false, nil //nolint:nilerr // transient, or gone: the deadline says so
		}
		last = obj
		phase, _, _ = unstructured.NestedString(obj.Object, "status", "phase")
		message, _, _ = unstructured.NestedString(obj.Object, "status", "message")
		observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		return observed >= obj.GetGeneration() && (slices.Contains(w.failed, phase) || slices.Contains(w.done, phase)), nil
	})
	id := fmt.Sprintf("%s %s/%s", w.kind.Kind, ns, name)
	switch {
	case err == nil && slices.Contains(w.failed, phase):
		diags.AddError(w.kind.Kind+" failed", fmt.Sprintf("%s is %s on %s: %s", id, phase, w.on, message))
	case err != nil && phase == "":
		diags.AddError("No status from the hub",
			fmt.Sprintf("Waited for %s to be %s, but the hub reported no status for it. %s Without one, remove wait_for.", id, w.want, w.reporter))
	case err != nil:
		diags.AddError("Timed out waiting for "+w.kind.Kind+" "+name,
			fmt.Sprintf("%s did not become %s in time: the hub reports phase %s (%s). Raise the timeouts, or apply again to keep waiting.", id, w.want, phase, message))
	}
	return last, diags
}
