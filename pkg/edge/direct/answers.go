package direct

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
)

// Options configure Answers; Calls, Sessions, Hijacks, Shared, Impl and
// Identity are required.
type Options struct {
	Calls    *calls.Plane
	Sessions *session.Registry
	// Hijacks runs the listen streams taken over.
	Hijacks *h1.Hijacks
	// Shared is the session of the shared 2026-07-28 server: its calls run
	// as that session's.
	Shared *session.Session
	// Impl is the server's info, added to a 2026-07-28 result's _meta.
	Impl *mcp.Implementation
	// Identity is the caller's identity of a request (the gate's).
	Identity func(*http.Request) string
	// Passthrough: the edge serves every tool (an optimizer edge's calls
	// are the go-sdk's: its meta-tools).
	Passthrough bool
	// SessionTimeout is the go-sdk's idle timeout of sessions: it is
	// renewed only by requests the go-sdk serves, so with one, a
	// session's calls are the go-sdk's.
	SessionTimeout time.Duration
	// GoSDKStateless leaves every 2026-07-28 tools/call to the go-sdk (a
	// test or benchmark compares the two).
	GoSDKStateless bool
}

// Answers answers the requests of the forms above without the go-sdk.
type Answers struct {
	o        Options
	implJSON []byte
}

// New returns the Answers of o.
func New(o Options) *Answers {
	a := &Answers{o: o}
	a.implJSON, _ = json.Marshal(o.Impl) // strings only: it encodes
	return a
}

// Body is a request body read whole (by the admission gate, or by a call
// lane), with the gate's parse of it once admitted.
type Body struct {
	*bytes.Reader
	Data   []byte
	Parsed *admission.Body
}

// NewBody is b as a request body.
func NewBody(b []byte) *Body { return &Body{Reader: bytes.NewReader(b), Data: b} }

// Again is the same body, unread.
func (wb *Body) Again() *Body {
	return &Body{Reader: bytes.NewReader(wb.Data), Data: wb.Data, Parsed: wb.Parsed}
}

// Message is the body's one message as the gate parsed it; false for a
// batch or a body the gate did not parse.
func (wb *Body) Message() (*admission.Message, bool) {
	return wb.Parsed.Single()
}

// Close does nothing: the body is in memory.
func (*Body) Close() error { return nil }
