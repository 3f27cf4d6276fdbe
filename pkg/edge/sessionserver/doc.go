// Package sessionserver makes the go-sdk server of each client session
// (one-Server-per-session, see package session) and the edge's
// middleware on it, and tells the go-sdk's handlers which server a
// request goes to.
//
// The middleware, outermost first:
//
//   - results (results.go): what the go-sdk's types cannot carry for the
//     session's revision: the tasks capability on a 2025-11-25
//     initialize of a passthrough edge, no 2026-07-28 cache members on
//     an older session's resources/read, and resultType "complete" on
//     the 2026-07-28 results the edge made from a backend's;
//   - the Mcp-Param-* check (check.go): a 2026-07-28 tools/call the
//     go-sdk decoded whose headers do not match the name and arguments
//     it would run with is refused (CodeHeaderMismatch), as a go-sdk
//     server refuses one of its own tools; a refused call is not a call;
//   - evidence (check.go): what the session's evidence and record are
//     told (an Evidence, the edge's ledger): the initialize accepted,
//     each tools/list page served, the log level set;
//   - receiving (receive.go): lists answered from the session's served
//     value as the policy lets the caller see it (keyset pagination, at
//     the session's revision), calls, prompts, resources, completions and
//     the optimizer's meta-tools routed by the call plane (package
//     calls); everything else goes to the go-sdk.
//
// A request that makes a server (an initialize, a listen stream the
// go-sdk serves, a rebuild's replayed initialize) carries a Holder on its
// context: the go-sdk asks for the server more than once per request, and
// the holder makes it once.
//
//	sv := sessionserver.New(sessionserver.Options{Sessions: reg, Calls: plane, ...})
//	stateful := mcp.NewStreamableHTTPHandler(sv.Stateful, nil)
//	hd := &sessionserver.Holder{ID: rand.Text(), Kind: session.KindSession}
//	stateful.ServeHTTP(w, r.WithContext(sessionserver.WithHolder(r.Context(), hd)))
package sessionserver
