package dispatch

import "github.com/fleetgate/fleetgate/pkg/edge/admission"

// A Kind is a route.
type Kind uint8

// The routes, in the order Route tries them.
const (
	// Protocol 2026-07-28 and later (no sessions).
	StatelessCall Kind = iota + 1 // a plain tools/call the edge answers itself
	Listen                        // a subscriptions/listen stream the edge serves itself
	ListenSDK                     // a subscriptions/listen stream served by a go-sdk server of its own
	StatelessSDK                  // anything else, to the go-sdk's stateless handler

	// The session-based protocol.
	Initialize   // a POST without a session id that is one initialize: a new session
	NoSession    // a POST without a session id that is not: 400
	SessionLess  // another request without a session id, to the go-sdk (its errors)
	NotFound     // a malformed session id, or a session neither held nor stored: 404
	DeleteStored // DELETE of a session another edge holds: its record is removed
	Rebuild      // a session another edge created: rebuilt here from its record, then routed again
	Foreign      // a session of another identity: 403
	Stream       // a standalone GET stream the edge serves itself
	Delete       // DELETE of a session held here
	Task         // a task method (or task-augmented call) the edge answers itself
	Call         // a plain tools/call the edge answers itself
	Cancel       // a notifications/cancelled: the edge's call is cancelled, then the go-sdk has it
	SessionSDK   // anything else of a session held here, to the go-sdk
)

var names = [...]string{"", "stateless-call", "listen", "listen-sdk", "stateless-sdk", "initialize", "no-session",
	"session-less", "not-found", "delete-stored", "rebuild", "foreign", "stream", "delete", "task", "call", "cancel", "session-sdk"}

func (k Kind) String() string {
	if int(k) < len(names) && k != 0 {
		return names[k]
	}
	return "invalid"
}

// Parse is the Kind named s ("" and false for none).
func Parse(s string) (Kind, bool) {
	for i, n := range names {
		if n == s && i != 0 {
			return Kind(i), true
		}
	}
	return 0, false
}

// Lane reports whether a call lane serves route k itself; it hands any
// other back to the server.
func Lane(k Kind) bool { return k == Call || k == StatelessCall }

// Held is what the edge's registry holds of a request's session.
type Held uint8

const (
	Absent  Held = iota // not held here
	Pending             // being initialized or rebuilt here, not addressable yet
	Live                // held and live
)

// Facts are what Route decides on, gathered once per request.
type Facts struct {
	Method    string // the HTTP method
	Stateless bool   // protocol 2026-07-28 or later (Mcp-Protocol-Version)
	MCPMethod string // the Mcp-Method header
	// Body is the gate's parse of a POST's body (nil for other requests).
	Body *admission.Body

	// The session-based protocol.
	SessionID      bool // an Mcp-Session-Id was sent
	SessionIDValid bool // ... and it is of the form session ids have
	Held           Held // the registry's hold on that session
	Store          bool // session records are kept: a session not held may be stored
	Owner          bool // the caller is the held session's owner
	OwnedStream    bool // a GET the go-sdk would take as the edge takes it

	// What the edge may answer itself: its mode and options, the session's
	// state and the request's headers allow it (the go-sdk would take the
	// request the same way).
	FastSession   bool // a plain call of this initialized session
	TaskSession   bool // task methods of this initialized session
	FastStateless bool // a plain 2026-07-28 call
	EdgeListen    bool // a listen stream of the edge's form
}

// Route is the route of a request with facts f.
func Route(f Facts) Kind {
	msg, single := f.Body.Single()
	if f.Stateless {
		switch {
		case f.Method == "POST" && f.MCPMethod == "tools/call" && f.FastStateless && single && msg.Method == "tools/call" && msg.ID != nil:
			// (its _meta, which the new protocol requires, is checked as
			// the go-sdk checks it where the call is answered: a call of
			// another form goes on to the go-sdk from there)
			return StatelessCall
		case f.Method == "POST" && f.Body != nil && len(f.Body.Messages) == 1 && f.Body.Messages[0].Method == "subscriptions/listen":
			if f.EdgeListen && single {
				return Listen
			}
			return ListenSDK
		}
		return StatelessSDK
	}
	if !f.SessionID {
		if f.Method != "POST" {
			return SessionLess
		}
		if single && msg.Method == "initialize" && msg.ID != nil {
			return Initialize
		}
		return NoSession
	}
	if !f.SessionIDValid {
		return NotFound
	}
	if f.Held != Live {
		switch {
		case !f.Store && f.Held == Pending, !f.Store && f.Held == Absent:
			return NotFound
		case f.Method == "DELETE":
			return DeleteStored
		}
		return Rebuild
	}
	if !f.Owner {
		return Foreign
	}
	switch f.Method {
	case "GET":
		if f.OwnedStream {
			return Stream
		}
	case "DELETE":
		return Delete
	case "POST":
		if !single {
			break
		}
		switch {
		case f.TaskSession && msg.ID != nil && (isTaskMethod(msg.Method) || msg.Method == "tools/call" && msg.Task):
			return Task
		case f.FastSession && msg.Plain && msg.Method == "tools/call":
			return Call
		case f.FastSession && msg.Plain && msg.Method == "notifications/cancelled":
			return Cancel
		}
	}
	return SessionSDK
}

func isTaskMethod(m string) bool {
	switch m {
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
		return true
	}
	return false
}
