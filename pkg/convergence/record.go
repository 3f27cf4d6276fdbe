package convergence

import (
	"encoding/json"
	"time"
)

// MaxCursorChain is the number of cursors a [Traversal] keeps in
// [Traversal.Cursors]. Pages beyond it are still counted in
// [Traversal.Pages]; only their cursors are not stored, so that the record
// stays small enough for a session's key-value entry.
const MaxCursorChain = 64

// Record is the convergence evidence of one MCP client session. It is plain
// data: it marshals to JSON with snake_case keys so it can travel inside the
// session record when the session moves to another edge. The zero Record
// means "nothing observed yet" and yields [Unverifiable].
//
// The edge fills the negotiation fields after initialize, and drives the rest
// through [Record.ListPage], [Record.Signal] and [Record.SetCurrent]. A Record
// is not safe for concurrent use.
type Record struct {
	// ProtocolVersion is the negotiated MCP protocol version.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// ClientListChanged reports whether the client declared that it handles
	// tool list change notifications.
	ClientListChanged bool `json:"client_list_changed"`
	// ServerListChanged reports whether the server advertised
	// tools.listChanged.
	ServerListChanged bool `json:"server_list_changed"`

	// Seq numbers the observations (pages and signals) of this record. It
	// orders a traversal against a change signal without trusting the wall
	// clocks of the different edges that served the session.
	Seq uint64 `json:"seq"`

	// LastSignal is the last notifications/tools/list_changed sent to the
	// session; its zero value means none was sent.
	LastSignal ChangeSignal `json:"last_signal,omitzero"`
	// Traversal is the latest tools/list traversal, complete or not.
	Traversal Traversal `json:"traversal,omitzero"`

	// CurrentDigest is the digest of the tool list the session should see
	// now, and CurrentGeneration the catalog generation it belongs to.
	CurrentDigest     string `json:"current_digest,omitempty"`
	CurrentGeneration uint64 `json:"current_generation"`
	// CurrentRegions is, for a view merged from several regions' logs, the
	// generation of each region's log that view reflects (then
	// CurrentGeneration is their sum, an order, not a log position); nil
	// for a view of one log.
	CurrentRegions map[string]uint64 `json:"current_regions,omitempty"`

	// pending holds the tools served by the traversal in progress. It is
	// never serialised: a record that was reloaded mid-traversal detects the
	// loss (see BreakPagesLost).
	pending pendingPages
}

// ChangeSignal is one notifications/tools/list_changed sent to the session.
type ChangeSignal struct {
	// At is when the notification was sent; the zero time with a zero Seq
	// means no notification was sent.
	At time.Time `json:"at,omitzero"`
	// Generation is the catalog generation the notification announced.
	Generation uint64 `json:"generation"`
	// Seq is [Record.Seq] when the notification was recorded.
	Seq uint64 `json:"seq"`
}

// Sent reports whether s records a notification.
func (s ChangeSignal) Sent() bool { return s.Seq != 0 || !s.At.IsZero() }

// Traversal is one walk of a client through the pages of tools/list.
type Traversal struct {
	// StartSeq is [Record.Seq] when the first page was served.
	StartSeq uint64 `json:"start_seq"`
	// StartedAt is when the first page was served.
	StartedAt time.Time `json:"started_at,omitzero"`
	// CompletedAt is when the last page (one without nextCursor) was served;
	// zero while the traversal is in progress.
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// Generation is [Record.CurrentGeneration] when the first page was
	// served: the catalog generation the traversal started from.
	Generation uint64 `json:"generation"`
	// Cursors is the chain of request cursors followed, one per page and at
	// most MaxCursorChain of them. A verified chain starts with "".
	Cursors []string `json:"cursors,omitempty"`
	// Final reports whether the last page served had no nextCursor, that is
	// whether the traversal is complete.
	Final bool `json:"final"`
	// NextCursor is the nextCursor of the last page served; "" once Final.
	NextCursor string `json:"next_cursor,omitempty"`
	// Pages and Tools count the pages and tool definitions served.
	Pages int `json:"pages"`
	Tools int `json:"tools"`
	// Digest is the digest of all tools the traversal returned, over all
	// pages. It is set only when a traversal completes without a Break.
	Digest string `json:"digest,omitempty"`
	// Break says why the traversal cannot serve as evidence; "" if it can.
	Break Break `json:"break,omitempty"`
	// ExpectedCursor is, for BreakCursor, the nextCursor that was
	// outstanding when the mismatching cursor arrived ("" if none was).
	ExpectedCursor string `json:"expected_cursor,omitempty"`
}

// Complete reports whether the traversal reached a page without nextCursor.
func (t Traversal) Complete() bool { return t.Pages > 0 && t.Final }

// Break classifies a traversal that cannot prove what the client saw.
type Break string

const (
	// BreakCursor: the traversal's first page had a non-empty cursor that
	// was not the nextCursor outstanding from the previous page, so the
	// pages before it are unknown (a skipped first page, a replayed or
	// retried page, or a cursor from an older traversal).
	BreakCursor Break = "cursor_mismatch"
	// BreakPagesLost: the tools of earlier pages were not available when a
	// continuation page arrived, because the record was reloaded (e.g. the
	// session moved to another edge) in the middle of the traversal.
	BreakPagesLost Break = "pages_lost"
	// BreakDigest: the digest function failed on the completed traversal.
	BreakDigest Break = "digest_error"
)

// Negotiated reports whether tool list change notifications were negotiated:
// the client declared listChanged and the server advertised it.
func (r Record) Negotiated() bool { return r.ClientListChanged && r.ServerListChanged }

// pendingPages accumulates the tools of the traversal in progress. It has
// value semantics: appends never write into an array another copy of the
// Record can see.
type pendingPages struct {
	startSeq uint64 // Traversal.StartSeq this accumulation belongs to
	pages    int    // pages accumulated
	tools    []json.RawMessage
}
