package sessionstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

// MaxRecordSize is the largest encoded record the store accepts in any
// bucket; a bucket under MinRecords times it takes less (RecordLimit).
// Records are read on every rehydration, so they stay small; the
// convergence evidence is bounded by convergence.MaxCursorChain.
const MaxRecordSize = 64 << 10

// Mode is how the session's edge serves tools.
type Mode string

// Modes of a session.
const (
	ModePassthrough Mode = "passthrough"
	ModeOptimizer   Mode = "optimizer"
)

// Record is the state an edge needs to serve an MCP session it did not
// create: who owns it, what was negotiated, and what the client has seen.
// It is plain data and marshals to JSON with snake_case keys.
type Record struct {
	// ID is the session id (the Mcp-Session-Id header); see ValidateID.
	ID string `json:"id"`
	// Owner is OwnerHash of the authenticated identity that created the
	// session; "" for an unauthenticated session. An edge serves the
	// session only to a request whose identity hashes to the same value.
	Owner string `json:"owner,omitempty"`
	// Group is the backend group the session is bound to.
	Group string `json:"group"`
	// Mode is ModePassthrough or ModeOptimizer.
	Mode Mode `json:"mode"`
	// InitializeParams are the client's initialize request params, kept so
	// that another edge can rebuild the session. They are stored as JSON
	// without HTML escaping; compact JSON round-trips byte for byte.
	InitializeParams json.RawMessage `json:"initialize_params,omitempty"`
	// ProtocolVersion is the negotiated MCP protocol version.
	ProtocolVersion string `json:"protocol_version"`
	// ClientListChanged is the client's listChanged capability as the edge
	// read it from the initialize params.
	ClientListChanged bool `json:"client_list_changed"`
	// AppliedGeneration is the catalog generation the session was last
	// served from, and RegistryDigest the digest of the tool list served.
	AppliedGeneration uint64 `json:"applied_generation"`
	RegistryDigest    string `json:"registry_digest,omitempty"`
	// Edge is the id of the edge that last served the session.
	Edge string `json:"edge"`
	// CreatedAt is when the session was initialized; LastSeen when a
	// request for it was last recorded (see Store.Touch).
	CreatedAt time.Time `json:"created_at"`
	LastSeen  time.Time `json:"last_seen"`
	// Convergence is the session's convergence evidence.
	Convergence convergence.Record `json:"convergence"`
	// LogLevel is the level the client last set (logging/setLevel); ""
	// when it set none. It is one of LogLevels.
	LogLevel string `json:"log_level,omitempty"`
	// Subscriptions are the resource URIs the client subscribed to
	// (resources/subscribe), at most MaxSubscriptions of at most
	// MaxSubscriptionURI bytes each.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// Tasks are the tasks (MCP 2025-11-25) the client created through the
	// gateway, oldest first: at most MaxTasks, of non-empty backend names
	// and ids of at most MaxTaskID bytes each.
	Tasks []TaskRef `json:"tasks,omitempty"`
}

// TaskRef is one task of a session: where it lives, its id there, and
// the tool (its exposed name) whose call made it, which the policy in
// force is checked against on every task method; "" in records of
// earlier edges.
type TaskRef struct {
	Backend string `json:"backend"`
	ID      string `json:"id"`
	Tool    string `json:"tool,omitempty"`
}

// Bounds of a record's tasks.
const (
	MaxTasks  = 64
	MaxTaskID = 256
)

// validTasks reports whether ts are within the bounds.
func validTasks(ts []TaskRef) bool {
	if len(ts) > MaxTasks {
		return false
	}
	for _, t := range ts {
		if t.Backend == "" || t.ID == "" || len(t.Backend) > MaxTaskID || len(t.ID) > MaxTaskID || len(t.Tool) > MaxTaskID {
			return false
		}
	}
	return true
}

// Bounds of a record's subscriptions.
const (
	MaxSubscriptions   = 64
	MaxSubscriptionURI = 2048
)

// validSubscriptions reports whether subs are within the bounds.
func validSubscriptions(subs []string) bool {
	if len(subs) > MaxSubscriptions {
		return false
	}
	for _, u := range subs {
		if u == "" || len(u) > MaxSubscriptionURI {
			return false
		}
	}
	return true
}

// LogLevels are the log levels of MCP (RFC 5424's severities), least
// severe first.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// validLogLevel reports whether level is "" or one of LogLevels.
func validLogLevel(level string) bool {
	if level == "" {
		return true
	}
	for _, l := range LogLevels {
		if l == level {
			return true
		}
	}
	return false
}

// OwnerHash returns the owner value of a session created by identity:
// "sha256:" and the hex SHA-256 of the identity (domain-separated so the
// hash is not reusable as a digest of anything else). The identity itself
// is never stored. An empty identity yields "".
func OwnerHash(identity string) string {
	if identity == "" {
		return ""
	}
	h := sha256.New()
	h.Write([]byte("fleetgate/session-owner\x00"))
	h.Write([]byte(identity))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// IDHash is what logs and the call trail carry instead of a session id
// (bearer-equivalent when the edge has no authentication): the first 16
// hex digits of the SHA-256 of the id, domain-separated. Enough to
// correlate the lines of one session; the id cannot be recovered from it
// (ids are random). An empty id yields "".
func IDHash(id string) string {
	if id == "" {
		return ""
	}
	// Every call of the call trail hashes its session's id: the input is
	// assembled on the stack (an id of up to 107 bytes; a longer one in a
	// buffer of its own), the string made is the only allocation.
	const prefix = "fleetgate/session-id\x00"
	var buf [128]byte
	sum := sha256.Sum256(append(append(buf[:0], prefix...), id...))
	var digits [16]byte
	hex.Encode(digits[:], sum[:8])
	return string(digits[:])
}

// encodeRecord checks r and encodes it for the store.
func encodeRecord(r *Record) ([]byte, error) {
	if err := ValidateID(r.ID); err != nil {
		return nil, err
	}
	switch r.Mode {
	case ModePassthrough, ModeOptimizer:
	default:
		return nil, fmt.Errorf("session %s: mode %q: %w", IDHash(r.ID), r.Mode, ErrInvalid)
	}
	if len(r.InitializeParams) > 0 && !json.Valid(r.InitializeParams) {
		return nil, fmt.Errorf("session %s: initialize params are not JSON: %w", IDHash(r.ID), ErrInvalid)
	}
	if !validLogLevel(r.LogLevel) {
		return nil, fmt.Errorf("session %s: log level %q: %w", IDHash(r.ID), r.LogLevel, ErrInvalid)
	}
	if !validSubscriptions(r.Subscriptions) {
		return nil, fmt.Errorf("session %s: %d subscriptions: %w", IDHash(r.ID), len(r.Subscriptions), ErrInvalid)
	}
	if !validTasks(r.Tasks) {
		return nil, fmt.Errorf("session %s: %d tasks: %w", IDHash(r.ID), len(r.Tasks), ErrInvalid)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the client's params as sent
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("session %s: encode: %w: %w", IDHash(r.ID), ErrInvalid, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > MaxRecordSize {
		return nil, &TooLargeError{ID: r.ID, Size: len(b), Limit: MaxRecordSize}
	}
	return b, nil
}

// decodeRecord decodes the stored value of key id.
func decodeRecord(id string, b []byte) (*Record, error) {
	r := new(Record)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("session %s: decode: %w: %w", IDHash(id), ErrInvalid, err)
	}
	if r.ID != id {
		return nil, fmt.Errorf("session %s: stored record names session %s: %w", IDHash(id), IDHash(r.ID), ErrInvalid)
	}
	if !validLogLevel(r.LogLevel) {
		return nil, fmt.Errorf("session %s: stored log level %q: %w", IDHash(id), r.LogLevel, ErrInvalid)
	}
	if !validSubscriptions(r.Subscriptions) {
		return nil, fmt.Errorf("session %s: %d stored subscriptions: %w", IDHash(id), len(r.Subscriptions), ErrInvalid)
	}
	if !validTasks(r.Tasks) {
		return nil, fmt.Errorf("session %s: %d stored tasks: %w", IDHash(id), len(r.Tasks), ErrInvalid)
	}
	return r, nil
}
