package provider

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"weak"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

type callKey struct{}

// callPayload stands for what a call's context holds: loggers, the gRPC stream.
type callPayload struct{ _ [1 << 16]byte }

// unknown names no resource, data source or function of the provider: each call below returns
// an error diagnostic early, after the framework has registered its context.
const unknown = "fleet_no_such_thing"

// callsPerResource are the calls a plan or apply makes once per resource, data source or
// function call, each returning its diagnostics.
var callsPerResource = map[string]func(context.Context, tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error){
	"ValidateResourceConfig": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"UpgradeResourceState": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"UpgradeResourceIdentity": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.UpgradeResourceIdentity(ctx, &tfprotov6.UpgradeResourceIdentityRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"ReadResource": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"PlanResourceChange": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"ApplyResourceChange": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"ImportResourceState": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"ValidateDataResourceConfig": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.ValidateDataResourceConfig(ctx, &tfprotov6.ValidateDataResourceConfigRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"ReadDataSource": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.ReadDataSource(ctx, &tfprotov6.ReadDataSourceRequest{TypeName: unknown})
		return r.Diagnostics, err
	},
	"CallFunction": func(ctx context.Context, s tfprotov6.ProviderServer) ([]*tfprotov6.Diagnostic, error) {
		r, err := s.CallFunction(ctx, &tfprotov6.CallFunctionRequest{Name: unknown})
		if r.Error != nil {
			return []*tfprotov6.Diagnostic{{Severity: tfprotov6.DiagnosticSeverityError, Summary: r.Error.Text}}, err
		}
		return nil, err
	},
}

// kept reports whether server still holds what the context of a call held, once the call has
// returned and the heap been collected.
func kept(t *testing.T, server tfprotov6.ProviderServer, name string) bool {
	t.Helper()
	payload := &callPayload{}
	held := weak.Make(payload)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), callKey{}, payload))
	diags, err := callsPerResource[name](ctx, server)
	cancel() // as gRPC does when a call ends
	if err != nil || len(diags) == 0 {
		t.Fatalf("%s of %s: err %v, diagnostics %v; want an error diagnostic", name, unknown, err, diags)
	}
	runtime.GC()
	runtime.GC()
	defer runtime.KeepAlive(server) // the server lives on, as the provider's process does
	return held.Value() != nil
}

// TestServerReleasesCallContexts: the framework's server keeps each call's context until the
// provider stops (its StopProvider cancels them); the provider's server keeps none, for every
// call made once per resource. When the first check fails, the framework no longer keeps them,
// and releasingServer can go.
func TestServerReleasesCallContexts(t *testing.T) {
	for name := range callsPerResource {
		t.Run(name, func(t *testing.T) {
			if !kept(t, providerserver.NewProtocol6(New("test")())(), name) {
				t.Error("the framework's server let go of the call's context: releasingServer is no longer needed for it")
			}
			server := NewServer("test")()
			for range 3 {
				if kept(t, server, name) {
					t.Fatal("the provider's server kept the context of a call that returned")
				}
			}
		})
	}
}

// TestDetachableContext: attached, the context is its parent (values, cancellation, deadline);
// detached, it holds none of it, and what was derived from it while attached was cancelled with
// the parent.
func TestDetachableContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), callKey{}, "v"))
	d := &detachable{}
	d.ctx.Store(&parent)
	child, stop := context.WithCancel(d)
	defer stop()
	if got := child.Value(callKey{}); got != "v" {
		t.Fatalf("attached: Value = %v, want v", got)
	}
	cancel()
	<-child.Done() // a child of the parent's cancelCtx, not a goroutine's watch
	if !errors.Is(d.Err(), context.Canceled) {
		t.Fatalf("attached: Err = %v after the parent was cancelled, want context.Canceled", d.Err())
	}
	d.ctx.Store(nil)
	if d.Value(callKey{}) != nil || d.Err() != nil || d.Done() != nil {
		t.Fatalf("detached: Value %v, Err %v, Done %v; want nil, nil, nil", d.Value(callKey{}), d.Err(), d.Done())
	}
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("the derived context's Err = %v, want context.Canceled", child.Err())
	}
}
