// Package lane serves call lanes. A call lane is a keep-alive HTTP/1.1
// connection whose tools/call POSTs the edge answers itself, without
// net/http's server. Per request,
// net/http's server starts a goroutine that watches the connection and
// hands it back when the handler ends; on a busy 2-core machine that
// hand-off cost a tools/call about a third of the edge's added latency.
//
// A connection becomes a lane after a tools/call that the edge (Edge.Admit)
// answered: the edge hijacks it and writes that response itself. It then
// reads each next request with http.ReadRequest. One that the edge would
// answer (the same checks, run by the same code) is answered on the lane.
// Any other request goes back to the http.Server with the bytes read
// for it, by way of laneHandback, a listener the server also serves. The
// server then reads the request as if the lane had never been. A malformed
// request, an unknown session or another method all take that way.
//
// A lane waits for each next request without a deadline, as the server
// does. It reads the client's side during a call only if the call lasts
// longer than laneWatchAfter: if the client then leaves, the call's
// context ends, as net/http's server would end it. At shutdown, idle
// lanes are closed at once. A lane inside a call finishes the call, which
// shutdown drains like any other, and then closes.
//
// Each request on a lane has a context of its own, made before its token
// is checked, so that the request authenticated is the one answered; it
// ends when the client leaves mid-call, at shutdown, and once the request
// is done. An answer that needs a cancellable context takes it
// (CallCancel) instead of deriving another. What may wait for the
// response, the end of a backend's body and the call trail's entry,
// goes to the call's Closings, which the lane ends after writing it.
//
// The edge drives it like this:
//
//	s := lane.New(lane.Options{Edge: edge, Hijacks: hj, Addr: ln.Addr()})
//	srv := &http.Server{Handler: s.Handler(mcp), ConnContext: s.ConnContext}
//	go srv.Serve(ln); go srv.Serve(s.Listener()) // lanes hand requests back here
//	// in the handler, for a call the edge answers itself:
//	if s.Eligible(r) { lw := lane.NewWriter(); answer(lw, r); s.Run(w, r, lw, release) }
//	s.Close(false) // at shutdown: idle lanes close; s.Close(true) cuts the rest
package lane
