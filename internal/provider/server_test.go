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

// kept reports whether server still holds what the context of a ValidateResourceConfig call
// held, once the call has returned and the heap been collected.
func kept(t *testing.T, server tfprotov6.ProviderServer) bool {
	t.Helper()
	payload := &callPayload{}
	held := weak.Make(payload)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), callKey{}, payload))
	resp, err := server.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: "fleet_no_such_resource"})
	cancel() // as gRPC does when a call ends
	if err != nil || len(resp.Diagnostics) == 0 {
		t.Fatalf("ValidateResourceConfig of an unknown type: err %v, diagnostics %v; want an error diagnostic", err, resp.Diagnostics)
	}
	runtime.GC()
	runtime.GC()
	defer runtime.KeepAlive(server) // the server lives on, as the provider's process does
	return held.Value() != nil
}

// TestServerReleasesCallContexts: the framework's server keeps each call's context until the
// provider stops (its StopProvider cancels them); the provider's server keeps none. When the
// first check fails, the framework no longer keeps them, and releasingServer can go.
func TestServerReleasesCallContexts(t *testing.T) {
	if !kept(t, providerserver.NewProtocol6(New("test")())()) {
		t.Error("the framework's server let go of a call's context: releasingServer is no longer needed")
	}
	server := NewServer("test")()
	for range 3 {
		if kept(t, server) {
			t.Fatal("the provider's server kept the context of a call that returned")
		}
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
