// Package fastpath holds the pure parts of the edge's fast paths: the
// strict parsers of the requests it answers without the go-sdk (a session's
// tools/call and notifications/cancelled, a 2026-07-28 tools/call, a
// subscriptions/listen), the header checks that decide whether the go-sdk
// would take a request, and the Mcp-Param-* header checks of a call.
//
// Each parser takes only what encoding/json and the go-sdk would read the
// same way (names matched exactly, none twice, bounded depth); anything
// else is left to the go-sdk, so a fast path never answers what the go-sdk
// would answer differently. The fuzz targets hold that.
//
//	if fastpath.SessionPostHeaders(r, version) {
//		if msg, ok := fastpath.ParseMessage(body); ok { ... answer msg ... }
//	}
package fastpath
