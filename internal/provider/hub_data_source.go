package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

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
