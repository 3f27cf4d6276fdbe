package calls

import (
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
)

// Audit records call c, routed by rt, in the call trail: failure is why
// it failed when it did (the reply is then an isError result).
func (pl *Plane) Audit(c Call, rt Route, start time.Time, reply *backend.Reply, failure error) {
	pl.record(pl.entry(c, rt, start, reply, failure))
}

// auditAfter is Audit for a call that answers its client before the
// end of its Closings (a call lane's: c.Later): the entry is made now
// (its latency ends here, as Audit's) and queued after the client's
// response was written, or at once without Closings.
func (pl *Plane) auditAfter(c Call, rt Route, start time.Time, reply *backend.Reply, failure error) {
	ent := pl.entry(c, rt, start, reply, failure)
	if c.Later == nil {
		pl.record(ent)
		return
	}
	c.Later.After(func() { pl.record(ent) })
}

// entry is the call trail's entry of call c (see Audit), its latency
// from start to now.
func (pl *Plane) entry(c Call, rt Route, start time.Time, reply *backend.Reply, failure error) calltrail.Entry {
	ent := calltrail.Entry{Time: start, Group: pl.o.Group, Edge: pl.o.Edge, Tool: c.Name,
		BackendTool: rt.Tool.Original, Backend: rt.Tool.Backend, Generation: rt.Gen,
		Latency: time.Since(start), Outcome: calltrail.OutcomeOK, Arguments: c.Args}
	if c.Session != nil && c.Session.Kind() == session.KindSession {
		ent.SessionID = c.Session.ID()
		ent.OwnerHash = c.Session.Record().Owner()
	} else {
		ent.OwnerHash = pl.o.Owners.Hash(c.Ident)
	}
	if id := TokenIdentity(c.TokenInfo); id != nil {
		ent.Issuer, ent.Subject = id.Issuer, id.Subject
	}
	switch {
	case failure != nil:
		ent.Outcome, ent.Error = calltrail.OutcomeError, failure.Error()
		if d, ok := errors.AsType[*deniedError](failure); ok {
			ent.Rule = d.rule
		}
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
	return ent
}
