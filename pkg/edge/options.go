package edge

import (
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/bearer"
	"github.com/fleetgate/fleetgate/pkg/edge/clientaddr"
	"github.com/fleetgate/fleetgate/pkg/edge/inputstate"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/records"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/search"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// Modes of an edge (Options.Mode).
const (
	// ModePassthrough serves every tool of the group's view.
	ModePassthrough = "passthrough"
	// ModeOptimizer serves find_tool and call_tool (plus the pinned tools)
	// and answers find_tool from a search index of the view.
	ModeOptimizer = "optimizer"
)

// Names of the optimizer mode's meta-tools.
const (
	FindToolName = view.FindToolName
	CallToolName = view.CallToolName
)

// Limits of find_tool's "limit" argument.
const (
	FindToolDefaultLimit = search.DefaultLimit // 8, when "limit" is absent
	FindToolMaxLimit     = search.MaxLimit     // 50; larger values are clamped
)

// Options configure an Edge. A nil *Options means defaults.
type Options struct {
	// paths turns hand-written paths off, so that tests and benchmarks
	// can compare them with the go-sdk's (unexported: not a setting).
	paths pathSwitches
	// ID is the edge instance id (logs, server info); default "edge".
	ID string
	// LogBySequence reads the regional logs of NewRegional by sequence,
	// without consumers (an edge of the edge account: the fleet account
	// offers it reads only). New takes a log attached as it should be.
	LogBySequence bool
	// CredentialLimits bound the files and environment variables the
	// backends' header references (from the event log) may name here: one
	// out of bounds fails its backend's calls, naming the reference (nil:
	// any file, any variable but FLEETGATE_*).
	CredentialLimits *credential.Limits
	// Stdio is this edge's allow-list of stdio commands and the runner of
	// its own instances of the stdio backends it serves (package stdio);
	// nil: a stdio backend's calls are refused, naming why.
	Stdio *stdio.Host
	// Group is the backend group served; default "default".
	Group string
	// Separator joins backend and tool names; default "_". It must match
	// the controller's aggregation.separator.
	Separator string
	// Listen is the MCP address (served at /mcp); default "127.0.0.1:8080".
	// "127.0.0.1:0" picks a free port (see MCPURL).
	Listen string
	// AdminListen is the admin API address; default "127.0.0.1:8082".
	AdminListen string
	// Coalesce is the least time between two resync batches: the first
	// change after a quiet period is applied at once, later ones within the
	// window are applied together at its end. Default 250ms.
	Coalesce time.Duration
	// CallTimeout bounds each request forwarded to a backend; default 60s.
	CallTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight calls; default 10s.
	ShutdownTimeout time.Duration
	// SessionTimeout closes sessions idle (no POST) for this long; 0 never.
	SessionTimeout time.Duration
	// CallerSessions bounds the backend sessions kept per caller (of
	// token_exchange and user_oauth backends), all backends together;
	// CallerIdle closes one unused this long. Defaults:
	// backend.DefaultMaxCallerSessions, backend.DefaultCallerIdle.
	CallerSessions int
	CallerIdle     time.Duration
	// BackendHTTPClient talks to backends; default a client without a
	// timeout (a timeout would cut streams; CallTimeout bounds calls) whose
	// transport makes plain-HTTP exchanges on the caller's goroutine
	// (package internal/h1).
	BackendHTTPClient *http.Client
	// Logger receives the edge's logs; default none. Tool arguments are
	// never logged.
	Logger *zerolog.Logger
	// Registry receives the edge's metrics; default a new registry.
	Registry *prometheus.Registry
	// Mode is ModePassthrough (default) or ModeOptimizer: only find_tool,
	// call_tool and the pinned tools are advertised, and find_tool
	// searches an index of the view (see the package doc).
	Mode string
	// PinnedTools are exposed tool names an optimizer edge advertises next
	// to the meta-tools, and notifies changes of (the config's
	// pinned_tools). Ignored in passthrough mode.
	PinnedTools []string
	// IdentityHeader names a request header carrying the caller's identity
	// (set by a trusted proxy), e.g. X-Fleetgate-User; "" means none. A
	// session is bound to the identity that created it (a go-sdk
	// TokenInfo.UserID takes precedence when an auth middleware sets one);
	// with a header configured, a request without it is refused (401).
	IdentityHeader string
	// InputState seals the requestState of the input-required results
	// the edge hands clients of the stateless generation; every edge of a
	// group must have one of the same key. nil: a key of this process
	// alone.
	InputState *inputstate.Sealer
	// HeldWait is how long the input request of a call held open for a
	// 2026-07-28 client (its backend asked it during the call) waits for
	// the client's retry, and the call's result for a request to take it;
	// default calls.DefaultHeldWait (60s).
	HeldWait time.Duration
	// HeldRelay is the NATS connection over which a retry of a held call
	// that reaches this edge is forwarded to the edge holding the call,
	// and the retries other edges forward to this one are taken (package
	// heldrelay; subject fleetgate.held.<ID>, so every edge of the group
	// needs a distinct ID). nil: such a retry is refused naming the
	// holder.
	HeldRelay *nats.Conn
	// OwnerKey keys the owner hash of the session records (and the call
	// trail): every edge of the fleet must have the same one. nil: the
	// unkeyed hash, which anyone can compute from an identity.
	OwnerKey *sessionstore.OwnerKey
	// TrustedProxies tells a request's client address (what failed
	// authentications are charged to, and refusals logged by) from the
	// forwarding header of the proxies it trusts; nil: the connection's
	// peer.
	TrustedProxies *clientaddr.Resolver
	// Auth makes the edge an OAuth 2.1 resource server: every request needs
	// a bearer token (nil: none). It excludes IdentityHeader.
	Auth *AuthOptions
	// AdminToken, when set, is the bearer token every admin request but
	// /healthz and /readyz needs (401 otherwise); AdminAllowedHosts are the
	// Host values the admin API answers besides loopback names with its
	// port (403 otherwise: no DNS rebinding).
	AdminToken        []byte
	AdminAllowedHosts []string
	// Records stores sessions in NATS KV so that they continue on another
	// edge; nil keeps them on this edge only (packages records, rebuild).
	Records *RecordOptions
	// CallTrail receives every tools/call; nil records none. The edge runs
	// it and drains it after its last call.
	CallTrail *calltrail.Trail

	// Limits of the admission gate (package admission; zero fields take
	// its defaults): request body and initialize sizes, sessions per edge
	// and per identity. IdentityHeader above is the gate's too.
	Limits admission.Options
	// SessionIdleTimeout ends a session without a request for this long,
	// with or without Records; default 30m, negative never.
	SessionIdleTimeout time.Duration
	// HeaderTimeout bounds the reading of a request's head (default 10s),
	// BodyTimeout the reading of a POST's body (default 30s), and
	// IdleTimeout a keep-alive connection (call lanes included) waiting
	// for its next request (default 2m).
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// MaxBackendResponse bounds a backend's response body, or one event of
	// an event stream; default DefaultMaxBackendResponse (16 MiB).
	MaxBackendResponse int64
	// MaxConnections caps the open MCP connections (default 16384): one
	// more is answered 503 and closed at once.
	MaxConnections int
	// WriteTimeout bounds every write to an MCP connection (responses,
	// streams, call lanes), 64 KiB at a time: a client that takes nothing
	// for this long is dropped and counted (default DefaultWriteTimeout;
	// negative: none).
	WriteTimeout time.Duration
	// SignIns make the edge keep per-user sign-ins to user_oauth backends
	// (signin.go); nil: such backends' calls fail (not signed in) and
	// they show no sign-in tool.
	SignIns *SignInOptions
	// TracerProvider receives the edge's spans (package spans); nil: the global
	// one (package tracing installs it), a no-op unless tracing is on.
	TracerProvider trace.TracerProvider
}

// DefaultWriteTimeout is Options.WriteTimeout's default.
const DefaultWriteTimeout = 30 * time.Second

// DefaultMaxBackendResponse is Options.MaxBackendResponse's default.
const DefaultMaxBackendResponse = backend.DefaultMaxResponse

// pathSwitches turn the edge's own paths off; each exists only so that a
// test or a benchmark can compare that path with what it replaces.
type pathSwitches struct {
	noLanes        bool // call lanes: every request is left to net/http
	noListEvidence bool // the tools/list convergence bookkeeping (its cost)
	goSDKListen    bool // every subscriptions/listen stream to the go-sdk
	goSDKStateless bool // every 2026-07-28 tools/call to the go-sdk
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.ID, "edge")
	def(&c.Group, "default")
	def(&c.Separator, catalog.DefaultSeparator)
	def(&c.Listen, "127.0.0.1:8080")
	def(&c.AdminListen, "127.0.0.1:8082")
	def(&c.Mode, ModePassthrough)
	if c.Coalesce == 0 {
		c.Coalesce = 250 * time.Millisecond
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 60 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	durDef := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	durDef(&c.SessionIdleTimeout, 30*time.Minute)
	durDef(&c.HeaderTimeout, 10*time.Second)
	durDef(&c.BodyTimeout, 30*time.Second)
	durDef(&c.IdleTimeout, 2*time.Minute)
	durDef(&c.WriteTimeout, DefaultWriteTimeout)
	if c.MaxConnections == 0 {
		c.MaxConnections = 16384
	}
	c.IdentityHeader = strings.TrimSpace(c.IdentityHeader) // as the gate reads it, for every path
	c.Limits.IdentityHeader = c.IdentityHeader
	if c.Mode == ModeOptimizer { // its call_tool's budget is the tool's it names
		c.Limits.MetaCallTool = CallToolName
	}
	if c.BackendHTTPClient == nil {
		c.BackendHTTPClient = &http.Client{Transport: h1.NewTransport(http.DefaultTransport.(*http.Transport).Clone())}
	}
	if c.Logger == nil {
		nop := zerolog.Nop()
		c.Logger = &nop
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	return c
}

// RecordOptions configure the shared session records that let a session
// continue on another edge (see the package doc, "Sessions across edges",
// and package records).
type RecordOptions = records.Options

// AuthOptions make the edge an OAuth 2.1 resource server (Options.Auth;
// package bearer).
type AuthOptions = bearer.Options
