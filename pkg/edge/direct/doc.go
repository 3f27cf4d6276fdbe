// Package direct answers, without the go-sdk server, the requests of the
// common forms that made up most of the edge's cost when the go-sdk
// served them (its decoder allocates tens of KB per message, its
// stateless handler makes a server session per request, a listen stream
// held a server, a session and four goroutines):
//
//   - a plain tools/call POST of an initialized session (SessionCall),
//     answered with one application/json JSON-RPC response; a
//     notifications/cancelled naming such a call cancels it;
//   - a plain 2026-07-28 tools/call (StatelessCall), with the go-sdk's
//     header and _meta checks, the Mcp-Param-* check of the tool's
//     bindings, the server's info in the result's _meta and resultType
//     "complete", as the go-sdk's stateless handler answers;
//   - a 2026-07-28 subscriptions/listen stream the go-sdk would take the
//     same way (Listen), served on the hijacked connection by the
//     session's own stream writer (package session);
//   - the task methods of a session (Task: a tools/call with params.task,
//     tasks/get, tasks/result, tasks/cancel, tasks/list), which the go-sdk
//     does not know.
//
// Each call runs exactly what the session server's middleware runs for it
// (the call plane, package calls). The requests are parsed by the strict
// parsers of package fastpath; anything they do not recognise exactly is
// left to the go-sdk: the answer then reports false, has written nothing,
// and the request's Body is readable again. The admission gate reads each
// body whole, and parses it, into a Body.
//
//	a := direct.New(direct.Options{Calls: plane, Sessions: reg, Hijacks: hj, Shared: shared, ...})
//	if !a.SessionCall(w, r, s, ident) { stateful.ServeHTTP(w, r) } // r routed dispatch.Call
package direct
