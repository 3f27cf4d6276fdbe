// Package backend is the edge's side of its backends: a Pool of one
// persistent MCP session per backend (streamable HTTP, or the legacy
// HTTP+SSE transport), the forwarding of tools/call on the raw fast path
// and of everything else through the go-sdk client, the validation of the
// results that come back, and the errors a failed exchange gives.
//
// Every response body is bounded (size per body or event, depth per
// message) before it is parsed; redirects are not followed; an Error names
// the backend, the method and the kind of failure, never the backend's URL
// or its error body.
//
// The driving loop of a caller:
//
//	p := backend.NewPool(httpClient, timeout, 0, metrics)
//	defer p.CloseAll()
//	reply, err := p.CallTool(ctx, backend.Call{Backend: "alpha", Config: cfg, Tool: "echo", Args: args})
//	// on a config change: p.Prune(advertisable)
//
// A caller that answers its client before the end of a backend's event
// stream passes Closings and closes them after its response.
package backend
