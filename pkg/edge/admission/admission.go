package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// Defaults of Options (documented in the README).
const (
	DefaultMaxBodyBytes           = 4 << 20  // the go-sdk's own request limit
	DefaultMaxInitializeBytes     = 64 << 10 // a request that creates a session
	DefaultMaxSessions            = 10000
	DefaultMaxSessionsPerIdentity = 100
)

// Options configure a Gate. Zero fields take the defaults above; a
// negative session limit means none.
type Options struct {
	// IdentityHeader names the header a trusted proxy sets to the caller's
	// identity; "" means none is required.
	IdentityHeader         string
	MaxBodyBytes           int64
	MaxInitializeBytes     int64
	MaxSessions            int
	MaxSessionsPerIdentity int
	// MaxDepth bounds the nesting of a body; 0 means mcpwire.MaxDepth.
	MaxDepth int
	// MaxBatch bounds the messages of a JSON-RPC batch; 0 means
	// DefaultMaxBatch.
	MaxBatch int
	// MetaCallTool names the meta-tool (an optimizer edge's call_tool)
	// whose arguments.tool_name is the tool a call calls; "" for none.
	MetaCallTool string
	// SupportedVersions are the protocol versions served, newest first:
	// the data of the unsupported-version error a malformed
	// Mcp-Protocol-Version gets.
	SupportedVersions []string
}

// Gate decides admissions. Its zero value is not ready: use New.
type Gate struct{ o Options }

// New returns a gate with o's limits (nil means defaults).
func New(o *Options) *Gate {
	var c Options
	if o != nil {
		c = *o
	}
	def64 := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def64(&c.MaxBodyBytes, DefaultMaxBodyBytes)
	def64(&c.MaxInitializeBytes, DefaultMaxInitializeBytes)
	def(&c.MaxSessions, DefaultMaxSessions)
	def(&c.MaxSessionsPerIdentity, DefaultMaxSessionsPerIdentity)
	def(&c.MaxDepth, mcpwire.MaxDepth)
	def(&c.MaxBatch, DefaultMaxBatch)
	c.IdentityHeader = strings.TrimSpace(c.IdentityHeader)
	return &Gate{o: c}
}

// Options returns the gate's effective options.
func (g *Gate) Options() Options { return g.o }

// Request is what the gate knows of a request.
type Request struct {
	Method string
	Header http.Header
	// TokenUserID is the user id an auth layer in front established; ""
	// when none did.
	TokenUserID string
	// Body is the request's body as read within BodyLimit (a POST's);
	// Truncated reports that more followed.
	Body      []byte
	Truncated bool
	// Sessions and IdentitySessions are the sessions the edge holds, and
	// of those the identity's; read only for a request that creates one,
	// and then from Counts when it is set.
	Sessions, IdentitySessions int
	Counts                     func(identity string) (all, mine int)
	// Reserve, when set, decides the session caps atomically: it calls
	// fits with the sessions held and reserved (all, and the identity's)
	// under the lock a new session is registered under, and takes room for
	// one when fits reports true (the caller keeps it until the session is
	// made or the request ends). It reports whether it took room. It wins
	// over Sessions, IdentitySessions and Counts.
	Reserve func(identity string, fits func(all, mine int) bool) bool
	// Rebuild marks a request that rebuilds a stored session here: it
	// creates a session, whatever its body.
	Rebuild bool
}

// CodeUnsupportedProtocolVersion is the JSON-RPC error code of the
// 2026-07-28 revision's UnsupportedProtocolVersionError.
const CodeUnsupportedProtocolVersion = -32022

// Refusal reasons, the label of the edge's refusal metric.
const (
	ReasonMissingIdentity     = "missing_identity"
	ReasonDuplicateIdentity   = "duplicate_identity"
	ReasonBadProtocolVersion  = "bad_protocol_version"
	ReasonBodyTooLarge        = "body_too_large"
	ReasonBodyTooDeep         = "body_too_deep"
	ReasonMalformedBody       = "malformed_body"
	ReasonSessionLimit        = "session_limit"
	ReasonIdentitySessionCap  = "identity_session_limit"
	retryAfterEdgeFull        = 5 * time.Second
	retryAfterIdentityAtLimit = 30 * time.Second
)

// Sentinels of refusals, matched with errors.Is on Refusal.Err.
var (
	ErrUnauthenticated = errors.New("admission: no identity")
	ErrBadRequest      = errors.New("admission: malformed request")
	ErrTooLarge        = errors.New("admission: request too large")
	ErrLimited         = errors.New("admission: session limit reached")
	ErrRateLimited     = errors.New("admission: rate limited")
)

// Refusal is a request the gate will not let through, and how to answer.
type Refusal struct {
	Status int
	Reason string // metric label
	Err    error  // wraps one of the sentinels; its text is safe to send
	// Cause is why, for the log only: never sent to the client (the
	// issuer's JWKS that could not be fetched, and how it failed).
	Cause      error
	RetryAfter time.Duration
	// RPC marks refusals answered as a JSON-RPC error (a body no parser
	// may read) rather than plain text.
	RPC bool
	// Code is the JSON-RPC error code of an RPC refusal.
	Code int
	// ID is the id of the request an RPC refusal answers (nil: null,
	// when the body is not one request); Data the error's data, if any.
	ID, Data json.RawMessage
	// Header holds headers the refusal is sent with (WWW-Authenticate).
	Header http.Header
}

// Decision is the gate's answer: Identity is the caller's identity ("" for
// an anonymous caller); a nil Refusal lets the request through. Body is a
// POST's body as parsed (nil for other requests): every later decision
// about the request reads it.
type Decision struct {
	Identity string
	Refusal  *Refusal
	Body     *Body
}

// BodyLimit is how many bytes of a POST's body the gate needs to see.
func (g *Gate) BodyLimit(h http.Header) int64 {
	if createsByHeader(h) {
		return g.o.MaxInitializeBytes
	}
	return g.o.MaxBodyBytes
}

// createsByHeader: a session-based POST without a session id is an
// initialize; a 2026-07-28 subscriptions/listen opens a listen session.
func createsByHeader(h http.Header) bool {
	if v := h.Get("Mcp-Protocol-Version"); v == "" || !NewProtocol(v) {
		return h.Get("Mcp-Session-Id") == ""
	}
	return h.Get("Mcp-Method") == "subscriptions/listen"
}

// CreatesSession reports whether r, of body b as parsed (nil: not parsed
// yet), would create a session on this edge.
func (g *Gate) CreatesSession(r *Request, b *Body) bool {
	if r.Rebuild {
		return true
	}
	if r.Method != http.MethodPost {
		return false
	}
	if createsByHeader(r.Header) {
		return true
	}
	// A listen stream is recognised by its body too (Edge.serveStateless).
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == "" || !NewProtocol(v) {
		return false
	}
	if b == nil {
		return bytes.Contains(r.Body, []byte("subscriptions/listen"))
	}
	for i := range b.Messages {
		if b.Messages[i].Method == "subscriptions/listen" {
			return true
		}
	}
	return false
}

// Identity is the caller's identity: the token's user id when an auth
// layer set one, else the identity header's value. ok is false when an
// identity header is configured and the request lacks it.
func (g *Gate) Identity(h http.Header, tokenUserID string) (id string, ok bool) {
	if tokenUserID != "" {
		return tokenUserID, true
	}
	if g.o.IdentityHeader == "" {
		return "", true
	}
	vals := h.Values(g.o.IdentityHeader)
	if len(vals) != 1 { // none, or sent twice: which one the proxy set is unknown
		return "", false
	}
	id = strings.TrimSpace(vals[0])
	return id, id != ""
}

// CodeTooLarge is the JSON-RPC error code of a body over its limit (the
// 413's body): the request is not read, so it is an invalid request.
const CodeTooLarge = codeInvalidRequest

// TooLarge is the refusal of a body over limit bytes, the limit of the
// edge's flag (without its dashes): 413 with a JSON-RPC error a client can
// read, whose message and data name the limit. The edge answers it before
// the rest of the body is read (see Edge.refuseTooLarge).
func TooLarge(limit int64, flag string) *Refusal {
	f := &Refusal{Status: http.StatusRequestEntityTooLarge, Reason: ReasonBodyTooLarge, RPC: true, Code: CodeTooLarge,
		Err: fmt.Errorf("%w: body over the limit of %d bytes (--%s)", ErrTooLarge, limit, flag)}
	f.Data, _ = json.Marshal(struct {
		Limit int64  `json:"limit"`
		Flag  string `json:"flag"`
	}{limit, "--" + flag})
	return f
}

// Admit decides r.
func (g *Gate) Admit(r *Request) Decision {
	id, ok := g.Identity(r.Header, r.TokenUserID)
	d := Decision{Identity: id}
	refuse := func(status int, reason string, err error) Decision {
		d.Refusal = &Refusal{Status: status, Reason: reason, Err: err}
		return d
	}
	if r.TokenUserID == "" && g.o.IdentityHeader != "" && len(r.Header.Values(g.o.IdentityHeader)) > 1 {
		// A client may add its own header next to the proxy's: the edge
		// cannot tell which is the proxy's, so neither is taken.
		return refuse(http.StatusBadRequest, ReasonDuplicateIdentity,
			fmt.Errorf("%w: identity header %s sent more than once", ErrBadRequest, g.o.IdentityHeader))
	}
	if !ok {
		return refuse(http.StatusUnauthorized, ReasonMissingIdentity,
			fmt.Errorf("%w: missing identity header %s", ErrUnauthenticated, g.o.IdentityHeader))
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !ValidVersion(v) {
		// The 2026-07-28 revision's UnsupportedProtocolVersionError, a
		// JSON-RPC body with HTTP 400 (a 400 is all older ones ask for).
		d = refuse(http.StatusBadRequest, ReasonBadProtocolVersion,
			fmt.Errorf("%w: unsupported protocol version: Mcp-Protocol-Version is not a date (YYYY-MM-DD)", ErrBadRequest))
		d.Refusal.RPC, d.Refusal.Code = true, CodeUnsupportedProtocolVersion
		d.Refusal.Data, _ = json.Marshal(struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{g.o.SupportedVersions, v})
		if r.Method == http.MethodPost && !r.Truncated && int64(len(r.Body)) <= g.o.MaxBodyBytes && mcpwire.Check(r.Body, g.o.MaxDepth) == nil {
			if b, err := ParseBody(r.Body, g.o.MaxBatch, g.o.MetaCallTool); err == nil {
				if m, ok := b.Single(); ok {
					d.Refusal.ID = m.ID
				}
			}
		}
		return d
	}
	if r.Method == http.MethodPost {
		limit, flag := g.o.MaxBodyBytes, "max-request-bytes"
		if g.CreatesSession(r, nil) {
			limit, flag = g.o.MaxInitializeBytes, "max-initialize-bytes"
		}
		if r.Truncated || int64(len(r.Body)) > limit {
			d.Refusal = TooLarge(limit, flag)
			return d
		}
		if err := mcpwire.Check(r.Body, g.o.MaxDepth); err != nil {
			reason := ReasonMalformedBody
			if errors.Is(err, mcpwire.ErrTooDeep) {
				reason = ReasonBodyTooDeep
			}
			d = refuse(http.StatusBadRequest, reason, fmt.Errorf("%w: %w", ErrBadRequest, err))
			d.Refusal.RPC, d.Refusal.Code = true, codeParseError
			return d
		}
		if len(r.Body) > 0 || !r.Rebuild {
			b, err := ParseBody(r.Body, g.o.MaxBatch, g.o.MetaCallTool)
			if err != nil {
				d.Refusal = bodyRefusal(err)
				return d
			}
			d.Body = b
		}
	}
	if !g.CreatesSession(r, d.Body) {
		return d
	}
	if r.Reserve != nil {
		var f *Refusal
		if !r.Reserve(id, func(all, mine int) bool { f = g.capRefusal(id, all, mine); return f == nil }) {
			if f == nil { // refused without asking: as a full edge
				f = &Refusal{Status: http.StatusServiceUnavailable, Reason: ReasonSessionLimit, RetryAfter: retryAfterEdgeFull,
					Err: fmt.Errorf("%w: this edge takes no more sessions", ErrLimited)}
			}
			d.Refusal = f
		}
		return d
	}
	if r.Counts != nil {
		r.Sessions, r.IdentitySessions = r.Counts(id)
	}
	d.Refusal = g.capRefusal(id, r.Sessions, r.IdentitySessions)
	return d
}

// capRefusal is the refusal of one more session of identity id where all
// sessions are held, mine of them id's; nil when there is room.
func (g *Gate) capRefusal(id string, all, mine int) *Refusal {
	if g.o.MaxSessions > 0 && all >= g.o.MaxSessions {
		return &Refusal{Status: http.StatusServiceUnavailable, Reason: ReasonSessionLimit, RetryAfter: retryAfterEdgeFull,
			Err: fmt.Errorf("%w: this edge holds %d sessions", ErrLimited, g.o.MaxSessions)}
	}
	if id != "" && g.o.MaxSessionsPerIdentity > 0 && mine >= g.o.MaxSessionsPerIdentity {
		return &Refusal{Status: http.StatusTooManyRequests, Reason: ReasonIdentitySessionCap, RetryAfter: retryAfterIdentityAtLimit,
			Err: fmt.Errorf("%w: %d sessions of this identity", ErrLimited, g.o.MaxSessionsPerIdentity)}
	}
	return nil
}
