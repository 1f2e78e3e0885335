package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	resschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

var _ datasource.DataSourceWithConfigure = &storageSiteDeploymentDataSource{}

func newStorageSiteDeploymentDataSource() datasource.DataSource {
	return &storageSiteDeploymentDataSource{hubDataSource{typeName: "storage_site_deployment"}}
}

// storageSiteDeploymentDataSource reads one StorageSiteDeployment, whoever manages it: another
// configuration, the simplyblock console, kubectl.
type storageSiteDeploymentDataSource struct{ hubDataSource }

type storageSiteDeploymentDataModel struct {
	ID        types.String `tfsdk:"id"`
	Name      types.String `tfsdk:"name"`
	Workspace types.String `tfsdk:"workspace"`
	WaitFor   types.String `tfsdk:"wait_for_controller"`
	ssdFields
}

func (d *storageSiteDeploymentDataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id":                  schema.StringAttribute{Computed: true, MarkdownDescription: "`workspace/name`."},
		"name":                schema.StringAttribute{Required: true, MarkdownDescription: "Name of the StorageSiteDeployment."},
		"workspace":           schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "Workspace (hub namespace). Defaults to the provider's `workspace`."},
		"wait_for_controller": waitForControllerAttr("the StorageSiteDeployment"),
	}
	for name, a := range ssdResourceAttributes() {
		if name == "wait_for" {
			continue
		}
		attrs[name] = dataSourceAttr(a)
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads one `StorageSiteDeployment` (`storage.simplyblock.io/v1alpha2`): the storage a managed site was asked for, and the site's " +
			"answer as the hub reports it — the draft's nodes for review, and once `Online` the storage cluster's `uuid` and `pool`, which a " +
			"StorageClass names. It reads the object whoever manages it (`fleet_storage_site_deployment` in another configuration, the " +
			"simplyblock console, kubectl); the status needs a controller on the hub (`fleet-controller hub` or the simplyblock operator).",
		Attributes: attrs,
	}
}

// dataSourceAttr turns a resource attribute into the data source's computed one, same type and
// description.
func dataSourceAttr(a resschema.Attribute) schema.Attribute {
	switch a := a.(type) {
	case resschema.StringAttribute:
		return schema.StringAttribute{Computed: true, MarkdownDescription: a.MarkdownDescription}
	case resschema.BoolAttribute:
		return schema.BoolAttribute{Computed: true, MarkdownDescription: a.MarkdownDescription}
	case resschema.Int64Attribute:
		return schema.Int64Attribute{Computed: true, MarkdownDescription: a.MarkdownDescription}
	case resschema.SetAttribute:
		return schema.SetAttribute{Computed: true, ElementType: a.ElementType, MarkdownDescription: a.MarkdownDescription}
	case resschema.ListAttribute:
		return schema.ListAttribute{Computed: true, ElementType: a.ElementType, MarkdownDescription: a.MarkdownDescription}
	case resschema.MapAttribute:
		return schema.MapAttribute{Computed: true, ElementType: a.ElementType, MarkdownDescription: a.MarkdownDescription}
	case resschema.SingleNestedAttribute:
		return schema.SingleNestedAttribute{Computed: true, MarkdownDescription: a.MarkdownDescription, Attributes: dataSourceAttrs(a.Attributes)}
	case resschema.ListNestedAttribute:
		return schema.ListNestedAttribute{Computed: true, MarkdownDescription: a.MarkdownDescription,
			NestedObject: schema.NestedAttributeObject{Attributes: dataSourceAttrs(a.NestedObject.Attributes)}}
	}
	panic(fmt.Sprintf("dataSourceAttr: unhandled %T", a))
}

func dataSourceAttrs(in map[string]resschema.Attribute) map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	for k, a := range in {
		out[k] = dataSourceAttr(a)
	}
	return out
}

func (d *storageSiteDeploymentDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m storageSiteDeploymentDataModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	if d.env == nil || d.env.Client == nil {
		detail := "The provider has no hub connection."
		if d.env != nil && d.env.ClientErr != nil {
			detail = d.env.ClientErr.Error()
		}
		resp.Diagnostics.AddError("Hub not configured", detail)
		return
	}
	ws, name := d.workspace(m.Workspace), m.Name.ValueString()
	d.awaitController(ctx, storageSiteDeploymentKind, ws, name, m.WaitFor, &resp.Diagnostics)
	obj, err := d.env.Client.Get(ctx, storageSiteDeploymentKind, ws, name)
	switch {
	case errors.Is(err, hub.ErrKindNotServed):
		resp.Diagnostics.AddError("The hub does not serve StorageSiteDeployment",
			"The hub has no storage.simplyblock.io/v1alpha2 StorageSiteDeployment API. Install the CRD (config/crd/bases of the provider's repository, "+
				"or the fleet-controller chart), or run the simplyblock operator on the hub.")
		return
	case apierrors.IsNotFound(err):
		resp.Diagnostics.AddError("StorageSiteDeployment not found", fmt.Sprintf("The hub has no StorageSiteDeployment %s/%s.", ws, name))
		return
	case err != nil:
		resp.Diagnostics.AddError("Cannot read StorageSiteDeployment", fmt.Sprintf("%s/%s: %v", ws, name, err))
		return
	}
	m.Workspace = types.StringValue(ws)
	m.ID = types.StringValue(ws + "/" + name)
	if resp.Diagnostics.Append(flattenStorageSiteDeployment(ctx, obj, &m.ssdFields)...); resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
