// Package dispatch names the one route a request to the edge's /mcp
// takes. A request is admitted once (package admission: identity, limits,
// the body parsed once), its facts are gathered once (Facts), and Route
// picks one of a fixed list of routes; the edge then serves the route with
// one switch. The net/http handler and call lanes ask the same function
// with the same facts, so no path can route a request differently: a lane
// serves only the routes it keeps (Lane) and hands every other request
// back to the server, which routes it again to the same route.
//
// Route is pure: no I/O, no clock. The edge drives it like this:
//
//	d := gate.Admit(req)                  // refused: answered, no route
//	f := dispatch.Facts{Method: r.Method, ...} // headers, parse, registry
//	switch dispatch.Route(f) { ... }
package dispatch
