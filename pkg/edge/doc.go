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
// This package wires the parts, runs them (Run), serves the admin API and
// resyncs sessions; each part is a package of its own:
//
//   - admission: the one gate every request passes first (identity, body
//     limits, the body parsed once: admission.ParseBody), pure;
//   - dispatch: the one route a request takes, from the facts gathered
//     once per request (Edge.facts, serve.go), pure and table-tested
//     (dispatch/testdata/routes.json); the server's handler and call lanes
//     ask the same function;
//   - calls: the call plane, where a tools/call, prompts/get,
//     resources/read, completion, task method, resource subscription or
//     optimizer meta-tool goes, under the tool policy, with the call trail
//     and relays; it takes no http.Request;
//   - session, evidence, records: the sessions, their convergence
//     evidence and their records in NATS KV;
//   - view: the served value of one generation (lists, definitions per
//     revision, the optimizer's index);
//   - backend: pooled backend sessions and the raw call path;
//   - fastpath, internal/h1: the hand-written wire code of the fast
//     paths, each checked against the go-sdk by differential tests.
//
// A request to /mcp: admitHTTP (admit.go) authenticates it, reads its
// body within the gate's limit and asks the gate, which parses the body
// once; limitRequest charges the rate limits and concurrency slots on
// that parse, message by message for a batch; serve routes it once and
// serves the route.
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
// go-sdk's own registry of a session server holds nothing the client sees.
// A batch owes each session one list_changed per changed list kind:
//   - a session-based client's standalone GET stream is served by the edge
//     (stream.go): the batch sets the session's pending bits and wakes the
//     stream's goroutine, which writes one pre-encoded SSE event per kind.
//     A client that stops reading blocks only its own stream, for at most
//     10s per write, and what it missed stays pending for its next stream;
//   - a 2026-07-28 subscriptions/listen stream the edge serves is the same,
//     for the kinds it subscribed to; one left to the go-sdk has a hidden
//     marker re-registered once per changed kind to make the go-sdk send
//     that session exactly one list_changed (per kind) for the batch.
//
// Calls (tools/call, prompts/get, resources/read) are routed by the edge's
// current view (package calls). A tool the view does not hold gets an isError result
// naming it; prompts and resources get a JSON-RPC error.
//
// # Protocol generations
//
// Requests whose Mcp-Protocol-Version is 2026-07-28 or later go to a
// stateless go-sdk handler, and share one server. A subscriptions/listen
// stream (which receives list_changed) is served by the edge when the
// go-sdk would take its request the same way (listen.go); otherwise it
// gets a go-sdk session server of its own for as long as it is open. Older requests go to a stateful handler
// (Mcp-Session-Id sessions), except their standalone GET stream, which the
// edge serves (stream.go, streamconn.go).
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
// A tools/call does not go through the go-sdk on either side when it can
// be helped (forward.go, fastcall.go): it is sent to the backend as raw
// JSON-RPC on the pooled session (its Mcp-Session-Id, an id of its own,
// a JSON or event-stream response; a missing session or an undelivered
// request is retried once on a new session, as above) and, for a plain
// tools/call POST of an initialized session of a passthrough edge without
// Options.SessionTimeout, the edge answers the client itself with an
// application/json response, running the same call trail and routing as
// the session's middleware. notifications/cancelled cancels such a call.
// The request and the backend's response are parsed with fastjson (exact
// member names, nothing unexpected), and a backend result of the common
// shape is validated and passed to the client as it came; any other is
// decoded and re-encoded. Everything else (and any request the fast path
// does not recognise exactly) goes through the go-sdk, whose decoder
// allocates tens of KB per message.
//
// A backend configured with `transport: sse` (the legacy HTTP+SSE
// transport: responses come on a long-lived GET stream, not on the POST)
// is not called on the raw path: its pooled session is a go-sdk
// mcp.SSEClientTransport session and every call, tools/call included,
// goes through it (ssebackend.go). Its stream lives until the session is
// dropped, the backend leaves the view or changes URL or transport, or
// the edge stops; a stream the backend ends is forgotten and the next
// call reconnects. A call is sent again on a new session only when its
// request cannot have reached the backend (the session had ended, or
// the POST was refused or not delivered).
//
// The edge's default backend client makes plain-HTTP exchanges on the
// caller's goroutine over pooled keep-alive connections (conntransport.go):
// net/http's Transport hands each exchange to two goroutines of the
// connection, which on a busy machine cost more than the rest of the hop.
// Its JSON-RPC posts are written from a request head built once per
// backend URL, and a response head of the plain form is parsed in place
// (rawpost.go). Options.BackendHTTPClient replaces it.
//
// A plain tools/call of a 2026-07-28 client (a stateless request) is
// answered the same way (statelesscall.go), with the go-sdk's header and
// _meta checks and the server's info added to the result's _meta as the
// go-sdk adds it, and resultType "complete" spliced in, instead of by the
// go-sdk's stateless handler, which makes a server session per request.
// A call whose _meta has more than the protocol's own members (a
// progressToken) goes to the go-sdk's handler, which passes the token on
// and relays the backend's progress on the call's stream. On every path a
// 2026-07-28 result the edge makes from a backend's carries resultType
// "complete" (taskfields.go: the go-sdk marks only its own handlers'), a
// backend's -32021 reaches the client as that JSON-RPC error (HTTP 400),
// and a malformed Mcp-Protocol-Version gets the JSON-RPC -32022 error
// from the admission gate. A call's Mcp-Param-* headers are
// checked against the arguments its tool binds to them (x-mcp-header), as
// a go-sdk server checks them for its own tools: on this path, and, for a
// call the go-sdk decoded, in the session servers' outermost middleware
// (paramheaders.go).
//
// After the edge answered such a call on an HTTP/1.1 keep-alive
// connection, the connection becomes a call lane (package lane): the edge
// hijacks it and answers the next plain calls on it itself, without
// net/http's server and its per-request goroutine hand-offs. A lane takes
// only request heads of the plain form a client library sends
// (lanehead.go). Any other request on a lane goes back to the server with
// the bytes read for it, through a listener the server also serves; the
// server then answers it as if the lane had never been. A connection whose
// calls alternate one by one with other requests stays with the server
// until two calls come in a row. A lane reads the client's side during a
// call only if the call lasts over 20 ms (a client leaving then cancels
// it). Shutdown closes idle lanes at once, answers calls in progress with
// Connection: close, and cancels those still running when the drain's
// time is up. Metrics: fleetgate_edge_call_lanes,
// fleetgate_edge_call_lane_handbacks_total.
//
// A session is forgotten when its client deletes it, and otherwise by a
// sweep (once a second) that finds its go-sdk session ended: no goroutine
// waits on each idle session.
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
// NATS KV bucket (package sessionstore): created when the go-sdk accepted
// its initialize, before the response leaves; updated when a view is
// applied to it, when a list_changed reaches it and when it lists tools
// (at most once per RecordOptions.FlushEvery); touched on activity (at
// most once per TouchEvery); deleted by DELETE /mcp on any edge; expired
// by the bucket's TTL (the idle timeout) otherwise. A graceful shutdown
// writes what is pending.
//
// A request with an id this edge does not hold is looked up in the
// bucket. If the caller's identity hashes to the record's owner, the
// session is rebuilt (R1): the stored initialize, then
// notifications/initialized, go through the go-sdk's own handler into a
// server with the same fixed id, and concurrent requests for the session
// share one rebuild. The record is then written under this edge's id; the
// edge that held the session sees that write in its watch of the bucket
// and lets the session go (its standalone stream ends, so the client
// reconnects it, through the balancer, to the new edge). Edge ids must be
// unique in a fleet (cmd/edge adds a random suffix).
//
// A record's registry digest is the tool list the client is known to
// hold: the one its last list_changed announced or its last complete
// traversal served. When it differs from what the rebuilding edge serves,
// a list_changed is owed. More generally, a list_changed that could not
// be delivered (no standalone GET stream open, or a failed write) stays
// pending rather than lost, and is sent as soon as a GET stream attaches;
// a complete tools/list of the current view settles it too.
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
// record, so the evidence moves with it: the negotiated protocol version
// (from the InitializeResult), whether the client declared listChanged
// (MCP 2025-11-25 has no such client capability: a tools.listChanged in
// its capabilities or experimental capabilities counts, and so does
// opening the standalone GET stream, the only channel a list_changed can
// reach it on) and whether the server advertised it, the last change
// signal actually delivered, every tools/list page served (its
// definitions as the view holds them, digested with catalog.Digest) and the current digest of each applied view.
// GET /v1/sessions shows each session's verdict (convergence.Explain); an
// optimizer edge serves another list than its view, has no current
// digest, and its sessions are unverifiable. Options.CallTrail records
// every tools/call (package calltrail).
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
