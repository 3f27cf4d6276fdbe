// Package bearer makes the edge an OAuth 2.1 resource server
// (edge.Options.Auth): every request to /mcp needs a JWT access token of
// the configured issuer for the edge's audience with the configured
// scopes, verified by package auth's Verifier (keys from the issuer's
// JWKS, refetched at most once per MinRefetchInterval). The edge serves
// the RFC 9728 metadata where clients learn how to get a token
// (MetadataPath). A refusal is 401 with the WWW-Authenticate challenge,
// 403 for a missing scope, 503 while the issuer's keys are unknown; its
// reason is named, never the token. Failed authentications of a forged
// or foreign token are charged to the client's address (a Throttle: the
// policy's rate limits), which is refused before verification once it
// failed too often.
//
// The caller's identity is the token's iss and sub. A verified token
// travels with each of its requests on the request's context: the
// go-sdk's TokenInfo (which its handlers give method handlers and its
// session binding compares) and the owner hash of the sessions it opens,
// made once per token the verifier caches, not once per request.
//
//	b, err := bearer.New(&bearer.Options{Issuer: iss}, "", listenAddr, bearer.Wiring{Throttle: throttle, Registry: registry})
//	r, refusal := b.Authenticate(r) // nil refusal: r carries the token
//	owner := bearer.OwnerOf(r, ident)
//
// Metrics: fleetgate_edge_authentications_total{result, reason}.
package bearer
