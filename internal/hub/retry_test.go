package hub

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
)

// How client-go reports a failed request: a *url.Error around what the transport said.
func transportErr(err error) error {
	return &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/apis/fleet.umkim.io/v1alpha1/namespaces/ws/fleetapps/web", Err: err}
}

func sysErr(op string, errno syscall.Errno) error {
	return transportErr(&net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)})
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "net/http: TLS handshake timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// The classification table of Transient: what a restarting or overloaded hub and a flaky network
// give is retried, what the same request would get again is not.
func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "fleet.umkim.io", Resource: "fleetapps"}
	server := func(code int) error {
		return apierrors.NewGenericServerResponse(code, "PATCH", gr, "web", "<html>bad gateway</html>", 0, true)
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused (the API server is down)", sysErr("connect", syscall.ECONNREFUSED), true},
		{"connection reset by peer", sysErr("read", syscall.ECONNRESET), true},
		{"connection aborted", sysErr("read", syscall.ECONNABORTED), true},
		{"broken pipe", sysErr("write", syscall.EPIPE), true},
		{"EOF (the server closed mid-answer)", transportErr(io.EOF), true},
		{"unexpected EOF", transportErr(io.ErrUnexpectedEOF), true},
		{"HTTP/2 GOAWAY", transportErr(errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=5")), true},
		{"HTTP/2 connection lost", transportErr(errors.New("http2: client connection lost")), true},
		{"HTTP/2 connection force closed", transportErr(errors.New("http2: client connection force closed via ClientConn.Close")), true},
		{"a network timeout", transportErr(timeoutErr{}), true},
		{"a request timeout", transportErr(fmt.Errorf("net/http: request canceled (Client.Timeout exceeded while awaiting headers): %w", context.DeadlineExceeded)), true},
		{"429 too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"429 without Retry-After", server(http.StatusTooManyRequests), true},
		{"500 internal error (etcd restarting)", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"502 from a proxy", server(http.StatusBadGateway), true},
		{"503 unavailable", apierrors.NewServiceUnavailable("apiserver is shutting down"), true},
		{"504 gateway timeout", server(http.StatusGatewayTimeout), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "patch", 1), true},
		{"timeout", apierrors.NewTimeoutError("request did not complete within 60s", 0), true},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("the object has been modified")), true},

		{"nil", nil, false},
		{"not found", apierrors.NewNotFound(gr, "web"), false},
		{"already exists", apierrors.NewAlreadyExists(gr, "web"), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "FleetApp"}, "web", field.ErrorList{field.Required(field.NewPath("spec", "chart"), "")}), false},
		{"bad request", apierrors.NewBadRequest("no"), false},
		{"unauthorized", apierrors.NewUnauthorized("who are you"), false},
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New("no RBAC")), false},
		{"method not allowed", server(http.StatusMethodNotAllowed), false},
		{"unknown certificate authority", transportErr(x509.UnknownAuthorityError{}), false},
		{"no such host", transportErr(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "hub.example", IsNotFound: true}}), false},
		{"cancelled", transportErr(context.Canceled), false},
		{"some other error", errors.New("boom"), false},
	}
	for _, tc := range cases {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// retryTransient retries transient errors with growing, jittered sleeps, stops at the first
// other error, and gives up within its budget or when the context ends.
func TestRetryTransient(t *testing.T) {
	refused := sysErr("connect", syscall.ECONNREFUSED)
	t.Run("retries until the hub is back", func(t *testing.T) {
		calls := 0
		start := time.Now()
		err := retryTransient(t.Context(), 10*time.Second, func() error {
			if calls++; calls < 4 {
				return refused
			}
			return nil
		})
		if err != nil || calls != 4 {
			t.Fatalf("err %v after %d calls, want success on the 4th", err, calls)
		}
		// Sleeps of 100, 200 and 400 ms, each jittered to [½, 1½): between 350 ms and 1.05 s.
		if d := time.Since(start); d < 350*time.Millisecond || d > 2*time.Second {
			t.Fatalf("3 retries took %s, want 350ms–1.05s of back-off", d)
		}
	})
	t.Run("a permanent error is not retried", func(t *testing.T) {
		calls := 0
		gr := schema.GroupResource{Resource: "secrets"}
		err := retryTransient(t.Context(), 10*time.Second, func() error { calls++; return apierrors.NewForbidden(gr, "x", errors.New("no")) })
		if !apierrors.IsForbidden(err) || calls != 1 {
			t.Fatalf("err %v after %d calls, want Forbidden after 1", err, calls)
		}
	})
	t.Run("gives up within its budget with the last error", func(t *testing.T) {
		calls := 0
		start := time.Now()
		err := retryTransient(t.Context(), 1500*time.Millisecond, func() error { calls++; return refused })
		d := time.Since(start)
		if !errors.Is(err, syscall.ECONNREFUSED) || calls < 3 || d > 1500*time.Millisecond {
			t.Fatalf("err %v after %d calls in %s, want connection refused after several calls within 1.5s", err, calls, d)
		}
	})
	t.Run("stops when the context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := retryTransient(ctx, time.Minute, func() error { return refused })
		if d := time.Since(start); !errors.Is(err, syscall.ECONNREFUSED) || d > time.Second {
			t.Fatalf("err %v after %s, want the last error soon after the context's 300ms", err, d)
		}
	})
}

// A client of a hub that is not there retries for its request timeout, then says it is
// unreachable.
func TestClientRetriesUnreachableHub(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now: connection refused
	c, err := NewClient(&rest.Config{Host: "https://" + addr, Timeout: time.Second}, "test")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Get(t.Context(), Kind{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret"}, "default", "x")
	d := time.Since(start)
	if !errors.Is(err, ErrUnreachable) || d < 500*time.Millisecond || d > 2*time.Second {
		t.Fatalf("Get = %v after %s, want ErrUnreachable after retrying for about the 1s request timeout", err, d)
	}
}
