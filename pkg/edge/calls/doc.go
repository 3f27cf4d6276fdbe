// Package calls is the edge's call plane: where what a client asks of the
// backends goes. A tools/call, prompts/get, resources/read or
// completion/complete is routed by the view served now (package view) to
// the advertisable backend that owns the item, under the item's own name,
// over the edge's pooled backend session (package backend); the tool
// policy in force decides what each caller may see and use (an item it
// may not use is absent from its lists and answered as unknown); every
// tools/call is recorded in the call trail with the route it took; what a
// backend sends during a call (progress, log messages, requests of the
// client) is relayed to the client that made it.
//
// A Plane takes no http.Request and knows no NATS: the edge gives it the
// view, the backends' configs and the pool, and drives it like this:
//
//	pl := calls.New(calls.Options{Group: "default", Pool: pool, View: current,
//		Backend: configOf, Generation: generationOf, Trail: trail})
//	pl.SetPolicy(p) // on each policy the event log brings
//	reply := pl.Run(ctx, calls.Call{Session: s, Name: "alpha_echo", Args: args})
//
// A call the view does not hold, or the policy hides from its caller, is
// an isError result naming the tool (ErrUnavailable in the trail); a
// prompt, resource or completion of that kind a JSON-RPC error, as a
// go-sdk server answers an unknown one.
package calls
