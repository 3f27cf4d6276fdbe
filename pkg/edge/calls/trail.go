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
	pl.record(ent)
}
