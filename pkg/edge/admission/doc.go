// Package admission is the edge's one admission gate: the single decision
// of whether a request to /mcp may be served, made before any parser
// beyond the gate's own reads it. Every request path of the edge (the
// net/http handler, call lanes, listen streams, rehydration) asks the same
// Gate, so no path can skip a check.
//
// The gate is pure: it sees the request's facts (headers, body, the
// identity an auth layer established, session counts) and returns a
// Decision; the caller does the I/O (reading the body within its limit,
// writing the refusal). Checks, in order:
//
//  1. identity: with an identity header configured, a request without it
//     is refused 401 (a token's user id, when an auth layer set one, wins);
//  2. protocol version: an Mcp-Protocol-Version that is not a date
//     (YYYY-MM-DD) is refused 400;
//  3. body: over its size limit 413 (MaxInitializeBytes for a request that
//     creates a session, MaxBodyBytes otherwise), nested deeper than
//     MaxDepth or not balanced 400 with a JSON-RPC parse error;
//  4. sessions: a request that would create a session on an edge holding
//     MaxSessions gets 503, one whose identity holds
//     MaxSessionsPerIdentity gets 429, both with Retry-After.
package admission
