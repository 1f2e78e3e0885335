// Package hubresource is the one engine behind every Terraform resource that is one hub object.
//
// A resource is declared as a Kind: its schema, model → object and object → model. The engine
// does the rest the same way for all of them: server-side apply as the provider's field manager,
// read with not-found → removed from state, delete and wait, import by `workspace/name` or by
// resource identity (workspace and name), retries
// on conflicts and transient errors, timeouts, the workspace default, and plan-time checks.
package hubresource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// Meta holds the attributes every hub-object resource has. Models embed it.
type Meta struct {
	ID        types.String   `tfsdk:"id"`
	Name      types.String   `tfsdk:"name"`
	Workspace types.String   `tfsdk:"workspace"`
	Timeouts  timeouts.Value `tfsdk:"timeouts"`
}

func (m *Meta) meta() *Meta { return m }

// Model is satisfied by pointers to structs that embed Meta.
type Model interface{ meta() *Meta }

// Env is what the provider hands to resources and data sources: the hub client (nil when the hub
// settings are not known yet) and the default workspace.
type Env struct {
	Client *hub.Client
	// Workspace is the provider's default workspace; WorkspaceUnknown is true when it comes from
	// another resource and is known only at apply.
	Workspace        string
	WorkspaceUnknown bool
	// ClientErr explains why Client is nil.
	ClientErr error
	// Owner is the provider's owner setting ("" without it): the engine writes it on every object
	// it creates or updates, and a conflict with an object of another owner is a plan error
	// (OwnedElsewhere).
	Owner string
	// CheckTimeout bounds the hub-aware checks of one resource's plan.
	CheckTimeout time.Duration
	// Preload reads what the plan-time checks of a workspace read, through the client's AtStart
	// lists. The engine calls it before its first write to a workspace (Terraform does not re-plan
	// a destroy before applying it), so that every re-plan of the apply sees the hub as it was.
	Preload func(ctx context.Context, l hub.Lister, workspace string)

	claims claims
}

// Kind declares one resource. M is its model, a struct embedding Meta.
type Kind[M any] struct {
	// TypeName is the resource name without the provider prefix, e.g. "oci_registry".
	TypeName string
	// Description is the resource's documentation (Markdown).
	Description string
	// Object is the hub kind this resource manages.
	Object hub.Kind
	// Attributes are the resource's own attributes; id, name, workspace and timeouts are added.
	Attributes map[string]schema.Attribute
	// Blocks are the resource's own blocks, if any.
	Blocks map[string]schema.Block

	// Owned are the object's top-level fields the resource owns whole, e.g. "spec" or "data":
	// after apply they equal what Expand built, whoever edited them on the hub.
	Owned []string
	// Expand builds the desired object (apiVersion, kind, name and namespace are set by the
	// engine).
	Expand func(ctx context.Context, req ExpandRequest[M]) (*unstructured.Unstructured, diag.Diagnostics)
	// Flatten writes the object's fields into the model (Meta is set by the engine). Attributes
	// the object does not carry, such as write-only values, are left as they are.
	Flatten func(ctx context.Context, obj *unstructured.Unstructured, into *M) diag.Diagnostics

	// Validate runs offline checks on the configuration. At plan, values may be unknown: it checks
	// what is known. At apply it runs again, on known values, before anything is written.
	Validate func(ctx context.Context, config *M) diag.Diagnostics
	// CheckPlan runs hub-aware checks on a planned change (see PlanCheck). It is called only when
	// the hub can be asked; its context is bounded by Env.CheckTimeout.
	CheckPlan func(ctx context.Context, c PlanCheck[M]) diag.Diagnostics

	// Await, when set, runs after every successful apply (create and update) with the object the
	// hub returned, to wait for what the configuration asks of the object's status. Its context is
	// bounded by the operation's timeout. It returns the object to store in state (the last one it
	// read; nil keeps applied). On error the object is stored all the same, since it is on the hub:
	// Terraform then marks a created resource tainted.
	Await func(ctx context.Context, c *hub.Client, applied *unstructured.Unstructured, plan *M) (*unstructured.Unstructured, diag.Diagnostics)

	// ForceDestroy, when set, says whether destroying the resource (its state) must not wait for
	// the object's cluster (its force_destroy attribute): the engine then sets
	// hub.OrphanOnDeleteAnnotation on the object just before it deletes it, and the controller
	// lets it go at once. A deletion that went without its cluster (Deleted=False/Orphaned) ends
	// in a warning with the controller's message of what may be left on the cluster.
	ForceDestroy func(state *M) bool
}

// ExpandRequest is what Expand builds an object from.
type ExpandRequest[M any] struct {
	Plan   *M
	Config *M // holds write-only values, which are never in the plan
	Prior  *M // the state before this apply; nil on create
	// Current is the object on the hub, or nil: Expand may keep values of it that Terraform does
	// not hold, such as a write-only credential whose version did not change.
	Current *unstructured.Unstructured
}

// Resource is the Terraform resource for a Kind.
type Resource[M any, P interface {
	*M
	Model
}] struct {
	kind Kind[M]
	env  *Env
}

var (
	_ resource.ResourceWithConfigure      = &Resource[struct{ Meta }, *struct{ Meta }]{}
	_ resource.ResourceWithImportState    = &Resource[struct{ Meta }, *struct{ Meta }]{}
	_ resource.ResourceWithIdentity       = &Resource[struct{ Meta }, *struct{ Meta }]{}
	_ resource.ResourceWithModifyPlan     = &Resource[struct{ Meta }, *struct{ Meta }]{}
	_ resource.ResourceWithValidateConfig = &Resource[struct{ Meta }, *struct{ Meta }]{}
)

// New returns a constructor for the provider's Resources list.
func New[M any, P interface {
	*M
	Model
}](kind Kind[M]) func() resource.Resource {
	return func() resource.Resource { return &Resource[M, P]{kind: kind} }
}

const defaultTimeout = 5 * time.Minute

func (r *Resource[M, P]) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.kind.TypeName
}

func (r *Resource[M, P]) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "`workspace/name`, the import ID.",
		},
		"name": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: fmt.Sprintf("Name of the %s on the hub (a DNS subdomain name). Changing it replaces the resource.", r.kind.Object.Kind),
			Validators:          []validator.String{dnsSubdomain},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"workspace": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			MarkdownDescription: "Workspace (hub namespace) of the object. Defaults to the provider's `workspace`. Changing it replaces the resource.",
			Validators:          []validator.String{dnsLabel},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplaceIfConfigured(), stringplanmodifier.UseStateForUnknown()},
		},
	}
	for k, v := range r.kind.Attributes {
		attrs[k] = v
	}
	blocks := map[string]schema.Block{
		"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Read: true, Update: true, Delete: true}),
	}
	for k, v := range r.kind.Blocks {
		blocks[k] = v
	}
	resp.Schema = schema.Schema{MarkdownDescription: r.kind.Description, Attributes: attrs, Blocks: blocks}
}

// Identity is a resource's identity: the hub object's workspace and name, which never change for
// the life of the resource (changing either replaces it).
type Identity struct {
	Workspace types.String `tfsdk:"workspace"`
	Name      types.String `tfsdk:"name"`
}

func (r *Resource[M, P]) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"workspace": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       "Workspace (hub namespace) of the object.",
			},
			"name": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       fmt.Sprintf("Name of the %s on the hub.", r.kind.Object.Kind),
			},
		},
	}
}

// setIdentity stores the model's workspace and name as the resource's identity. identity is nil
// when the request does not carry one (a test's driver).
func setIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity, meta *Meta, diags *diag.Diagnostics) {
	if identity != nil {
		diags.Append(identity.Set(ctx, Identity{Workspace: meta.Workspace, Name: meta.Name})...)
	}
}

func (r *Resource[M, P]) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	env, ok := req.ProviderData.(*Env)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("expected *hubresource.Env, got %T; this is a bug in the provider", req.ProviderData))
		return
	}
	r.env = env
}

func (r *Resource[M, P]) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if r.kind.Validate == nil {
		return
	}
	var config M
	if resp.Diagnostics.Append(req.Config.Get(ctx, &config)...); resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.kind.Validate(ctx, &config)...)
}

// ModifyPlan fills in the default workspace and id and runs the hub-aware checks, on create,
// update, replace and destroy. When the hub cannot be asked in time, the checks are skipped with
// a warning: a plan never fails because a check could not run.
func (r *Resource[M, P]) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.env == nil { // provider not configured yet
		return
	}
	var plan, prior *M
	if !req.State.Raw.IsNull() {
		prior = new(M)
		if resp.Diagnostics.Append(req.State.Get(ctx, prior)...); resp.Diagnostics.HasError() {
			return
		}
	}
	if !req.Plan.Raw.IsNull() {
		plan = new(M)
		if resp.Diagnostics.Append(req.Plan.Get(ctx, plan)...); resp.Diagnostics.HasError() {
			return
		}
		r.planIdentity(ctx, req, resp, P(plan).meta())
	}
	switch {
	case resp.Private == nil: // not from Terraform (a test's plan driver): no private state
	case plan != nil && prior != nil:
		resp.Diagnostics.Append(markReplacing(ctx, resp.Private, P(prior).meta().ID.ValueString())...)
	case plan != nil && req.Private != nil && replacing(ctx, req.Private) != "":
		// The create half of a replacement that the call with the prior state checked already.
		resp.Diagnostics.Append(markReplacing(ctx, resp.Private, "")...)
		return
	}
	subject := plan
	if subject == nil {
		subject = prior
	}
	meta := P(subject).meta()
	if meta.Workspace.IsUnknown() || meta.Name.IsUnknown() {
		if r.kind.CheckPlan != nil {
			resp.Diagnostics.AddWarning("Hub checks skipped", fmt.Sprintf("The %s's workspace or name is known only at apply, so it was not checked against the hub.", r.typeName()))
		}
		return
	}
	ws, name := meta.Workspace.ValueString(), meta.Name.ValueString()
	replace := plan != nil && prior != nil && P(prior).meta().ID.ValueString() != ws+"/"+name
	isNew := plan != nil && (prior == nil || replace)
	if r.env.Client == nil {
		if r.kind.CheckPlan != nil || isNew {
			resp.Diagnostics.AddWarning("Hub checks skipped", fmt.Sprintf("The %s plan was not checked against the hub: %v.", r.typeName(), r.env.ClientErr))
		}
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.env.CheckTimeout)
	defer cancel()
	l := r.env.Client.AtStart()
	r.preload(ctx, ws)
	// What an earlier create of this resource left, with its answer lost, is taken over at apply
	// (hub.Client.Adoptable): the plan can tell when the configuration is known whole (what the
	// hub computes, unknown in the plan, is no part of what a create writes).
	adoptable := func(*unstructured.Unstructured) bool { return false }
	if plan != nil && req.Config.Raw.IsFullyKnown() {
		adoptable = func(found *unstructured.Unstructured) bool {
			var cfg M
			if req.Config.Get(ctx, &cfg).HasError() {
				return false
			}
			obj, d := r.desired(ctx, ExpandRequest[M]{Plan: plan, Config: &cfg})
			if d.HasError() {
				return false
			}
			err := r.env.Client.Adoptable(ctx, r.kind.Object, found, obj)
			tflog.Debug(ctx, "is the hub object an earlier create left?", map[string]any{"kind": r.kind.Object.Kind, "name": name, "not adoptable": fmt.Sprint(err)})
			return err == nil
		}
	}
	if isNew && (!r.checkWorkspace(ctx, l, ws, name, &resp.Diagnostics) || !r.checkNew(ctx, l, ws, name, plan, adoptable, &resp.Diagnostics)) {
		return
	}
	if r.kind.CheckPlan != nil && !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(r.kind.CheckPlan(ctx, PlanCheck[M]{Env: r.env, Hub: l, Workspace: ws, Plan: plan, Prior: prior, Replace: replace})...)
	}
}

// planIdentity plans the workspace (the provider's default when not configured) and the id.
func (r *Resource[M, P]) planIdentity(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, meta *Meta) {
	var configured types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("workspace"), &configured)...)
	if configured.IsNull() && meta.Workspace.IsUnknown() && !r.env.WorkspaceUnknown {
		meta.Workspace = types.StringValue(r.env.Workspace)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("workspace"), meta.Workspace)...)
	}
	if !meta.Workspace.IsUnknown() && !meta.Name.IsUnknown() {
		meta.ID = types.StringValue(meta.Workspace.ValueString() + "/" + meta.Name.ValueString())
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("id"), meta.ID)...)
	}
}

// modelSource is a plan, state or config: something a model is read from.
type modelSource interface {
	Get(ctx context.Context, target any) diag.Diagnostics
}

// timeoutOf picks one operation's timeout, e.g. timeouts.Value.Create.
type timeoutOf func(timeouts.Value, context.Context, time.Duration) (time.Duration, diag.Diagnostics)

// begin reads the model, checks that the hub can be reached and bounds ctx by the operation's
// timeout. ok is false when diags says why the operation cannot go on.
func (r *Resource[M, P]) begin(ctx context.Context, src modelSource, into *M, timeout timeoutOf, diags *diag.Diagnostics) (_ context.Context, cancel context.CancelFunc, ok bool) {
	if diags.Append(src.Get(ctx, into)...); diags.HasError() || !r.clientReady(diags) {
		return ctx, func() {}, false
	}
	d, dd := timeout(P(into).meta().Timeouts, ctx, defaultTimeout)
	if diags.Append(dd...); dd.HasError() {
		return ctx, func() {}, false
	}
	ctx, cancel = context.WithTimeout(ctx, d)
	return ctx, cancel, true
}

func (r *Resource[M, P]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan M
	ctx, cancel, ok := r.begin(ctx, req.Plan, &plan, timeouts.Value.Create, &resp.Diagnostics)
	defer cancel()
	if ok {
		r.apply(ctx, &plan, nil, req.Config, &resp.State, resp.Identity, &resp.Diagnostics)
	}
}

func (r *Resource[M, P]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior M
	ctx, cancel, ok := r.begin(ctx, req.Plan, &plan, timeouts.Value.Update, &resp.Diagnostics)
	defer cancel()
	if !ok {
		return
	}
	if resp.Private != nil {
		resp.Diagnostics.Append(markReplacing(ctx, resp.Private, "")...) // the plan's mark stays out of state
	}
	if resp.Diagnostics.Append(req.State.Get(ctx, &prior)...); !resp.Diagnostics.HasError() {
		r.apply(ctx, &plan, &prior, req.Config, &resp.State, resp.Identity, &resp.Diagnostics)
	}
}

// apply validates the configuration, now fully known, writes the planned object so that the
// fields the resource owns equal the configuration, and stores what the hub returned in state and
// its workspace and name as the identity. prior is nil on create, when the hub must not have the
// object yet, unless it is what an earlier create of this resource left (hub.Client.Adoptable).
func (r *Resource[M, P]) apply(ctx context.Context, plan, prior *M, config modelSource, state *tfsdk.State, identity *tfsdk.ResourceIdentity, diags *diag.Diagnostics) {
	var cfg M
	if diags.Append(config.Get(ctx, &cfg)...); diags.HasError() {
		return
	}
	if r.kind.Validate != nil {
		if diags.Append(r.kind.Validate(ctx, &cfg)...); diags.HasError() {
			return
		}
	}
	ns, name := r.key(plan)
	current, err := r.env.Client.Get(ctx, r.kind.Object, ns, name)
	var found *unstructured.Unstructured // on the hub where this create is to write
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		r.hubError(diags, "read", ns, name, err)
		return
	case prior == nil:
		found, current = current, nil // nothing of it may go into what this create writes
	}
	obj, d := r.desired(ctx, ExpandRequest[M]{Plan: plan, Config: &cfg, Prior: prior, Current: current})
	if diags.Append(d...); d.HasError() {
		return
	}
	if found != nil {
		// An earlier create of this resource may have been committed with its answer lost:
		// that object is taken over, anything else is someone else's.
		if err := r.env.Client.Adoptable(ctx, r.kind.Object, found, obj); err != nil {
			diags.AddError(fmt.Sprintf("%s %s/%s already exists", r.kind.Object.Kind, ns, name),
				fmt.Sprintf("The hub already has this object, and it is not what an earlier create of this resource left: %v. To manage it with Terraform, %s",
					err, importHint(r.typeName(), ns+"/"+name)))
			return
		}
		tflog.Info(ctx, "adopting the hub object an earlier create left", map[string]any{"kind": r.kind.Object.Kind, "namespace": ns, "name": name})
	}
	tflog.Debug(ctx, "applying hub object", map[string]any{"kind": r.kind.Object.Kind, "namespace": ns, "name": name})
	out, err := r.env.Client.ApplyOwned(ctx, r.kind.Object, obj, r.kind.Owned)
	if err != nil {
		r.hubError(diags, "apply", ns, name, err)
		return
	}
	var waited diag.Diagnostics
	if r.kind.Await != nil {
		var last *unstructured.Unstructured
		if last, waited = r.kind.Await(ctx, r.env.Client, out, plan); last != nil {
			out = last
		}
	}
	if r.flatten(ctx, out, plan, diags); !diags.HasError() {
		diags.Append(state.Set(ctx, plan)...)
		setIdentity(ctx, identity, P(plan).meta(), diags)
	}
	diags.Append(waited...)
}

// desired is the object that applying req writes: Expand's, with its namespace, name, the
// provider's managed-by label and the owner setting's label and annotation.
func (r *Resource[M, P]) desired(ctx context.Context, req ExpandRequest[M]) (*unstructured.Unstructured, diag.Diagnostics) {
	obj, d := r.kind.Expand(ctx, req)
	if d.HasError() {
		return nil, d
	}
	ns, name := r.key(req.Plan)
	obj.SetNamespace(ns)
	obj.SetName(name)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[hub.ManagedByLabel] = r.env.Client.FieldManager()
	if r.env.Owner != "" {
		labels[hub.ConfigurationOwnerLabel] = hub.ConfigurationOwnerLabelValue(r.env.Owner)
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[hub.ConfigurationOwnerAnnotation] = r.env.Owner
		obj.SetAnnotations(annotations)
	}
	obj.SetLabels(labels)
	return obj, d
}

func (r *Resource[M, P]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state M
	ctx, cancel, ok := r.begin(ctx, req.State, &state, timeouts.Value.Read, &resp.Diagnostics)
	defer cancel()
	if !ok {
		return
	}
	// The identity comes from the state, which always has workspace and name: a state written
	// before the provider had identities gets one on its first refresh.
	setIdentity(ctx, resp.Identity, P(&state).meta(), &resp.Diagnostics)
	ns, name := r.key(&state)
	obj, err := r.env.Client.Get(ctx, r.kind.Object, ns, name)
	if errors.Is(err, hub.ErrKindNotServed) {
		resp.Diagnostics.AddError(fmt.Sprintf("The hub does not serve %s", r.kind.Object.Kind),
			fmt.Sprintf("Reading %s/%s: the hub has no %s API (%s), so the object's state is unknown and it is kept. "+
				"Install the provider's CRDs on the hub (kubectl apply -f config/crd/bases/ from the provider's repository), or point the provider at the right hub.",
				ns, name, r.kind.Object.Kind, r.kind.Object.GroupVersionResource))
		return
	}
	if apierrors.IsNotFound(err) {
		tflog.Info(ctx, "hub object is gone; removing it from state", map[string]any{"namespace": ns, "name": name})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		r.hubError(&resp.Diagnostics, "read", ns, name, err)
		return
	}
	r.flatten(ctx, obj, &state, &resp.Diagnostics)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	}
}

func (r *Resource[M, P]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state M
	ctx, cancel, ok := r.begin(ctx, req.State, &state, timeouts.Value.Delete, &resp.Diagnostics)
	defer cancel()
	if !ok {
		return
	}
	ns, name := r.key(&state)
	r.preload(ctx, ns)
	if r.kind.ForceDestroy != nil && r.kind.ForceDestroy(&state) {
		if err := r.env.Client.Annotate(ctx, r.kind.Object, ns, name, map[string]string{hub.OrphanOnDeleteAnnotation: "true"}); err != nil {
			r.hubError(&resp.Diagnostics, "mark for force_destroy", ns, name, err)
			return
		}
	}
	var last *unstructured.Unstructured
	err := r.env.Client.Delete(ctx, r.kind.Object, ns, name, func(o *unstructured.Unstructured) { last = o })
	if err != nil && ctx.Err() != nil && last != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("%s %s/%s is not deleted yet", r.kind.Object.Kind, ns, name), r.stillThere(last))
		return
	}
	if err != nil {
		r.hubError(&resp.Diagnostics, "delete", ns, name, err)
		return
	}
	if c := orphaned(last); c != "" {
		resp.Diagnostics.AddWarning(fmt.Sprintf("%s %s/%s went without its cluster's confirmation", r.kind.Object.Kind, ns, name), c)
	}
}

// stillThere says what the deletion of obj, still on the hub when the delete timeout ran out,
// waits for, and what to do.
func (r *Resource[M, P]) stillThere(obj *unstructured.Unstructured) string {
	msg := fmt.Sprintf("The delete timeout ran out with the object still on the hub, waiting for its finalizers %s", strings.Join(obj.GetFinalizers(), ", "))
	if reason, text := condition(obj, "Ready"); text != "" {
		msg += fmt.Sprintf(" (its last Ready condition: %s, %s)", reason, text)
	}
	msg += ". Run destroy again to go on waiting"
	if r.kind.ForceDestroy != nil {
		msg += "; fleet-controller lets it go without its cluster at once when the cluster's ManagedCluster or namespace is gone, and after its --orphan-after bound " +
			"(default 2m) when the cluster is not available. To stop waiting for the cluster now, set force_destroy = true on the resource, apply, and destroy again: " +
			"what the cluster holds may then be left there"
	}
	return msg + "."
}

// orphaned is the message of obj's Deleted=False/Orphaned condition, "" without one: the
// controller let it go without its cluster confirming that its work is gone.
func orphaned(obj *unstructured.Unstructured) string {
	if reason, text := condition(obj, "Deleted"); reason == "Orphaned" {
		return text
	}
	return ""
}

// condition is the reason and message of obj's status condition of type typ, "" when it has none.
func condition(obj *unstructured.Unstructured, typ string) (reason, message string) {
	if obj == nil {
		return "", ""
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			reason, _ := m["reason"].(string)
			message, _ := m["message"].(string)
			return reason, message
		}
	}
	return "", ""
}

func (r *Resource[M, P]) preload(ctx context.Context, ws string) {
	if r.env.Preload != nil {
		r.env.Preload(ctx, r.env.Client.AtStart(), ws)
	}
}

// key is the object's namespace and name.
func (r *Resource[M, P]) key(m *M) (namespace, name string) {
	meta := P(m).meta()
	return meta.Workspace.ValueString(), meta.Name.ValueString()
}

// ImportState takes the ID `workspace/name`, or `name` in the provider's default workspace, or
// an identity (Terraform 1.12 and later, OpenTofu 1.12 and later: `import { identity = {...} }`)
// with both workspace and name.
func (r *Resource[M, P]) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	var ns, name string
	if req.ID == "" && req.Identity != nil {
		var id Identity
		if resp.Diagnostics.Append(req.Identity.Get(ctx, &id)...); resp.Diagnostics.HasError() {
			return
		}
		ns, name = id.Workspace.ValueString(), id.Name.ValueString()
		if d := identityProblem(ns, name); d != "" {
			resp.Diagnostics.AddError("Invalid import identity", d)
			return
		}
	} else {
		var ok bool
		if ns, name, ok = strings.Cut(req.ID, "/"); !ok {
			ns, name = "", req.ID
			if r.env != nil {
				ns = r.env.Workspace
			}
		}
		if ns == "" || name == "" || strings.Contains(name, "/") {
			resp.Diagnostics.AddError("Invalid import ID",
				fmt.Sprintf("Expected \"workspace/name\" (for example fleet-default/my-object), got %q.", req.ID))
			return
		}
	}
	r.warnImportOwned(ctx, ns, name, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("workspace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	setIdentity(ctx, resp.Identity, &Meta{Workspace: types.StringValue(ns), Name: types.StringValue(name)}, &resp.Diagnostics)
}

// warnImportOwned warns when the object being imported carries another configuration's owner
// setting (hub.OwnerOf): after the import both configurations manage it, and each apply undoes the
// other's changes. A missing object is left to the read that follows the import.
func (r *Resource[M, P]) warnImportOwned(ctx context.Context, ns, name string, diags *diag.Diagnostics) {
	if r.env == nil || r.env.Client == nil {
		return
	}
	obj, err := r.env.Client.Get(ctx, r.kind.Object, ns, name)
	if err != nil {
		return
	}
	if owner := hub.OwnerOf(obj); owner != "" && owner != r.env.Owner {
		diags.AddWarning(fmt.Sprintf("Importing an object of owner %q", owner),
			fmt.Sprintf("%s %s/%s was written by the configuration with owner %q (provider setting owner). After this import both configurations manage it "+
				"and each apply undoes the other's changes: remove it from that configuration's state (terraform state rm), or do not import it.",
				r.kind.Object.Kind, ns, name, owner))
	}
}

func (r *Resource[M, P]) flatten(ctx context.Context, obj *unstructured.Unstructured, into *M, diags *diag.Diagnostics) {
	meta := P(into).meta()
	meta.Name = types.StringValue(obj.GetName())
	meta.Workspace = types.StringValue(obj.GetNamespace())
	meta.ID = types.StringValue(obj.GetNamespace() + "/" + obj.GetName())
	diags.Append(r.kind.Flatten(ctx, obj, into)...)
}

func (r *Resource[M, P]) clientReady(diags *diag.Diagnostics) bool {
	if r.env != nil && r.env.Client != nil {
		return true
	}
	detail := "The provider has no hub connection."
	if r.env != nil && r.env.ClientErr != nil {
		detail = r.env.ClientErr.Error()
	}
	diags.AddError("Hub not configured", detail)
	return false
}

func (r *Resource[M, P]) hubError(diags *diag.Diagnostics, verb, ns, name string, err error) {
	diags.AddError(fmt.Sprintf("Cannot %s %s %s/%s", verb, r.kind.Object.Kind, ns, name), err.Error())
}

func (r *Resource[M, P]) typeName() string { return "fleet_" + r.kind.TypeName }
