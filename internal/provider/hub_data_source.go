package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/hubresource"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// hubDataSource is what the data sources share: their name, the provider's Env and reading a
// workspace's resolved routing.
type hubDataSource struct {
	typeName string
	env      *hubresource.Env
}

func (d *hubDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + d.typeName
}

func (d *hubDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	env, ok := req.ProviderData.(*hubresource.Env)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("expected *hubresource.Env, got %T; this is a bug in the provider", req.ProviderData))
		return
	}
	d.env = env
}

func (d *hubDataSource) workspace(v types.String) string {
	if v.IsNull() || v.IsUnknown() {
		return d.env.Workspace
	}
	return v.ValueString()
}

// resolve loads the workspace and routes all its clusters; on failure it adds an error and
// returns nils.
func (d *hubDataSource) resolve(ctx context.Context, ws string, diags *diag.Diagnostics) (*inventory.Workspace, *routing.Report) {
	if d.env == nil || d.env.Client == nil {
		detail := "The provider has no hub connection."
		if d.env != nil && d.env.ClientErr != nil {
			detail = d.env.ClientErr.Error()
		}
		diags.AddError("Hub not configured", detail)
		return nil, nil
	}
	inv, err := inventory.Load(ctx, d.env.Client.Live(), ws, d.env.Client.FieldManager())
	if err != nil {
		diags.AddError("Cannot read the workspace's routing", err.Error())
		return nil, nil
	}
	for _, bad := range inv.Invalid {
		diags.AddWarning("Invalid object on the hub", fmt.Sprintf("%s. It is left out of the routing shown; correct it on the hub.", bad))
	}
	_, rep, err := inv.Resolve()
	if err != nil {
		diags.AddError("Invalid routes on the hub", err.Error())
		return nil, nil
	}
	return inv, rep
}

// Which view a data source's values come from (its resolved_by attribute).
const (
	resolvedByController = "controller" // what `fleet-controller hub` reports in status
	resolvedByProvider   = "provider"   // the provider's own resolution of the hub's objects
)

// clusterStorageKind is the per-cluster status object `fleet-controller hub` writes: one per
// cluster of a workspace, named after the cluster, in the workspace namespace.
var clusterStorageKind = hub.Kind{GroupVersionResource: v1alpha1.GroupVersion.WithResource("clusterocistorages"), Kind: "ClusterOCIStorage"}

// listServed lists a kind in a namespace; served is false when the hub does not serve the kind
// at all (its CRD is not installed: a hub without the controller, or with older CRDs). A list
// of a served kind is never NotFound, even in a namespace that does not exist.
func listServed(ctx context.Context, l hub.Lister, k hub.Kind, namespace string) (items []unstructured.Unstructured, served bool, err error) {
	items, err = l.List(ctx, k, namespace, "")
	if errors.Is(err, hub.ErrKindNotServed) || apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return items, err == nil, err
}

// deliveries reads what `fleet-controller hub` delivered to the clusters of a workspace: the
// status of each ClusterOCIStorage that has a Ready condition, by cluster. It is empty when the
// controller is not installed or has not reconciled the workspace yet. What cannot be read is
// left out with a warning: the provider's own resolution is shown instead. l caches the result
// for the data sources of one run; callers must not modify it.
func deliveries(ctx context.Context, l hub.Lister, ws string, diags *diag.Diagnostics) map[string]v1alpha1.ClusterOCIStorageStatus {
	type view struct {
		byCluster map[string]v1alpha1.ClusterOCIStorageStatus
		warnings  diag.Diagnostics
	}
	v, _ := l.Memo("deliveries/"+ws, func() (any, error) {
		v := view{byCluster: map[string]v1alpha1.ClusterOCIStorageStatus{}}
		items, _, err := listServed(ctx, l, clusterStorageKind, ws)
		if err != nil {
			v.warnings.AddWarning("Cannot read the controller's view",
				fmt.Sprintf("Listing the ClusterOCIStorages of workspace %s failed: %v. The provider's own resolution is shown instead (resolved_by = %q).", ws, err, resolvedByProvider))
			return v, nil
		}
		for i := range items {
			var st v1alpha1.ClusterOCIStorageStatus
			if !readStatus(&items[i], &st, &v.warnings) || meta.FindStatusCondition(st.Conditions, v1alpha1.ReadyCondition) == nil {
				continue
			}
			v.byCluster[items[i].GetName()] = st
		}
		return v, nil
	})
	diags.Append(v.(view).warnings...)
	return v.(view).byCluster
}

// routeStatuses reads the status `fleet-controller hub` wrote on each route of a workspace, by
// route name, keeping only current ones: those that describe the route's current spec
// (status.observedGeneration is the route's generation) and have a Ready condition. all is true
// when the workspace has routes and every one of them has a current status.
func routeStatuses(ctx context.Context, l hub.Lister, ws string, diags *diag.Diagnostics) (current map[string]v1alpha1.OCIStorageRouteStatus, all bool) {
	current = map[string]v1alpha1.OCIStorageRouteStatus{}
	items, err := l.List(ctx, inventory.RouteKind, ws, "") // the list the inventory was read from, cached
	if err != nil {
		diags.AddWarning("Cannot read the controller's view",
			fmt.Sprintf("Listing the routes of workspace %s failed: %v. Route statuses are not shown (resolved_by = %q).", ws, err, resolvedByProvider))
		return current, false
	}
	for i := range items {
		var st v1alpha1.OCIStorageRouteStatus
		if readStatus(&items[i], &st, diags) && st.ObservedGeneration == items[i].GetGeneration() &&
			meta.FindStatusCondition(st.Conditions, v1alpha1.ReadyCondition) != nil {
			current[items[i].GetName()] = st
		}
	}
	return current, len(items) > 0 && len(current) == len(items)
}

// readStatus decodes an object's status into st; false (with a warning) when it cannot be read,
// false without one when it has none.
func readStatus(u *unstructured.Unstructured, st any, diags *diag.Diagnostics) bool {
	m, ok, _ := unstructured.NestedMap(u.Object, "status")
	if !ok {
		return false
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, st); err != nil {
		diags.AddWarning("Unreadable status on the hub", fmt.Sprintf("%s %s/%s: status: %v. It is left out; the provider's own resolution is shown for it.",
			u.GetKind(), u.GetNamespace(), u.GetName(), err))
		return false
	}
	return true
}

// readyCondition is the Ready condition of conds; callers have checked it is there.
func readyCondition(conds []metav1.Condition) *metav1.Condition {
	return meta.FindStatusCondition(conds, v1alpha1.ReadyCondition)
}

// waitForControllerDefault is how long a data source waits for the controller unless its
// wait_for_controller says otherwise.
const waitForControllerDefault = 30 * time.Second

// controllerPoll is how often a data source that waits reads the status again.
var controllerPoll = 500 * time.Millisecond

// waitForControllerAttr is the wait_for_controller attribute of the data sources that read what
// a controller reports; what names what they wait for.
func waitForControllerAttr(what string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator{max: time.Hour}},
		MarkdownDescription: "How long the read waits, at most, for the controller to report on " + what + " at their current generation " +
			"(`status.observedGeneration` equal to `metadata.generation`), so that a change made earlier in the same apply shows in one apply. " +
			"A duration such as `\"30s\"` (the default) or `\"2m\"`, at most `1h`; `\"0s\"` reads at once. Objects whose status no controller has " +
			"ever written are not waited for (no controller serves them, or it has not started on them). When the wait ends first, the read " +
			"returns what the hub has, with a warning that the values may be stale."}
}

// awaitController waits, up to wait (wait_for_controller), until the status of every object of
// kind k in ws (only the one named name, unless it is "") describes its current generation, and
// then drops the live lists of k and of the kinds in also, so that what the data source reads
// next is what the controller wrote. Objects no controller has reported on (no observed
// generation) are not waited for. A wait that ends first is a warning, not an error: the values
// read may be stale. A failed list ends the wait silently: the read that follows reports it.
func (d *hubDataSource) awaitController(ctx context.Context, k hub.Kind, ws, name string, wait types.String, diags *diag.Diagnostics, also ...hub.Kind) {
	if d.env == nil || d.env.Client == nil {
		return
	}
	timeout := waitForControllerDefault
	if !wait.IsNull() && !wait.IsUnknown() {
		if v, err := time.ParseDuration(wait.ValueString()); err == nil {
			timeout = v
		}
	}
	defer func() {
		for _, kind := range append([]hub.Kind{k}, also...) {
			d.env.Client.Refresh(kind)
		}
	}()
	if timeout <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lagging []string
	for ctx.Err() == nil {
		d.env.Client.Refresh(k)
		items, err := d.env.Client.List(ctx, k, ws, "")
		if err != nil && ctx.Err() == nil {
			return
		}
		if err == nil {
			lagging = laggingStatus(items, name)
			if len(lagging) == 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(controllerPoll):
		}
	}
	diags.AddWarning("The controller has not caught up",
		fmt.Sprintf("Waited %s (wait_for_controller) for the controller to report on the current spec of %s %s in workspace %s; it has not yet. "+
			"The values read may be stale (they describe an earlier spec): apply again to read them anew, or raise wait_for_controller.",
			timeout, k.Kind, strings.Join(lagging, ", "), ws))
}

// laggingStatus names the objects of items (only the one named name, unless it is "") whose
// status a controller wrote for an earlier generation than their current one.
func laggingStatus(items []unstructured.Unstructured, name string) []string {
	var lagging []string
	for i := range items {
		u := &items[i]
		if name != "" && u.GetName() != name {
			continue
		}
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if observed > 0 && observed != u.GetGeneration() {
			lagging = append(lagging, fmt.Sprintf("%s (generation %d, status of %d)", u.GetName(), u.GetGeneration(), observed))
		}
	}
	return lagging
}
