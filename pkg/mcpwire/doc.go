// Package mcpwire holds the pure pieces of MCP's wire format that every
// reader of outside bytes in fleetgate shares: the bounds every JSON
// message is checked against before anything parses it (depth, size), and
// their errors.
//
// Every parse of bytes from a client, a backend or the bus starts with
// Check: it runs in time linear in the input and constant memory, without
// recursion, so that the parsers after it (fastjson, the go-sdk's decoder,
// encoding/json) are only ever given input whose nesting they handle. The
// limits are documented in docs/limits.md and named here:
//
//	MaxDepth = 1000   arrays and objects nested in one message (the go-sdk
//	                  refuses tool schemas deeper than that)
//
// A driving loop:
//
//	body, err := mcpwire.ReadBody(r.Body, maxBody) // bounded read
//	if err != nil { ... 413 ... }
//	if err := mcpwire.Check(body, mcpwire.MaxDepth); err != nil { ... 400 ... }
//	// now parse body with any parser
//
// It also holds the two readers of MCP messages that the edge, the
// prober and the verifier share: EventReader, the one reader of
// text/event-stream bodies (bounded per event, no allocation per event),
// and FindResponse (over Messages), the one matcher of a JSON-RPC response
// to its request's ID for encoding/json users:
//
//	er := mcpwire.NewEventReader(body, maxEvent)
//	for {
//		ev, err := er.Next() // io.EOF at the end; ErrTooLarge past maxEvent
//		...
//		m, err := mcpwire.FindResponse(ev.Data, mcpwire.IntID(7)) // ErrNoResponse: not in this event
//	}
//
// The package imports nothing of fleetgate's.
package mcpwire
