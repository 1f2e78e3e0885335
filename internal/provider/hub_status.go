package provider

import (
	"cmp"
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

// phaseWait is what an apply waits for: a status.phase the hub reports, on each object it waits
// on, for the change this apply wrote.
type phaseWait struct {
	kind hub.Kind
	// want names what is waited for, in messages ("Deployed", "online").
	want string
	// done are the phases that end the wait; failed are those that fail the apply.
	done   []string
	failed []string
	// on names where an object acts, in the failure's message (`cluster "eu-01"`).
	on func(obj *unstructured.Unstructured) string
	// reporter says what must run on the hub for the object to get a status at all.
	reporter string
	// current tells whether obj's status describes what this apply wrote. Unset, that is a
	// status of the object's generation (status.observedGeneration).
	current func(obj *unstructured.Unstructured) bool
}

// onCluster names an app's cluster, where its release fails.
func onCluster(obj *unstructured.Unstructured) string {
	cluster, _, _ := unstructured.NestedString(obj.Object, "spec", "cluster")
	return fmt.Sprintf("cluster %q", cluster)
}

// observedCurrent is a status of the object's current generation.
func observedCurrent(obj *unstructured.Unstructured) bool {
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return observed >= obj.GetGeneration()
}

// awaitPhase polls the applied object until its status reaches one of w.done or w.failed for
// the change this apply wrote, or ctx ends; it returns the object as last read.
func awaitPhase(ctx context.Context, c *hub.Client, applied *unstructured.Unstructured, w phaseWait) (*unstructured.Unstructured, diag.Diagnostics) {
	ns, name := applied.GetNamespace(), applied.GetName()
	last := applied
	diags := awaitPhases(ctx, w, func(ctx context.Context) ([]unstructured.Unstructured, error) {
		obj, err := c.Get(ctx, w.kind, ns, name)
		if err != nil {
			return nil, err
		}
		last = obj
		return []unstructured.Unstructured{*obj}, nil
	})
	return last, diags
}

// awaitPhases is the one waiter: it polls the objects read lists until every one of them has a
// status for the change this apply wrote (w.current) in one of w.done, or one is in w.failed, or
// ctx ends. An error names the object that failed, with its message, or the first that did not
// get there in time.
func awaitPhases(ctx context.Context, w phaseWait, read func(ctx context.Context) ([]unstructured.Unstructured, error)) diag.Diagnostics {
	var diags diag.Diagnostics
	current := w.current
	if current == nil {
		current = observedCurrent
	}
	var failed, waiting *unstructured.Unstructured
	err := wait.PollUntilContextCancel(ctx, awaitInterval, true, func(ctx context.Context) (bool, error) {
		objs, err := read(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // transient, or gone: the deadline says so
		}
		failed, waiting = nil, nil
		for i := range objs {
			obj := &objs[i]
			phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
			switch {
			case !current(obj):
				waiting = cmp.Or(waiting, obj)
			case slices.Contains(w.failed, phase):
				failed = cmp.Or(failed, obj)
			case !slices.Contains(w.done, phase):
				waiting = cmp.Or(waiting, obj)
			}
		}
		return failed != nil || waiting == nil, nil
	})
	phaseOf := func(obj *unstructured.Unstructured) (id, phase, message string) {
		phase, _, _ = unstructured.NestedString(obj.Object, "status", "phase")
		message, _, _ = unstructured.NestedString(obj.Object, "status", "message")
		return fmt.Sprintf("%s %s/%s", w.kind.Kind, obj.GetNamespace(), obj.GetName()), phase, message
	}
	switch {
	case failed != nil:
		id, phase, message := phaseOf(failed)
		diags.AddError(w.kind.Kind+" failed", fmt.Sprintf("%s is %s on %s: %s", id, phase, w.on(failed), message))
	case err == nil:
	case waiting == nil:
		diags.AddError("No status from the hub", fmt.Sprintf("Waited for %s to be %s, but could not read it from the hub in time. Raise the timeouts, or apply again to keep waiting.", w.kind.Kind, w.want))
	default:
		id, phase, message := phaseOf(waiting)
		if phase == "" {
			diags.AddError("No status from the hub",
				fmt.Sprintf("Waited for %s to be %s, but the hub reported no status for it. %s Without one, remove wait_for.", id, w.want, w.reporter))
			break
		}
		diags.AddError("Timed out waiting for "+w.kind.Kind+" "+waiting.GetName(),
			fmt.Sprintf("%s did not become %s in time: the hub reports phase %s (%s). Raise the timeouts, or apply again to keep waiting.", id, w.want, phase, message))
	}
	return diags
}
