package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// DefaultMaxResponse bounds a backend's response body, or one event
// of an event-stream body (Options.MaxBackendResponse).
const DefaultMaxResponse = 16 << 20

// Kinds of backend failure: the only words of a backend failure that reach
// a client, a log line or the call trail. A backend's own error body, its
// URL and anything a transport error quotes of it (user info, query) never
// do.
const (
	KindTimeout     = "timed out"
	KindUnreachable = "unreachable"
	KindTooLarge    = "response too large"
	KindTooDeep     = "response nested too deep"
	KindBadResponse = "invalid response"
	KindSessionLost = "session lost"
	KindStatus      = "HTTP error"
	KindRPCError    = "JSON-RPC error"
	KindCancelled   = "cancelled"
	KindFailed      = "failed"
)

// errHTTPStatus is a non-2xx answer of a backend (its body is not kept).
type errHTTPStatus struct{ code int }

func (e *errHTTPStatus) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// Error is a failed exchange with a backend, as clients and logs see
// it: the backend's name, the method, the kind of failure and, for an
// HTTP status or a JSON-RPC error, its code (and that error's message, at
// most maxRPCMessage bytes). Unwrap gives the cause for errors.Is; its
// text is never part of Error.
type Error struct {
	Backend, Method, Kind string
	Code                  int64
	Message               string
	cause                 error
}

// maxRPCMessage bounds the part of a backend's JSON-RPC error message
// passed on.
const maxRPCMessage = 256

func (e *Error) Error() string {
	switch e.Kind {
	case KindStatus:
		return fmt.Sprintf("backend %q: %s: HTTP %d", e.Backend, e.Method, e.Code)
	case KindRPCError:
		return fmt.Sprintf("backend %q: %s: JSON-RPC error %d: %s", e.Backend, e.Method, e.Code, e.Message)
	}
	return fmt.Sprintf("backend %q: %s: %s", e.Backend, e.Method, e.Kind)
}

func (e *Error) Unwrap() error { return e.cause }

// backendError classifies err, the failure of method on backend.
func backendError(backend, method string, err error) *Error {
	be := &Error{Backend: backend, Method: method, Kind: KindFailed, cause: err}
	var status *errHTTPStatus
	var rpc *jsonrpc.Error
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		be.Kind = KindTimeout
	case errors.Is(err, context.Canceled):
		be.Kind = KindCancelled
	case errors.Is(err, mcpwire.ErrTooLarge):
		be.Kind = KindTooLarge
	case errors.Is(err, mcpwire.ErrTooDeep):
		be.Kind = KindTooDeep
	case errors.Is(err, mcp.ErrSessionMissing):
		be.Kind = KindSessionLost
	case errors.As(err, &status):
		be.Kind, be.Code = KindStatus, int64(status.code)
	case errors.As(err, &rpc) && rpc.Code != codeRejected:
		be.Kind, be.Code, be.Message = KindRPCError, rpc.Code, truncateUTF8(rpc.Message, maxRPCMessage)
	case errors.As(err, &nerr), errors.Is(err, errNotSent), errors.Is(err, h1.ErrUndelivered), notSent(err),
		errors.Is(err, mcp.ErrConnectionClosed):
		be.Kind = KindUnreachable
	case errors.Is(err, errNoResponse), errors.Is(err, mcpwire.ErrUnbalanced), errors.Is(err, errBadResponse):
		be.Kind = KindBadResponse
	}
	return be
}

// errBadResponse wraps a backend response the edge could not read.
var errBadResponse = errors.New("invalid backend response")

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
