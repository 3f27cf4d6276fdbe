package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

const toolsChanged = "notifications/tools/list_changed"

// evidence is the receiving middleware, outside Edge.receiving, that keeps
// a session's record: the initialize it accepted, every tools/list page it
// served (convergence evidence), and the tool-call audit trail.
func (e *Edge) evidence(s *session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" { // the go-sdk's own params type: match the method
				res, err := next(ctx, method, req)
				if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && s.kind == kindSession {
					e.initialized(s, req, ir)
				}
				return res, err
			}
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && s.kind != kindStateless && !e.opts.paths.noListEvidence {
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
func (e *Edge) initialized(s *session, r mcp.Request, ir *mcp.InitializeResult) {
	if e.recs != nil {
		if _, replay := e.recs.replaying.Load(s.id); replay {
			return
		}
	}
	params, _ := json.Marshal(r.GetParams())
	clientListChanged := declaresToolsListChanged(params)
	if e.recs == nil {
		params = nil // only a stored record needs them (for a rebuild)
	}
	sv := s.served()
	conv := convergence.Record{
		ProtocolVersion:   ir.ProtocolVersion,
		ClientListChanged: clientListChanged,
		ServerListChanged: ir.Capabilities != nil && ir.Capabilities.Tools != nil && ir.Capabilities.Tools.ListChanged,
	}
	conv.SetCurrent(e.currentDigest(sv), e.generation(sv))
	conv.CurrentRegions = e.regions(sv)
	e.sessionCreated(s, sessionstore.OwnerHash(e.identityOf(r.GetExtra())), params, conv, time.Now())
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

// listed records a tools/list page served to s.
func (e *Edge) listed(s *session, cursor string, lr *mcp.ListToolsResult, now time.Time) {
	sv := s.served()
	defs := e.digests.get(sv)
	raws := make([]json.RawMessage, len(lr.Tools))
	for i, t := range lr.Tools {
		if raws[i] = defs.defs[t]; raws[i] == nil {
			raws[i], _ = json.Marshal(t)
		}
	}
	st := &s.rec
	st.mu.Lock()
	conv := &st.rec.Convergence
	if err := conv.ListPage(now, cursor, raws, lr.NextCursor, defs.digestOf); err != nil {
		e.log.Warn().Err(err).Str("session", s.id).Msg("tools/list evidence")
	}
	if t := conv.Traversal; t.Complete() && t.Break == "" {
		st.rec.RegistryDigest = t.Digest // the client holds this list now
		if t.Digest == conv.CurrentDigest {
			// The client holds the current list: a tools list_changed still
			// pending for this served value is moot.
			s.mu.Lock() // s.rec.mu, then s.mu: never the other way round
			if s.applied == sv {
				s.pending &^= pendingTools
			}
			s.mu.Unlock()
		}
	}
	if d, ok := convergence.SignalToConverged(*conv); ok && conv.LastSignal.Seq != st.stc {
		st.stc = conv.LastSignal.Seq
		e.rm.signalToConverged.Observe(d.Seconds())
	}
	st.dirty = true
	st.mu.Unlock()
	e.recs.enqueue(s)
}

// signalling records, as s's evidence, the tools list_changed about to be
// written to its stream (recorded before the write: a client may list
// again before the write returns). The returned func takes it back when
// the write fails.
func (e *Edge) signalling(s *session) (undo func()) {
	sv := s.served()
	digest, gen := e.currentDigest(sv), e.generation(sv)
	st := &s.rec
	st.mu.Lock()
	prevSignal, prevDigest := st.rec.Convergence.LastSignal, st.rec.RegistryDigest
	st.rec.Convergence.SetCurrent(digest, gen)
	st.rec.Convergence.CurrentRegions = e.regions(sv)
	st.rec.Convergence.Signal(time.Now(), gen)
	st.rec.RegistryDigest, st.rec.AppliedGeneration = digest, gen
	st.dirty = true
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		st.rec.Convergence.LastSignal, st.rec.RegistryDigest = prevSignal, prevDigest
		st.mu.Unlock()
	}
}

// streamAttached records that s's client opened its standalone GET stream:
// it listens for list_changed (see declaresToolsListChanged).
func (e *Edge) streamAttached(s *session) {
	st := &s.rec
	st.mu.Lock()
	changed := !st.rec.Convergence.ClientListChanged
	st.rec.ClientListChanged, st.rec.Convergence.ClientListChanged = true, true
	if changed {
		st.dirty = true
	}
	st.mu.Unlock()
	if changed {
		e.recs.enqueue(s)
	}
}

// viewApplied records a new view given to sessions (after a resync's
// fan-out): the current digest and generation of their evidence.
func (e *Edge) viewApplied(targets []*session, next *view.Served) {
	digest, gen := e.currentDigest(next), next.Gen
	for _, s := range targets {
		if s.kind == kindStateless {
			continue
		}
		st := &s.rec
		st.mu.Lock()
		st.rec.Convergence.SetCurrent(digest, gen)
		st.rec.Convergence.CurrentRegions = next.Regions
		st.rec.AppliedGeneration = gen
		lag := convergence.GenerationLag(st.rec.Convergence)
		st.dirty = true
		st.mu.Unlock()
		e.rm.generationLag.Observe(float64(lag))
		e.recs.enqueue(s)
	}
}

// adopt gives a rebuilt session its stored record. A view that changed
// since the client last heard (its registry digest differs) is owed to it
// as a list_changed.
func (e *Edge) adopt(s *session, rec *sessionstore.Record, rev uint64, now time.Time) {
	sv := s.served()
	digest, gen := e.currentDigest(sv), e.generation(sv)
	st := &s.rec
	st.mu.Lock()
	defer st.mu.Unlock()
	st.phase, st.rev, st.seen = phaseLive, rev, now
	st.rec = *rec
	st.rec.Edge = e.opts.ID
	st.rec.AppliedGeneration = gen
	st.rec.Convergence.SetCurrent(digest, gen)
	st.rec.Convergence.CurrentRegions = e.regions(sv)
	if rec.RegistryDigest != digest {
		s.mu.Lock() // s.rec.mu, then s.mu: never the other way round
		s.pending |= pendingTools
		s.wakeLocked()
		s.mu.Unlock()
	}
	st.dirty = true
}

// audit records call c, routed by rt, in the call trail: failure is why
// it failed when it did (the reply is then an isError result).
func (e *Edge) audit(c toolCall, rt route, start time.Time, reply *backend.Reply, failure error) {
	ent := calltrail.Entry{Time: start, Group: e.opts.Group, Edge: e.opts.ID, Tool: c.name,
		BackendTool: rt.tool.Original, Backend: rt.tool.Backend, Generation: rt.gen,
		Latency: time.Since(start), Outcome: calltrail.OutcomeOK, Arguments: c.args}
	if c.s != nil && c.s.kind == kindSession {
		ent.SessionID = c.s.id
		c.s.rec.mu.Lock()
		ent.OwnerHash = c.s.rec.rec.Owner
		c.s.rec.mu.Unlock()
	} else {
		ent.OwnerHash = sessionstore.OwnerHash(c.ident)
	}
	if id := tokenIdentity(c.ti); id != nil {
		ent.Issuer, ent.Subject = id.Issuer, id.Subject
	}
	switch {
	case failure != nil:
		ent.Outcome, ent.Error = calltrail.OutcomeError, failure.Error()
	case reply.Raw != nil && !reply.IsError:
		// The trail reads only IsError and an error's text: a plain
		// result is not decoded for it.
	case reply.Decoded().IsError:
		ent.Outcome = calltrail.OutcomeIsError
		if res := reply.Decoded(); len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				ent.Error = tc.Text
			}
		}
	}
	e.opts.CallTrail.Record(ent)
}

// toolDefs are the tools of one served value as the go-sdk sends them, and
// their catalog digest.
type toolDefs struct {
	digest string
	defs   map[*mcp.Tool]json.RawMessage
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
	d := &toolDefs{defs: make(map[*mcp.Tool]json.RawMessage, len(sv.ToolList))}
	raws := make([]json.RawMessage, 0, len(sv.ToolList))
	for _, t := range sv.ToolList {
		b, err := json.Marshal(t)
		if err != nil {
			continue
		}
		d.defs[t] = b
		raws = append(raws, b)
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
