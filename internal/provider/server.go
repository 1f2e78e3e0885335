package provider

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
)

// Serve serves the provider to the CLI that started this process, with support for debuggers
// like delve when debug is set.
func Serve(version string, debug bool) error {
	var opts []tf6server.ServeOpt
	if debug {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	return tf6server.Serve(Address, NewServer(version), opts...)
}

// NewServer returns the factory of the provider's protocol server: the framework's, with each
// call's context let go when the call returns (releasingServer).
func NewServer(version string) func() tfprotov6.ProviderServer {
	framework := providerserver.NewProtocol6(New(version)())
	return func() tfprotov6.ProviderServer { return releasingServer{framework().(frameworkServer)} }
}

// frameworkServer is every protocol service the framework's server implements, so that the
// protocol server's checks for the optional ones find them on releasingServer too.
type frameworkServer interface {
	tfprotov6.ProviderServer
	tfprotov6.ListResourceServer
	tfprotov6.ActionServer
	tfprotov6.StateStoreServer
}

// releasingServer serves the framework's server. The framework keeps the cancel function of each
// call's context until the provider is stopped (to cancel the calls then), and with it the
// context: the call's loggers and gRPC stream, some 10 KiB a call and four calls a resource in a
// plan. The calls a plan makes per resource, data source or function call are given a context
// that lets go of the call's own when the call returns (detachable), so that the framework keeps
// only a few hundred bytes of each.
type releasingServer struct{ frameworkServer }

func (s releasingServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	return released(ctx, req, s.frameworkServer.ValidateResourceConfig)
}

func (s releasingServer) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	return released(ctx, req, s.frameworkServer.UpgradeResourceState)
}

func (s releasingServer) UpgradeResourceIdentity(ctx context.Context, req *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return released(ctx, req, s.frameworkServer.UpgradeResourceIdentity)
}

func (s releasingServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	return released(ctx, req, s.frameworkServer.ReadResource)
}

func (s releasingServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	return released(ctx, req, s.frameworkServer.PlanResourceChange)
}

func (s releasingServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	return released(ctx, req, s.frameworkServer.ApplyResourceChange)
}

func (s releasingServer) ImportResourceState(ctx context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	return released(ctx, req, s.frameworkServer.ImportResourceState)
}

func (s releasingServer) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	return released(ctx, req, s.frameworkServer.ValidateDataResourceConfig)
}

func (s releasingServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	return released(ctx, req, s.frameworkServer.ReadDataSource)
}

func (s releasingServer) CallFunction(ctx context.Context, req *tfprotov6.CallFunctionRequest) (*tfprotov6.CallFunctionResponse, error) {
	return released(ctx, req, s.frameworkServer.CallFunction)
}

// released calls call with a context that stands for ctx until call returns.
func released[Req, Resp any](ctx context.Context, req Req, call func(context.Context, Req) (Resp, error)) (Resp, error) {
	d := &detachable{}
	d.ctx.Store(&ctx)
	defer d.ctx.Store(nil)
	return call(d, req)
}

// detachable is a context that is its parent until it is detached (its parent set to nil), and
// then one that is never done and has no values. What keeps it keeps nothing of the parent then.
// Its Done is the parent's own channel, so a context derived from it while attached is cancelled
// with the parent, as one derived from the parent would be.
type detachable struct {
	ctx atomic.Pointer[context.Context]
}

func (d *detachable) parent() context.Context {
	if p := d.ctx.Load(); p != nil {
		return *p
	}
	return context.Background()
}

func (d *detachable) Deadline() (time.Time, bool) { return d.parent().Deadline() }
func (d *detachable) Done() <-chan struct{}       { return d.parent().Done() }
func (d *detachable) Err() error                  { return d.parent().Err() }
func (d *detachable) Value(key any) any           { return d.parent().Value(key) }
