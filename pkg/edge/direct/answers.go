package direct

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
)

// Options configure Answers; all but the switches and Open are required.
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
	// Open registers s, the listen session request r made (nil:
	// Sessions.Open).
	Open func(r *http.Request, s *session.Session)
}

// jsonContentType is the Content-Type of a call's answer, shared by every
// answer (a header value no one writes into: what Header().Set would
// allocate per call).
var jsonContentType = []string{"application/json"}

// Answers answers the requests of the forms above without the go-sdk.
type Answers struct {
	o        Options
	implJSON []byte
}

// New returns the Answers of o.
func New(o Options) *Answers {
	if o.Open == nil {
		o.Open = func(_ *http.Request, s *session.Session) { o.Sessions.Open(s) }
	}
	a := &Answers{o: o}
	a.implJSON, _ = json.Marshal(o.Impl) // strings only: it encodes
	return a
}

// Body is a request body the admission gate read whole and parsed (the
// edge's): an answer reads it, and leaves it unread again (Again) for
// the go-sdk when it leaves the request to it.
type Body interface {
	io.ReadCloser
	// Bytes is the body; Message its one message as the gate parsed it
	// (false for a batch or a body the gate did not parse).
	Bytes() []byte
	Message() (*admission.Message, bool)
	// Again is the same body, unread.
	Again() io.ReadCloser
}
