package calltrail

import (
	"encoding/json"
	"strings"
	"time"
)

// Outcome classifies how a tools/call ended.
type Outcome string

const (
	// OutcomeOK: the backend returned a result without isError.
	OutcomeOK Outcome = "ok"
	// OutcomeError: the call failed (transport error, JSON-RPC error,
	// timeout, unknown tool); Entry.Error says why.
	OutcomeError Outcome = "error"
	// OutcomeIsError: the backend returned a result with isError true;
	// Entry.Error holds its text, if any.
	OutcomeIsError Outcome = "is_error"
)

// Entry is one tools/call through an edge. It is published as JSON with
// snake_case keys on the subject <SubjectPrefix>.<Group>.
type Entry struct {
	// Time is when the call arrived; Record sets it when zero.
	Time time.Time `json:"time"`
	// Group is the edge's backend group; it names the subject.
	Group string `json:"group"`
	// Edge is the edge instance id.
	Edge string `json:"edge,omitempty"`
	// SessionID is the MCP session (Mcp-Session-Id), "" for none. It is
	// never published: Record replaces it with SessionHash (a session id
	// is bearer-equivalent without authentication).
	SessionID string `json:"-"`
	// SessionHash is sessionstore.IDHash of the session id, what logs
	// carry too; "" for none.
	SessionHash string `json:"session_hash,omitempty"`
	// OwnerHash identifies the session's owner without revealing it (a
	// hash of the authenticated principal); "" when unauthenticated.
	OwnerHash string `json:"owner_hash,omitempty"`
	// Issuer and Subject are the caller's verified token's iss and sub
	// ("" without bearer auth).
	Issuer  string `json:"iss,omitempty"`
	Subject string `json:"sub,omitempty"`
	// Tool is the exposed tool name the client called, BackendTool the
	// name the call was routed under and Backend the backend it went to.
	Tool        string `json:"tool"`
	BackendTool string `json:"backend_tool,omitempty"`
	Backend     string `json:"backend,omitempty"`
	// Generation is the catalog generation of the view the call was
	// routed by.
	Generation uint64 `json:"generation"`
	// Latency is the time from the call's arrival to its result.
	Latency time.Duration `json:"latency_ns"`
	Outcome Outcome       `json:"outcome"`
	// Error is the error text for OutcomeError and OutcomeIsError.
	Error string `json:"error,omitempty"`
	// Rule names the policy rule that refused the call ("default" for
	// the policy's default effect); "" for a call the policy allowed.
	Rule string `json:"rule,omitempty"`
	// Arguments are the call's arguments; kept only when
	// Options.IncludeArguments is set, and only up to
	// Options.MaxArgumentBytes.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsOmitted is set when Arguments were dropped for their size.
	ArgumentsOmitted bool `json:"arguments_omitted,omitempty"`
}

// subject is the subject an entry is published on. A group that is not a
// valid subject token (empty, or holding '.', '*', '>' or white space) is
// made one by replacing those characters with '_'.
func subject(prefix, group string) string {
	return prefix + "." + subjectToken(group)
}

func subjectToken(s string) string {
	if s == "" {
		return "_"
	}
	if strings.IndexFunc(s, badTokenRune) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if badTokenRune(r) {
			return '_'
		}
		return r
	}, s)
}

func badTokenRune(r rune) bool {
	switch r {
	case '.', '*', '>', ' ', '\t', '\r', '\n', '\f', '\v':
		return true
	}
	return false
}

// validPrefix reports whether prefix is a literal subject: non-empty tokens
// separated by '.', without wildcards or white space.
func validPrefix(prefix string) bool {
	if prefix == "" {
		return false
	}
	for tok := range strings.SplitSeq(prefix, ".") {
		if tok == "" || strings.ContainsFunc(tok, func(r rune) bool { return r != '.' && badTokenRune(r) }) {
			return false
		}
	}
	return true
}
