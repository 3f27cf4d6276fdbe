// Package verify is the engine of `edge verify`: an MCP client that checks
// what any streamable HTTP MCP endpoint (a fleetgate edge, another gateway, a
// plain server) serves in tools/list, and whether that is what it should
// serve.
//
//	rep, err := verify.Run(ctx, verify.Options{
//		URL:        "http://127.0.0.1:8080/mcp",
//		Controller: "http://127.0.0.1:8081", // or ExpectDigest: "sha256:..."
//		Group:      "default",
//	})
//	if err != nil { ... } // bad options, controller or endpoint unreachable, initialize failed
//	json.NewEncoder(os.Stdout).Encode(rep)
//	os.Exit(rep.ExitCode()) // 0 only when converged
//
// cmd/edge calls [Main] for its `verify` subcommand.
//
// # What a run does
//
//  1. With Controller set, GET {Controller}/v1/groups/{Group}/view; its
//     digest and generation become the expectation. ExpectDigest is the
//     alternative for an endpoint without a controller.
//  2. initialize (requesting ProtocolVersion, default 2025-11-25), then
//     notifications/initialized, in the session the server assigns
//     (Mcp-Session-Id); later requests carry MCP-Protocol-Version.
//  3. tools/list from cursor "" following every nextCursor until a page has
//     none. A cursor that was already followed (a loop) or MaxPages pages
//     stop the traversal with a cursor outstanding.
//  4. The pages feed a [convergence.Record] (SetCurrent with the
//     expectation, ListPage per page, digesting with catalog.Digest) and
//     [convergence.Explain] gives the verdict: converged when the traversal
//     is complete and its digest equals the expectation, stale when they
//     differ, incomplete when a cursor is left, unverifiable when there is
//     nothing to compare against (or no page could be listed).
//  5. DELETE of the session, best effort.
//
// # Raw JSON, on purpose
//
// The digest must cover the tool definitions exactly as the server sent
// them: the go-sdk's mcp.Tool struct drops fields it does not know (such as
// "execution"), which would change the digest. So the package does not use
// the go-sdk client: it speaks the few requests it needs as raw JSON-RPC
// over HTTP POST (rpc.go) and keeps tools as json.RawMessage. Response
// bodies may be application/json (one message or a batch) or
// text/event-stream (the response is found among the events by its id;
// notifications and server requests on the stream are skipped).
//
// Only the session-based protocol generations (2024-11-05 to 2025-11-25)
// are spoken; requesting 2026-07-28 returns [ErrUnsupportedProtocol].
// Servers still negotiate down from the requested version as usual.
//
// # Exit statuses
//
// [ExitConverged] 0, [ExitStale] 1, [ExitIncomplete] 2, [ExitUnverifiable]
// 3, and [ExitError] 4 when no report was produced.
package verify
