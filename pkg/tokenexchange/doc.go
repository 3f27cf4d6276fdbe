// Package tokenexchange obtains the tokens a backend configured with
// `auth: {type: token_exchange, ...}` receives: an OAuth 2.0 token
// exchange (RFC 8693) at the configured token endpoint, with the caller's
// verified access token as the subject_token, for the backend's audience
// and scopes; and, for the controller's probes, a client credentials
// grant (RFC 6749 section 4.4) at the same endpoint with the same client.
//
// A Client makes one request: a form POST, bounded in time and in the
// size of its answer, redirects never followed. The answer is parsed by
// ParseResponse (a pure function with a fuzz target): a token, or a
// *RefusedError carrying the endpoint's `error` code (never its
// description, which is the endpoint's free text).
//
// A Source keeps the issued tokens per identity, backend and
// configuration in a bounded Cache (memory only) until shortly before
// they expire, and never past the expiry of the subject token they were
// obtained with; concurrent callers of one key share one exchange.
//
// Tokens are credential.Secret values: printing or encoding one gives
// "[redacted]". No error text of this package quotes a token, a client
// secret or the endpoint's answer.
//
//	src := tokenexchange.NewSource(nil)
//	tok, err := src.Token(ctx, tokenexchange.Subject{Identity: iss + " " + sub, Token: accessToken, Expiry: exp},
//		"tickets", cfg)
//	req.Header.Set("Authorization", "Bearer "+tok.Value.Reveal())
package tokenexchange
