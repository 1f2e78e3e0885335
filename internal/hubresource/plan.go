package hubresource

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// PlanCheck is one resource's planned change, for its Kind's CheckPlan.
//
// Terraform plans resources that do not reference each other in parallel and in no fixed order,
// and re-plans each at apply in a fresh provider process, so a check never looks at its sibling
// resources: it judges this one change against Hub, the hub as this process first read it (in
// the apply-time re-plan: before this process wrote anything to the workspace). The same
// configuration then gets the same diagnostics on every run. A check gives an error only for what
// no other resource of the plan can change: the resource's own values, and conflicts with hub
// objects that no Terraform configuration manages (hub.ManagedByTerraform); otherwise a warning that names
// both objects and says what apply will do.
type PlanCheck[M any] struct {
	Env       *Env
	Hub       hub.Lister
	Workspace string
	Plan      *M // nil on destroy
	Prior     *M // nil on create
	// Replace is true when the change replaces the object (a new name or workspace): Prior is
	// then an object this plan deletes.
	Replace bool
}

// CheckErr is err as a plan-time check reports it: when the check's deadline passed, that the
// hub did not answer in time.
func (e *Env) CheckErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the hub did not answer within %s (the provider's request_timeout); plan again when it does", e.CheckTimeout)
	}
	return err
}

// OwnedElsewhere is the owner of an object that another configuration manages, by the owner
// setting: this provider has one and the object carries a different one (hub.OwnerOf). Such an
// object no resource of this plan can change, so a conflict with it is an error naming that owner
// where it would otherwise be a warning. "" otherwise, and always without the setting (today's
// warnings stay), and for an object without an owner (one this configuration wrote before it had
// the setting, for instance).
func (e *Env) OwnedElsewhere(owner string) string {
	if e.Owner == "" || owner == "" || owner == e.Owner {
		return ""
	}
	return owner
}

// Changeable reports whether a resource of this plan may change obj: a Terraform configuration
// manages it (hub.ManagedByTerraform) and it is not another owner's (OwnedElsewhere). A conflict
// with an object a plan cannot change is an error, with one it can a warning (the soundness rule).
func (e *Env) Changeable(obj *unstructured.Unstructured) bool {
	return e.ChangeableBy(hub.ManagedByTerraform(obj, e.Client.FieldManager()), hub.OwnerOf(obj))
}

// ChangeableBy is Changeable for an object known by whether Terraform manages it and its owner.
func (e *Env) ChangeableBy(managed bool, owner string) bool {
	return managed && e.OwnedElsewhere(owner) == ""
}

// Unchangeable says why no resource of this plan can change an object Changeable refuses, of
// the object's owner: "the configuration with owner "team-b" manages it" or "no Terraform
// configuration manages it".
func (e *Env) Unchangeable(owner string) string {
	if o := e.OwnedElsewhere(owner); o != "" {
		return fmt.Sprintf("the configuration with owner %q manages it", o)
	}
	return "no Terraform configuration manages it"
}

// replacingKey is the private-state key that ties the two PlanResourceChange calls of one
// resource instance together. Terraform and OpenTofu plan a change that turns out to be a
// replacement twice: first with the prior state (the update that becomes a replace), then with a
// null prior state (the create), handing the second call the private state the first one planned.
// The first call checks the change knowing what it replaces; the second, which cannot tell its
// own prior object from another resource's, recognises itself by this key and checks nothing
// again (its claim on the new name would collide with the first call's, and the hub still holds
// the object it replaces). A fresh provider process at apply starts with no claims, and the
// create it plans after the delete-then-create's delete carries no private state, so it is
// checked as the create it is.
const replacingKey = "fleet.replacing"

// markReplacing records in a planned private state that this plan has a prior object, priorID
// ("" removes the mark: Update removes it so that it never reaches state; Create stores no private
// state). p is the framework's; callers pass it only when it is not nil.
func markReplacing(ctx context.Context, p privateData, priorID string) diag.Diagnostics {
	var value []byte
	if priorID != "" {
		value, _ = json.Marshal(priorID)
	}
	return p.SetKey(ctx, replacingKey, value)
}

// replacing is the prior object's ID that the first call of a replacement recorded, or "".
func replacing(ctx context.Context, p privateData) string {
	raw, _ := p.GetKey(ctx, replacingKey)
	var id string
	if len(raw) == 0 || json.Unmarshal(raw, &id) != nil {
		return ""
	}
	return id
}

// privateData is the framework's provider-defined private state.
type privateData interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// claims records the objects this provider process plans to create, with their planned models,
// to catch two resources of one configuration that would be the same hub object, and to tell
// checks which objects the configuration creates (Env.Planned).
type claims struct {
	mu sync.Mutex
	by map[string]any
	// kinds holds the same plans by kind and workspace (claimKey(kind, workspace, "")), then name:
	// a check that asks for the planned objects of one kind reads those, not every claim, so that
	// a plan creating n routes does not scan n claims in each of their checks.
	kinds map[string]map[string]any
}

func claimKey(kind, workspace, name string) string { return kind + "/" + workspace + "/" + name }

// claim records plan for the object and returns false when the object was claimed before in this
// process.
func (c *claims) claim(kind, workspace, name string, plan any) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]any{}
	}
	key := claimKey(kind, workspace, name)
	if _, ok := c.by[key]; ok {
		return false
	}
	c.by[key] = plan
	group := claimKey(kind, workspace, "")
	if c.kinds == nil {
		c.kinds = map[string]map[string]any{}
	}
	if c.kinds[group] == nil {
		c.kinds[group] = map[string]any{}
	}
	c.kinds[group][name] = plan
	return true
}

// Planned reports whether a resource of this configuration planned earlier in this process
// creates the hub object k workspace/name. A check that finds an object it needs missing on the
// hub asks this before warning: a resource that refers to another's attribute (registries =
// [fleet_oci_registry.eu.name]) is planned after it, in the plan and in the apply-time re-plan
// alike, so for a configuration written that way the answer does not depend on the order
// Terraform plans in. A literal name gives Terraform no order, and the answer then may; the
// check's warning says to refer to the resource.
func (e *Env) Planned(k hub.Kind, workspace, name string) bool {
	e.claims.mu.Lock()
	defer e.claims.mu.Unlock()
	_, ok := e.claims.by[claimKey(k.Kind, workspace, name)]
	return ok
}

// PlannedModels returns the planned models (*M of the resource's Kind) of the objects of kind k
// in workspace that resources of this configuration planned earlier in this process create, by
// name, under the same rule as Planned.
func PlannedModels[M any](e *Env, k hub.Kind, workspace string) map[string]*M {
	e.claims.mu.Lock()
	defer e.claims.mu.Unlock()
	group := e.claims.kinds[claimKey(k.Kind, workspace, "")]
	out := make(map[string]*M, len(group))
	for name, v := range group {
		if m, ok := v.(*M); ok {
			out[name] = m
		}
	}
	return out
}

// PlannedModel is the planned model of the object k workspace/name that a resource of this
// configuration planned earlier in this process creates (PlannedModels), found without reading
// the other claims; ok is false when none does.
func PlannedModel[M any](e *Env, k hub.Kind, workspace, name string) (m *M, ok bool) {
	e.claims.mu.Lock()
	defer e.claims.mu.Unlock()
	m, ok = e.claims.by[claimKey(k.Kind, workspace, name)].(*M)
	return m, ok
}

// checkNew checks an object this plan creates: no other resource of the configuration may create
// it too, and the hub must not have it already, unless it is what an earlier create of this
// resource left (adoptable), which apply takes over. It returns false when the hub did not
// answer, and says so: the other checks are then skipped.
func (r *Resource[M, P]) checkNew(ctx context.Context, l hub.Lister, ws, name string, plan *M, adoptable func(*unstructured.Unstructured) bool, diags *diag.Diagnostics) bool {
	id := ws + "/" + name
	if !r.env.claims.claim(r.kind.Object.Kind, ws, name, plan) {
		diags.AddAttributeError(path.Root("name"), "Duplicate "+r.kind.Object.Kind,
			fmt.Sprintf("Two resources of this configuration create %s %s: they would overwrite each other on the hub. "+
				"Give each its own name (or workspace).", r.kind.Object.Kind, id))
		return true
	}
	items, err := l.List(ctx, r.kind.Object, ws, "")
	if err != nil {
		diags.AddWarning("Hub checks skipped", fmt.Sprintf("Could not list the %ss of workspace %s, so an existing %s %s would not be noticed: %v",
			r.kind.Object.Kind, ws, r.kind.Object.Kind, id, r.env.CheckErr(ctx, err)))
		return false
	}
	for i := range items {
		if items[i].GetName() != name {
			continue
		}
		imp := importHint(r.typeName(), id)
		if owner := r.env.OwnedElsewhere(hub.OwnerOf(&items[i])); owner != "" {
			diags.AddAttributeError(path.Root("name"), r.kind.Object.Kind+" already exists",
				fmt.Sprintf("%s %s is on the hub, managed by the configuration with owner %q, so no resource of this plan can free the name. "+
					"Give this one another name (or workspace), or move the object between the configurations (terraform state rm there, then import it here). Nothing was written to the hub.",
					r.kind.Object.Kind, id, owner))
		} else if hub.ManagedByTerraform(&items[i], r.env.Client.FieldManager()) {
			if adoptable(&items[i]) {
				tflog.Info(ctx, "the hub object an earlier create left is taken over at apply", map[string]any{"kind": r.kind.Object.Kind, "namespace": ws, "name": name})
				break
			}
			diags.AddAttributeWarning(path.Root("name"), r.kind.Object.Kind+" already on the hub",
				fmt.Sprintf("%s %s is on the hub and managed by Terraform: by another configuration, by a resource of this one that this plan destroys, "+
					"or left by an earlier apply of this resource that lost the hub's answer. If this plan destroys it first, apply creates it anew; "+
					"if it is exactly what this resource writes, apply takes it over; otherwise apply fails with \"already exists\". To take it over, %s", r.kind.Object.Kind, id, imp))
		} else {
			diags.AddAttributeError(path.Root("name"), r.kind.Object.Kind+" already exists",
				fmt.Sprintf("%s %s is already on the hub, and no Terraform configuration manages it. To manage it with Terraform, %s", r.kind.Object.Kind, id, imp))
		}
		break
	}
	return true
}

// importHint says how to import an object, for both CLIs and as an import block.
func importHint(typeName, id string) string {
	return strings.Join([]string{
		"import it:",
		fmt.Sprintf("  terraform import %s.<label> %s    (or: tofu import …)", typeName, id),
		"or add an import block and apply:",
		fmt.Sprintf("  import {\n    to = %s.<label>\n    id = %q\n  }", typeName, id),
	}, "\n")
}
