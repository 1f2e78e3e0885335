package puller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// StallError is a registry that sent nothing for Options.IdleTimeout while the puller waited for
// bytes: a response's headers, or the rest of a body. It is a timeout (net.Error), so Classify
// makes it Unreachable and the pull fails over.
type StallError struct{ Idle time.Duration }

func (e *StallError) Error() string {
	return fmt.Sprintf("the registry stalled: nothing received for %s (idle timeout)", e.Idle)
}

// Timeout reports true: a stall is a timeout.
func (*StallError) Timeout() bool { return true }

// Temporary reports true, as net's own timeouts do.
func (*StallError) Temporary() bool { return true }

// idleDialer wraps d's connections in idleConn, unless idle is zero (no limit).
func idleDialer(d *net.Dialer, idle time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if idle <= 0 {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &idleConn{Conn: c, idle: idle}, nil
	}
}

// idleConn gives up a read when no byte arrives within idle of the last sign of life: a write
// (a request, a TLS handshake message) or the start of the read. Moving the deadline on writes
// keeps a connection that waited in the pool from failing the first request sent on it; an idle
// pooled connection whose deadline passes is closed, which the transport handles as a server
// closing an idle connection.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(c.idle))
	n, err := c.Conn.Read(b)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &StallError{Idle: c.idle}
	}
	return n, err
}

func (c *idleConn) Write(b []byte) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}
