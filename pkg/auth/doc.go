// Package auth makes an MCP endpoint an OAuth 2.1 resource server: it
// verifies JWT access tokens against the issuer's JWKS and answers a
// refusal the way the MCP authorization spec and RFC 6750/9728 say.
//
// A Verifier checks a token's signature (RS256, ES256 and the other
// asymmetric algorithms of an allowlist; none and HS* never), issuer,
// audience (RFC 8707: aud, a string or an array, contains the resource),
// exp, nbf and iat with a leeway, and required scopes (scope, a
// space-separated string, or scp, an array). Its result is an Identity:
// Issuer and Subject (the caller), Scopes, Claims and Expiry. Inputs are
// bounded before they are parsed: the token's size, its claims' nesting,
// the JWKS's size and key count, every fetch's time; redirects are never
// followed.
//
// Keys come from Options.JWKSURL or, when it is empty, from the issuer's
// metadata (RFC 8414 /.well-known/oauth-authorization-server with the
// issuer's path inserted, then /.well-known/openid-configuration), whose
// issuer must equal the configured one. They are cached and refreshed
// lazily on the request path (no goroutine): after the JWKS answer's
// max-age (within MinRefresh..MaxRefresh; Refresh when absent), and at
// once for an unknown kid, but never more than once per
// MinRefetchInterval, so a flood of tokens with made-up kids costs the
// issuer one request per interval. Tokens verified lately are remembered
// by their SHA-256 (TokenCacheSize, TokenCacheTTL), so a client that
// sends one token on every request pays the signature check about once a
// minute.
//
// Every error of Verify wraps one reason (ErrNoToken, ErrMalformed,
// ErrBadSignature, ErrUnknownKey, ErrWrongIssuer, ErrWrongAudience,
// ErrExpired, ErrNotYetValid, ErrInsufficientScope, ErrKeysUnavailable);
// Reason names it for a metric, and Challenge turns it into the HTTP
// status and WWW-Authenticate value:
//
//	401 WWW-Authenticate: Bearer resource_metadata="<metadata URL>"                           (no token)
//	401 WWW-Authenticate: Bearer resource_metadata="…", error="invalid_token"                 (any failure)
//	403 WWW-Authenticate: Bearer resource_metadata="…", error="insufficient_scope", scope="…" (a scope missing)
//	503 (the issuer's keys could not be fetched yet)
//
// An edge's use, per request:
//
//	v, err := auth.NewVerifier(auth.Options{Issuer: issuer, Audience: resourceURL, Scopes: scopes})
//	mdPath, mdURL, err := auth.MetadataURL(resourceURL)
//	mux.Handle("GET "+mdPath, auth.MetadataHandler(auth.NewMetadata(resourceURL, issuer, scopes)))
//	...
//	id, err := v.VerifyRequest(r)
//	if err != nil {
//		status, challenge := auth.Challenge(err, mdURL)
//		if challenge != "" {
//			w.Header().Set("WWW-Authenticate", challenge)
//		}
//		http.Error(w, http.StatusText(status), status)
//		return
//	}
//	// id.Issuer, id.Subject: the caller; id.Claims: for the policy.
//
// Package issuertest is an authorization server for tests.
package auth
