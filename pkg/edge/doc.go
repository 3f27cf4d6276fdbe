// Package edge is the MCP edge of fleetgate in passthrough mode: the
// process MCP clients talk to. It follows the controller's event log,
// serves on /mcp every tool, prompt and resource of the advertisable
// backends of one group under exposed names (<backend><separator><name>,
// see package catalog) and forwards calls to the owning backend under the
// original name.
//
// An edge is driven like this:
//
//	log, _ := events.AttachLog(ctx, js, nil) // waits for the controller's stream
//	e, err := edge.New(log, &edge.Options{Group: "default", Listen: "127.0.0.1:8080"})
//	if err != nil { ... }
//	err = e.Run(ctx) // serves until ctx ends, then drains and returns
//
// # Resync
//
// An events.Reader folds the log (snapshot, then tail) into a State. The
// edge's resync loop is level-based: on each Reader signal it reads the
// current State and, when the group's backends changed, builds the group's
// View once (catalog.Aggregate with the previous View) together with the
// go-sdk values served from it (mcp.Tool with the raw schemas), and diffs
// it against the served one. A change is applied to every session; an
// unchanged view sends nothing. Batches are at least Options.Coalesce
// apart: the first change after a quiet period goes out at once, later
// changes in the window are applied together at its end, so a flapping
// backend costs each session at most two notifications per window.
//
// # Sessions
//
// Each client session has an mcp.Server of its own (one-Server-per-session,
// the go-sdk maintainers' answer to per-session tool sets): the go-sdk
// notifies the sessions of one Server one after the other, so a shared
// Server would let one client that stops reading hold up everyone's
// list_changed. A session server's session id is fixed at creation
// (ServerOptions.GetSessionID) and the go-sdk's getServer is a map lookup,
// which leaves room to rebuild a session from a stored record on another
// edge later.
//
// A session serves the view it was last given: tools/list, prompts/list and
// resources/list are answered from that immutable value (keyset
// pagination, 1000 per page), so the switch to a new view is atomic — a
// concurrent list sees the old lists or the new ones, never a mix. The
// go-sdk's own registry of a session server only holds a hidden marker,
// re-registered once per changed list kind to make the go-sdk send that
// session exactly one list_changed (per kind) for the batch. This also
// keeps go-sdk schema processing (AddTool re-marshals schemas on every
// call) off the fan-out path.
//
// Calls (tools/call, prompts/get, resources/read) are routed by the edge's
// current view. A tool the view does not hold gets an isError result
// naming it; prompts and resources get a JSON-RPC error.
//
// # Protocol generations
//
// Requests whose Mcp-Protocol-Version is 2026-07-28 or later go to a
// stateless go-sdk handler: each subscriptions/listen stream gets its own
// session server for as long as it is open (it receives list_changed),
// other requests share one server. Older requests go to a stateful handler
// (Mcp-Session-Id sessions, standalone GET stream for notifications).
//
// # Backends
//
// Calls reach a backend over one pooled go-sdk client session per backend,
// made on first use (protocol 2025-11-25, no standalone stream: changes
// come from the event log). A session the backend no longer knows
// (mcp.ErrSessionMissing, a restart) is replaced and the request retried
// once; a broken connection (mcp.ErrConnectionClosed) drops the session
// without repeating the call. Each call has Options.CallTimeout and is
// cancelled when the client's request is.
//
// # Known limits
//
// mcp.Tool has no field for members it does not know (e.g. "execution"),
// so clients do not receive them, although the controller's digest covers
// "execution". Session ids are not yet stored, so a session does not
// survive its edge. Options.SessionTimeout is 0 (never) by default: a
// session whose client vanished without DELETE stays until the edge
// stops.
package edge
