package issuertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The issuer's token endpoint (TokenURL) does two grants:
//
//   - token exchange (RFC 8693): a subject_token the issuer signed and
//     that has not expired is exchanged for a new token of the same sub
//     for the requested audience and scope, with the client as its actor
//     (act.sub);
//   - client credentials (RFC 6749 section 4.4): a token whose sub is the
//     client, for the requested audience and scope.
//
// With SetClient, the client must authenticate (HTTP Basic, section
// 2.3.1); RefuseExchanges makes every exchange fail with an OAuth error.
// Every grant is recorded (Exchanges, ClientGrants). It also does the
// authorization code grant with PKCE and refresh tokens (authcode.go).

// Exchange is one token exchange the endpoint answered with a token.
type Exchange struct {
	// Subject is the sub of the subject token; Audience and Scope as asked.
	Subject, Audience, Scope string
	// SubjectToken is the token exchanged, Issued the token given.
	SubjectToken, Issued string
}

type tokenEndpoint struct {
	clientID, clientSecret string
	lifetime               time.Duration
	refuse                 string
	exchanges              []Exchange
	clientGrants           []string // the tokens issued
}

// TokenURL is the token endpoint's URL.
func (i *Issuer) TokenURL() string { return i.srv.URL + "/token" + i.o.Path }

// SetClient makes the token endpoint require this client (HTTP Basic).
func (i *Issuer) SetClient(id, secret string) {
	i.mu.Lock()
	i.sts.clientID, i.sts.clientSecret = id, secret
	i.mu.Unlock()
}

// SetTokenLifetime is the expires_in of the tokens the endpoint issues
// (default an hour); their exp follows it.
func (i *Issuer) SetTokenLifetime(d time.Duration) {
	i.mu.Lock()
	i.sts.lifetime = d
	i.mu.Unlock()
}

// RefuseExchanges makes every token exchange fail with the OAuth error
// code (HTTP 400); "" stops refusing.
func (i *Issuer) RefuseExchanges(code string) {
	i.mu.Lock()
	i.sts.refuse = code
	i.mu.Unlock()
}

// Exchanges are the token exchanges answered with a token, in order.
func (i *Issuer) Exchanges() []Exchange {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]Exchange(nil), i.sts.exchanges...)
}

// ClientGrants are the tokens the client credentials grant issued.
func (i *Issuer) ClientGrants() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.sts.clientGrants...)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": "issuertest refused: " + code})
}

func (i *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	i.mu.Lock()
	sts := i.sts
	i.mu.Unlock()
	client := r.PostForm.Get("client_id")
	if id, secret, ok := r.BasicAuth(); ok {
		client = id
		if sts.clientID != "" && (id != sts.clientID || secret != sts.clientSecret) {
			oauthError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
	} else if sts.clientID != "" {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	lifetime := sts.lifetime
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	aud, scope := r.PostForm.Get("audience"), r.PostForm.Get("scope")
	now := i.o.Now()
	claims := map[string]any{"iss": i.URL(), "aud": aud, "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(lifetime).Unix(), "jti": fmt.Sprintf("sts-%d", now.UnixNano())}
	if scope != "" {
		claims["scope"] = scope
	}
	switch r.PostForm.Get("grant_type") {
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		if sts.refuse != "" {
			oauthError(w, http.StatusBadRequest, sts.refuse)
			return
		}
		subject := r.PostForm.Get("subject_token")
		sub, ok := i.subjectOf(subject, now)
		if !ok || r.PostForm.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token" {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		claims["sub"] = sub
		claims["act"] = map[string]any{"sub": client}
		claims["jti"] = fmt.Sprintf("sts-%s-%d", sub, now.UnixNano())
		tok := i.Mint(claims)
		i.mu.Lock()
		i.sts.exchanges = append(i.sts.exchanges, Exchange{Subject: sub, Audience: aud, Scope: scope, SubjectToken: subject, Issued: tok})
		i.mu.Unlock()
		writeToken(w, tok, lifetime, true)
	case "authorization_code":
		i.grantCode(w, r, client, lifetime) // authcode.go
	case "refresh_token":
		i.grantRefresh(w, r, client, lifetime) // authcode.go
	case "client_credentials":
		if client == "" {
			oauthError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
		claims["sub"] = client
		tok := i.Mint(claims)
		i.mu.Lock()
		i.sts.clientGrants = append(i.sts.clientGrants, tok)
		i.mu.Unlock()
		writeToken(w, tok, lifetime, false)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
	}
}

func writeToken(w http.ResponseWriter, tok string, lifetime time.Duration, exchanged bool) {
	body := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(lifetime.Seconds())}
	if exchanged {
		body["issued_token_type"] = "urn:ietf:params:oauth:token-type:access_token"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(body)
}

// subjectOf is the sub of a token this issuer signed with a published key
// and that has not expired at now.
func (i *Issuer) subjectOf(token string, now time.Time) (string, bool) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256,
		jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA})
	if err != nil || len(tok.Headers) != 1 {
		return "", false
	}
	i.mu.Lock()
	var k *key
	for _, c := range i.keys {
		if c.kid == tok.Headers[0].KeyID && c.published {
			k = c
		}
	}
	i.mu.Unlock()
	if k == nil {
		return "", false
	}
	var c jwt.Claims
	if err := tok.Claims(k.priv.Public(), &c); err != nil || c.Expiry == nil || !now.Before(c.Expiry.Time()) ||
		strings.TrimSpace(c.Subject) == "" || c.Issuer != i.URL() {
		return "", false
	}
	return c.Subject, true
}
