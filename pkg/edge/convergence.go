package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// evidence is the receiving middleware, outside Edge.receiving, that keeps
// a session's record: the initialize it accepted, every tools/list page it
// served (convergence evidence), and the tool-call audit trail.
func (e *Edge) evidence(s *session.Session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" { // the go-sdk's own params type: match the method
				res, err := next(ctx, method, req)
				if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && s.Kind() == session.KindSession {
					e.initialized(s, req, ir)
				}
				return res, err
			}
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				res, err := next(ctx, method, req)
				if lr, ok := res.(*view.ListToolsResult); ok && err == nil && s.Kind() != session.KindStateless && !e.opts.paths.noListEvidence {
					cursor := ""
					if r.Params != nil {
						cursor = r.Params.Cursor
					}
					e.listed(s, cursor, lr, time.Now())
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

// initialized starts the record of a session whose initialize the go-sdk
// accepted (not of a replayed one: that record exists).
func (e *Edge) initialized(s *session.Session, r mcp.Request, ir *mcp.InitializeResult) {
	if e.recs != nil {
		if _, replay := e.recs.Replaying.Load(s.ID()); replay {
			return
		}
	}
	params, _ := json.Marshal(r.GetParams())
	clientListChanged := declaresToolsListChanged(params)
	if e.recs == nil {
		params = nil // only a stored record needs them (for a rebuild)
	}
	sv := s.Served()
	conv := convergence.Record{
		ProtocolVersion:   ir.ProtocolVersion,
		ClientListChanged: clientListChanged,
		ServerListChanged: ir.Capabilities != nil && ir.Capabilities.Tools != nil && ir.Capabilities.Tools.ListChanged,
	}
	conv.SetCurrent(e.currentDigest(sv), e.generation(sv))
	conv.CurrentRegions = e.regions(sv)
	e.sessionCreated(s, sessionstore.OwnerHash(e.calls.IdentityOf(r.GetExtra())), params, conv, time.Now())
}

// identityOf is Edge.identity for a request inside the go-sdk.
func (e *Edge) identityOf(x *mcp.RequestExtra) string {
	if x == nil {
		return ""
	}
	if x.TokenInfo != nil && x.TokenInfo.UserID != "" {
		return x.TokenInfo.UserID
	}
	if e.opts.IdentityHeader == "" || x.Header == nil {
		return ""
	}
	return strings.TrimSpace(x.Header.Get(e.opts.IdentityHeader))
}

// declaresToolsListChanged reads a tools.listChanged client capability
// (capabilities.tools or capabilities.experimental.tools). MCP 2025-11-25
// defines none; a client that opens the standalone GET stream is counted
// as declaring it too (see Edge.streamAttached).
func declaresToolsListChanged(params json.RawMessage) bool {
	var p struct {
		Capabilities struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
			Experimental struct {
				Tools *struct {
					ListChanged bool `json:"listChanged"`
				} `json:"tools"`
			} `json:"experimental"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	c := p.Capabilities
	return c.Tools != nil && c.Tools.ListChanged || c.Experimental.Tools != nil && c.Experimental.Tools.ListChanged
}

// generation is the generation at which sv was last found current.
func (e *Edge) generation(sv *view.Served) uint64 {
	if sv == e.current() {
		return max(sv.Gen, e.confirmed.Load())
	}
	return sv.Gen
}

// regions is the generation vector the evidence of a session served sv
// names (nil on one log): the confirmed one while sv is current.
func (e *Edge) regions(sv *view.Served) map[string]uint64 {
	if sv == e.current() {
		if v := e.confirmedVector(); v != nil {
			return v
		}
	}
	return sv.Regions
}

// currentDigest is the digest a complete tools/list traversal of sv
// yields: the catalog digest of the tools as served. An optimizer edge
// serves a different list, so it has none (its verdicts are
// unverifiable).
func (e *Edge) currentDigest(sv *view.Served) string {
	if e.opts.Mode == ModeOptimizer {
		return ""
	}
	return e.digests.get(sv).digest
}

// listed records a tools/list page served to s: its definitions as the
// view holds them (what a client of the page's revision was served is
// their projection, view.Project).
func (e *Edge) listed(s *session.Session, cursor string, lr *view.ListToolsResult, now time.Time) {
	sv := s.Served()
	defs := e.digests.get(sv)
	raws := make([]json.RawMessage, len(lr.Tools))
	for i, t := range lr.Tools {
		if raws[i] = lr.Defs[i]; raws[i] == nil {
			raws[i], _ = json.Marshal(t)
		}
	}
	holds, toConverged, observed, err := s.Record().Listed(now, cursor, raws, lr.NextCursor, defs.digestOf)
	if err != nil {
		e.log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(s.ID())).Msg("tools/list evidence")
	}
	if holds {
		// The client holds the current list: a tools list_changed still
		// pending for this served value is moot.
		s.DropPendingTools(sv)
	}
	if observed {
		e.rm.signalToConverged.Observe(toConverged.Seconds())
	}
	e.recs.Enqueue(s)
}

// sessionObserver is what the sessions of e tell their evidence and
// records (session.Observer).
type sessionObserver struct{ e *Edge }

// Signalling records, as s's evidence, the tools list_changed about to be
// written to its stream (recorded before the write: a client may list
// again before the write returns). The returned func takes it back when
// the write fails.
func (o sessionObserver) Signalling(s *session.Session) (undo func()) {
	e := o.e
	sv := s.Served()
	return s.Record().Signalling(e.currentDigest(sv), e.generation(sv), e.regions(sv), time.Now())
}

// Signalled schedules the record write of the signal.
func (o sessionObserver) Signalled(s *session.Session) { o.e.recs.Enqueue(s) }

// StreamAttached records that s's client opened its standalone GET stream:
// it listens for list_changed (see declaresToolsListChanged).
func (o sessionObserver) StreamAttached(s *session.Session) {
	if s.Record().StreamAttached() {
		o.e.recs.Enqueue(s)
	}
}

// Forgotten ends s's resource subscriptions.
func (o sessionObserver) Forgotten(s *session.Session) {
	o.e.calls.Forget(s)
}

// IdleEnded deletes the record of s, ended for idleness: it is over on
// every edge, not left for another to rebuild.
func (o sessionObserver) IdleEnded(s *session.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o.e.recs.Deleted(ctx, s.ID(), s)
}

// viewApplied records a new view given to sessions (after a resync's
// fan-out): the current digest and generation of their evidence.
func (e *Edge) viewApplied(targets []*session.Session, next *view.Served) {
	digest, gen := e.currentDigest(next), next.Gen
	for _, s := range targets {
		if s.Kind() == session.KindStateless {
			continue
		}
		lag := s.Record().ViewApplied(digest, gen, next.Regions)
		e.rm.generationLag.Observe(float64(lag))
		e.recs.Enqueue(s)
	}
}

// adopt gives a rebuilt session its stored record. A view that changed
// since the client last heard (its registry digest differs) is owed to it
// as a list_changed.
func (e *Edge) adopt(s *session.Session, rec *sessionstore.Record, rev uint64, now time.Time) {
	sv := s.Served()
	if s.Record().Adopt(rec, rev, now, e.opts.ID, e.currentDigest(sv), e.generation(sv), e.regions(sv)) {
		s.OweTools()
	}
}

// toolDefs are the tools of one served value as it serves them (the
// definitions the view holds), and their catalog digest.
type toolDefs struct {
	digest string
	raws   []json.RawMessage // in served order
}

// digestOf is the digest function of a traversal's evidence: a traversal
// that returned exactly the served tools (the common case) reuses the
// served value's digest instead of canonicalising every tool again.
func (d *toolDefs) digestOf(tools []json.RawMessage) (string, error) {
	if len(tools) == len(d.raws) {
		same := true
		for i := range tools {
			if !bytes.Equal(tools[i], d.raws[i]) {
				same = false
				break
			}
		}
		if same {
			return d.digest, nil
		}
	}
	return catalog.Digest(tools)
}

// digestCache keeps the toolDefs of the last few served values.
type digestCache struct {
	mu    sync.Mutex
	order []*view.Served
	byVal map[*view.Served]*toolDefs
}

func newDigestCache() *digestCache { return &digestCache{byVal: map[*view.Served]*toolDefs{}} }

func (c *digestCache) get(sv *view.Served) *toolDefs {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.byVal[sv]; d != nil {
		return d
	}
	d := &toolDefs{}
	raws := make([]json.RawMessage, 0, len(sv.ToolList))
	for _, t := range sv.ToolList {
		if b := sv.ToolDef(t); b != nil {
			raws = append(raws, b)
		}
	}
	d.digest, _ = catalog.Digest(raws)
	d.raws = raws
	c.byVal[sv] = d
	c.order = append(c.order, sv)
	if len(c.order) > 4 {
		delete(c.byVal, c.order[0])
		c.order = c.order[1:]
	}
	return d
}
