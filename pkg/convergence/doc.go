// Package convergence proves, per MCP client session, whether the client's
// view of the tool list converged on the current catalog.
//
// The package is a pure core: it keeps evidence in a [Record] and judges it
// with [Verdict] and [Explain]. It never reads the clock (every observation
// takes a now), starts no goroutines and does no I/O. The digest function is
// injected; fleetgate passes the catalog digest (see INTERFACE.md, "Catalog
// digest"), tests pass anything deterministic.
//
// # Driving a record
//
// The edge keeps one Record per session and stores it, as JSON, in the
// session's key-value record:
//
//	rec := convergence.Record{
//		ProtocolVersion:   initResult.ProtocolVersion,
//		ClientListChanged: clientDeclaredListChanged,
//		ServerListChanged: serverAdvertisedToolsListChanged,
//	}
//	rec.SetCurrent(view.Digest, view.Generation) // at session start
//
//	// tools/list middleware, after the response is built:
//	err := rec.ListPage(now, req.Cursor, res.Tools, res.NextCursor, catalog.Digest)
//
//	// when the session's view moves to a new generation:
//	rec.SetCurrent(view.Digest, view.Generation)
//	rec.Signal(now, view.Generation) // when notifications/tools/list_changed is sent
//
//	verdict, reason := convergence.Explain(rec)
//
// # Traversals and cursor chains
//
// A client discovers tools by a traversal: tools/list with cursor "", then
// with each page's nextCursor until a page has none. [Record.ListPage]
// starts a traversal on cursor "", continues it on a cursor equal to the
// previous page's nextCursor, and on any other cursor starts a traversal
// marked [BreakCursor], which can never prove anything. Only the latest
// traversal is kept. The tools of the pages are accumulated outside the
// serialised form and digested once, when the last page is served; the
// stored record holds only the resulting digest, counts and at most
// [MaxCursorChain] cursors. A record reloaded from JSON in the middle of a
// traversal (the session moved edges) no longer has the earlier pages, so
// the traversal is marked [BreakPagesLost]; the next traversal from cursor ""
// is judged normally.
//
// Ordering between a traversal and a change signal uses [Record.Seq], a
// counter of observations carried inside the record, not the timestamps:
// the edges that serve a session over its life need not agree on the time.
// A traversal is "after" the signal only if its first page was served after
// the signal was sent; one that began before and ended after mixes old and
// new pages and does not count.
//
// # Verdicts and their precedence
//
// The four verdicts, as specified:
//
//   - converged: a traversal completed after the last change signal (or no
//     signal was sent), and the digest it served equals the current digest;
//   - stale: the last completed traversal is older than the last change
//     signal, or the digests differ (the same tool names with a changed
//     schema is stale, since the digest covers the schemas);
//   - incomplete: a traversal started after the signal but a cursor is
//     still outstanding;
//   - unverifiable: no traversal evidence at all, or listChanged was not
//     negotiated (the client did not declare it or the server did not
//     advertise it) and no traversal happened after the change.
//
// These overlap, so [Explain] applies them in a fixed order and the first
// match decides:
//
//  1. No page served: unverifiable. Nothing else can be said.
//  2. The latest traversal is broken (cursor mismatch, pages lost, digest
//     failure): unverifiable. Only the latest traversal is kept, so the
//     earlier evidence is gone, and a broken one proves nothing.
//  3. The latest traversal started before the last signal: stale when
//     listChanged was negotiated (the client was told and has not listed
//     again), unverifiable when it was not (the client was never obliged
//     to react, so its silence is no evidence). This holds even if that
//     traversal's digest happens to equal the current one: converged
//     requires a traversal after the signal.
//  4. The latest traversal (begun after the signal, or with none sent) is
//     still in progress: incomplete. It takes precedence over any digest
//     comparison, since the client is replacing its view right now.
//  5. No current digest was ever set: unverifiable.
//  6. The served digest equals the current digest: converged. A later
//     generation that did not change the session's tool list does not
//     demand a new traversal.
//  7. The digests differ, listChanged was not negotiated and the traversal
//     started at an older generation than the current one (no traversal
//     after the change): unverifiable, in preference to stale.
//  8. The digests differ otherwise: stale. This covers a negotiated client
//     whose list changed without a signal yet, and a traversal that began
//     at the current generation yet served something else.
//
// [GenerationLag] and [SignalToConverged] derive metrics from the same
// evidence.
package convergence
