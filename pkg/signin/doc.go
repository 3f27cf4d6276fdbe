// Package signin makes the edge the OAuth 2.1 client of backends
// configured with `auth: {type: user_oauth}`: each user signs in to the
// backend once, and the backend's calls of that user carry the user's own
// access token.
//
// The parts, each bounded and each parser with a fuzz target:
//
//   - Discovery (metadata.go, fetch.go): the backend's 401 challenge
//     (WWW-Authenticate resource_metadata) or its RFC 9728
//     /.well-known/oauth-protected-resource document names the
//     authorization server; its RFC 8414 metadata gives the endpoints.
//     Fetches are bounded in size and time, follow no redirect to another
//     origin and dial no link-local or metadata address.
//   - The flow (flow.go): authorization code with PKCE (S256); the state
//     is sealed (AES-256-GCM under the sign-in key every edge shares) and
//     carries the caller (iss and sub), the backend, the code verifier and
//     the client, so that the callback completes on any edge.
//   - The browser binding (binding.go, login.go): the URL a caller is
//     given is the edge's StartPath; the browser logs in at the fleet's
//     own issuer (the edge its client, code with PKCE) and its user must
//     be the caller the state names; a sealed cookie then binds the
//     browser to that identity and sign-in, and Complete requires it
//     before redeeming a code. Without a Login the Manager refuses to
//     begin sign-ins unless told to accept unbound ones.
//   - Clients without a session (resume.go): a call answered with a
//     sign-in request carries a sealed requestState; its retry waits for
//     the sign-in.
//   - The token endpoint (client.go): code and refresh grants, dynamic
//     client registration (RFC 7591) when no client_id is configured.
//   - Storage (vault.go, session.go): each refresh token sealed under the
//     sign-in key, bound to its identity and backend, in a NATS KV bucket
//     keyed by a hash of both; every edge watches the bucket, so a session
//     that moves to another edge keeps its sign-in and a sign-out or
//     revocation is fleet-wide. Access tokens are held in memory only and
//     refreshed on expiry or when the backend answers 401. A refresh's
//     rotated token whose write fails (refreshstore.go) is held in memory,
//     used by this edge's next refresh, and written again by Run in the
//     background every SaveRetry and once more when Run stops
//     (heldwriter.go), never over a newer record; logged and counted.
//
// Tokens are credential.Secret values; no error text of this package
// quotes a token, a code, a verifier, a client secret or a state.
package signin
