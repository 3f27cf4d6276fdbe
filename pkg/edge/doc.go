// Package edge is the MCP edge of fleetgate, in passthrough or optimizer
// mode: the process MCP clients talk to. It follows the controller's event log,
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
// # Layout
//
// This package wires the parts (edge.go, options.go), runs them (Run),
// admits and routes each request to /mcp (admit.go, serve.go,
// transport.go; laneedge.go for call lanes), serves the admin API
// (admin.go) and resyncs the sessions with the event log (resync.go,
// source.go; what to apply when is package planner's). Every other part
// is a package of its own, which imports nothing of this one: where a
// part needs the edge, it defines a small interface or takes functions,
// which the edge implements (lane.Edge, session.Observer,
// sessionserver.Evidence, bearer.Throttle).
//
// The packages a request meets, in order:
//
//   - bearer: the OAuth 2.1 resource server (Options.Auth): the token
//     verified, and the go-sdk's TokenInfo made once per token; failures
//     charged to the client address clientaddr tells (the peer, or whom a
//     trusted proxy forwarded for: Options.TrustedProxies);
//   - admission: the one gate every request passes first (identity, body
//     limits, the body parsed once: admission.ParseBody), pure; the
//     policy's rate limits are charged on that parse (ratelimit.go);
//   - dispatch: the one route a request takes, from the facts gathered
//     once per request (Edge.facts, serve.go), pure and table-tested
//     (dispatch/testdata/routes.json); the server's handler and call lanes
//     ask the same function;
//   - lane: call lanes, keep-alive HTTP/1.1 connections whose plain calls
//     the edge answers without net/http's server;
//   - direct: the requests the edge answers without the go-sdk (a
//     session's plain tools/call, a 2026-07-28 tools/call, a listen
//     stream, the task methods), parsed by the strict parsers of package
//     fastpath, each checked against the go-sdk by differential tests;
//   - sessionserver: the go-sdk server of each session, the edge's
//     middleware on it (lists, Mcp-Param-* check, per-revision fields);
//   - calls: the call plane, where a tools/call, prompts/get,
//     resources/read, completion, task method, resource subscription or
//     optimizer meta-tool goes, under the tool policy, with the call trail
//     and relays; it takes no http.Request;
//   - backend: pooled backend sessions and the raw call path (internal/h1:
//     the plain HTTP/1.1 pieces of both sides); heldrelay: a held call's
//     retry forwarded to its edge; callslot: a request's concurrency slots
//     held by the calls the go-sdk serves; signins: per-user sign-in.
//
// The sessions and what is kept of them:
//
//   - session: the sessions, their streams and the list_changed each owes;
//   - planner: the change path, pure: from the state followed to what
//     each batch gives and tells the sessions, and when;
//   - view: the served value of one generation (lists, definitions per
//     revision, the optimizer's index);
//   - ledger: each session's convergence evidence as served and the record
//     writes it causes; evidence: that record, pure; records: the records
//     in NATS KV; rebuild: a session another edge held, rebuilt from it;
//   - spans: the edge's OpenTelemetry spans (Options.TracerProvider).
//
// A request to /mcp: admitHTTP (admit.go) authenticates it, reads its
// body within the gate's limit and asks the gate, which parses the body
// once; limitRequest charges the rate limits and concurrency slots on
// that parse, message by message for a batch; serve routes it once and
// serves the route: the edge's own answer (package direct), a stream of
// a session (package session), a rebuild (package rebuild), or the
// go-sdk's handler of the request's protocol generation.
//
// # Resync
//
// An events.Reader folds the log (snapshot, then tail) into a State. The
// edge's resync loop is a planner.Loop over it, and what changes when is
// decided by a pure planner.Planner (package planner, with its scenario
// files): level-based, it reads the current State on each Reader signal
// and, when the group's backends changed, builds the group's View once
// (catalog.Aggregate with the previous View) together with the go-sdk
// values served from it (mcp.Tool with the raw schemas), and diffs it
// against the served one. A change is applied to every session; an
// unchanged view sends nothing. Batches are at least Options.Coalesce
// apart: the first change after a quiet period goes out at once, later
// changes in the window are applied together at its end, so a flapping
// backend costs each session at most two notifications per window. The
// tool policy of a state is in force before its view is served; a policy
// change tells each session whose visible lists changed, in the same pass
// over the sessions that gives them the state's view (resync.go).
//
// # Sessions
//
// Each client session has an mcp.Server of its own (one-Server-per-session,
// the go-sdk maintainers' answer to per-session tool sets; package
// sessionserver): the go-sdk notifies the sessions of one Server one after
// the other, so a shared Server would let one client that stops reading
// hold up everyone's list_changed. A session server's session id is fixed
// at creation, which lets another edge rebuild the session from its
// stored record.
//
// A session serves the view it was last given: tools/list, prompts/list and
// resources/list are answered from that immutable value (keyset
// pagination, 1000 per page), so the switch to a new view is atomic — a
// concurrent list sees the old lists or the new ones, never a mix. A
// batch owes each session one list_changed per changed list kind, written
// by the edge on a session-based client's standalone GET stream or on a
// 2026-07-28 subscriptions/listen stream it serves (package session); a
// client that stops reading blocks only its own stream, and what it missed
// stays pending for its next stream. Calls (tools/call, prompts/get,
// resources/read) are routed by the edge's current view (package calls).
// A tool the view does not hold gets an isError result naming it; prompts
// and resources get a JSON-RPC error.
//
// A session is forgotten when its client deletes it, and otherwise by a
// sweep (once a second) that finds its go-sdk session ended, or after
// Options.SessionIdleTimeout without a request: no goroutine waits on
// each idle session.
//
// # Protocol generations
//
// Requests whose Mcp-Protocol-Version is 2026-07-28 or later go to a
// stateless go-sdk handler, and share one server; a subscriptions/listen
// stream the edge does not serve itself (package direct) gets a go-sdk
// session server of its own for as long as it is open. Older requests go
// to a stateful handler (Mcp-Session-Id sessions), except their
// standalone GET stream, which the edge serves. On every path a
// 2026-07-28 result the edge makes from a backend's carries resultType
// "complete", a backend's -32021 reaches the client as that JSON-RPC error
// (HTTP 400), and a malformed Mcp-Protocol-Version gets the JSON-RPC
// -32022 error from the admission gate. A call's Mcp-Param-* headers are
// checked against the arguments its tool binds to them (x-mcp-header), as
// a go-sdk server checks them for its own tools.
//
// # Backends
//
// Calls reach a backend over one pooled go-sdk client session per backend,
// made on first use (protocol 2025-11-25, no standalone stream: changes
// come from the event log); a tools/call is sent on it as raw JSON-RPC,
// and a backend of `transport: sse` is called through the go-sdk (package
// backend). A session the backend no longer knows is replaced and the
// request retried once; a broken connection drops the session without
// repeating the call. Each call has Options.CallTimeout and is cancelled
// when the client's request is. The default backend client makes
// plain-HTTP exchanges on the caller's goroutine over pooled keep-alive
// connections (internal/h1); Options.BackendHTTPClient replaces it.
//
// After the edge answered a plain call itself on an HTTP/1.1 keep-alive
// connection, the connection becomes a call lane (package lane): the edge
// answers the next plain calls on it without net/http's server; any other
// request goes back to the server as if the lane had never been.
// Shutdown closes idle lanes at once, answers calls in progress with
// Connection: close, and cancels those still running when the drain's
// time is up.
//
// # Optimizer mode
//
// With Options.Mode ModeOptimizer a session is shown only find_tool and
// call_tool, plus the Options.PinnedTools the view holds (the config's
// pinned_tools). With each new view the resync loop also builds, once, a
// search index of its tools (package search) and stores it in the served
// value, so every session shares it and is switched to it with the view;
// a find_tool call searches the index of the served value it loaded at
// its start. A view change sends optimizer sessions no tools/list_changed
// (what they list did not change) unless a pinned tool appeared, left or
// changed its definition. Prompts and resources are served and notified
// as in passthrough mode.
//
// find_tool {"query": string, "limit": 1..50, default 8, larger values
// clamped} answers structuredContent, and the same JSON as text:
// {"tools": [{"name", "description", "inputSchema", ..., "score"}],
// "catalog_tools", "catalog_tokens", "returned_tokens"}, each tool its
// definition as tools/list would serve it (the backend's, at the caller's
// revision) with "score" added. Token
// figures are estimates: the bytes of each tool's compact JSON as
// tools/list would serve it, divided by 4 and rounded up, summed over the
// whole view (catalog_tokens) or over the returned tools
// (returned_tokens). call_tool {"tool_name", "arguments"} calls the tool
// exactly as a passthrough tools/call would. Invalid arguments, and tools
// the view no longer holds, give isError results naming the problem. A
// plain tools/call of any exposed name is routed as in passthrough mode.
//
// # Sessions across edges
//
// With Options.Records, every Mcp-Session-Id session has a record in a
// NATS KV bucket (package records): created when the go-sdk accepted its
// initialize, before the response leaves; updated as its evidence changes
// (package ledger, at most once per RecordOptions.FlushEvery); touched on
// activity (at most once per TouchEvery); deleted by DELETE /mcp on any
// edge; expired by the bucket's TTL (the idle timeout) otherwise. A
// graceful shutdown writes what is pending. A request with an id this
// edge does not hold is looked up in the bucket and, when the caller owns
// it, the session is rebuilt here (package rebuild); the edge that held
// it sees the takeover and lets it go. Edge ids must be unique in a fleet
// (cmd/edge adds a random suffix).
//
// Sessions are bound to the identity that created it: the go-sdk
// TokenInfo.UserID if an auth middleware set one, else the value of
// Options.IdentityHeader (set by a trusted proxy; a request without it is
// refused, 401). Another identity gets 403 on every edge, before any
// rebuild. Ids are 26 characters of crypto/rand; a malformed id is
// answered 404 without a store lookup. 2026-07-28 clients are stateless:
// they have no session and nothing to rebuild.
//
// # Convergence evidence
//
// Each stateful session keeps a convergence.Record inside its session
// record, so the evidence moves with it (package ledger says what it
// holds). GET /v1/sessions shows each session's verdict
// (convergence.Explain); an optimizer edge serves another list than its
// view, has no current digest, and its sessions are unverifiable.
// Options.CallTrail records every tools/call (package calltrail).
//
// # Known limits
//
// Lists and find_tool serve the definitions the view holds (package
// view, defs.go), each revision given only the members its schema
// defines; the convergence evidence digests the view's definitions, so a
// 2025-06-18 session that is not sent a tool's "execution" still holds
// the current catalog. A session whose client vanished without DELETE ends after
// Options.SessionIdleTimeout (default 30m) without a request, with or
// without Records (see the README's Limits and package admission for the
// admission gate every request passes first). A request arriving at the
// old edge in the instant between a move and that edge's watch seeing it
// is still served there.
package edge
