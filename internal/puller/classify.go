package puller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Classify returns the failure class of an error from one attempt at a registry made with ctx,
// and false when the error is not the registry's doing: ctx, the caller's context, was cancelled
// or passed its deadline, or the destination cannot be written. A registry that answers in a way
// no other class covers is Unreachable.
//
// Only ctx tells the caller's cancellation from a registry's: a timeout of the attempt itself (the
// dial, the wait for response headers, the attempt timeout) also wraps context.DeadlineExceeded,
// and is the registry's failure, Unreachable, as long as ctx is alive.
func Classify(ctx context.Context, err error) (Class, bool) {
	if err == nil || ctx.Err() != nil {
		return "", false
	}
	switch {
	case errors.Is(err, errAttemptTimeout):
		return Unreachable, true
	case errors.Is(err, errUnverified):
		return Unverified, true
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData),
		errors.Is(err, errIntegrity),
		isHeaderMismatch(err):
		return IntegrityMismatch, true
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return Unauthorized, true
	case errors.Is(err, errdef.ErrNotFound):
		return NotFound, true
	}
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return Unauthorized, true
		case http.StatusNotFound:
			return NotFound, true
		}
		return Unreachable, true
	}
	if isTLS(err) || errors.Is(err, errPlainHTTPToTLS) {
		return TLS, true
	}
	// The cache's own storage failing (a full disk) is no registry's doing; its errno would
	// pass for a net.Error below.
	if errors.As(err, new(storeError)) {
		return "", false
	}
	// Timeouts are net.Errors, context.DeadlineExceeded included.
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Unreachable, true
	}
	// What is left is the destination's failure, or a registry answering nonsense.
	var copyErr *oras.CopyError
	if errors.As(err, &copyErr) && copyErr.Origin == oras.CopyErrorOriginDestination {
		return "", false
	}
	return Unreachable, true
}

func isTLS(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		recordHeader     tls.RecordHeaderError
		alert            tls.AlertError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verification) || errors.As(err, &recordHeader) || errors.As(err, &alert) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// isHeaderMismatch reports oras-go's untyped errors for a response whose Content-Length or
// Docker-Content-Digest contradicts the descriptor asked for.
func isHeaderMismatch(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "mismatch Content-Length") || strings.Contains(msg, "digest mismatch in Docker-Content-Digest")
}
