package issuertest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// The authorization code flow (OAuth 2.1): /authorize signs in the user
// the request names in the UserHeader (the test's stand-in for a login
// page) and redirects to the client's redirect_uri with a code and the
// state; the token endpoint redeems the code once, for the same client
// and redirect_uri, only with the code_verifier whose S256 challenge
// /authorize was given (PKCE, RFC 7636; plain is refused), and issues an
// access token for the user (aud the resource asked for, RFC 8707) and a
// refresh token; a refresh grant rotates the refresh token. /register
// registers public clients (RFC 7591). ProtectedResource serves a
// backend's RFC 9728 metadata naming this issuer.

// UserHeader names the user /authorize signs in.
const UserHeader = "X-Issuertest-User"

// CodeGrant is one authorization code redeemed.
type CodeGrant struct {
	User, Client, Resource string
	// Verified: the code_verifier matched the challenge (a grant whose
	// verifier did not is refused, and recorded with Verified false).
	Verified bool
	// Access and Refresh are the tokens issued ("" when refused).
	Access, Refresh string
}

type codeEntry struct {
	user, client, redirect, challenge, resource, scope string
}

type refreshEntry struct {
	user, client, resource, scope string
}

type codeFlow struct {
	codes         map[string]codeEntry
	refresh       map[string]refreshEntry
	grants        []CodeGrant
	refreshed     []string // access tokens issued by refresh grants
	registrations int
}

// AuthorizeURL is the authorization endpoint's URL.
func (i *Issuer) AuthorizeURL() string { return i.srv.URL + "/authorize" + i.o.Path }

// RegisterURL is the registration endpoint's URL.
func (i *Issuer) RegisterURL() string { return i.srv.URL + "/register" + i.o.Path }

// CodeGrants are the authorization code grants asked for, in order.
func (i *Issuer) CodeGrants() []CodeGrant {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]CodeGrant(nil), i.codes.grants...)
}

// Refreshed are the access tokens the refresh grants issued, in order.
func (i *Issuer) Refreshed() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.codes.refreshed...)
}

// Registrations counts the clients registered.
func (i *Issuer) Registrations() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.codes.registrations
}

// RevokeRefresh invalidates every refresh token of user (a refresh grant
// with one gets invalid_grant).
func (i *Issuer) RevokeRefresh(user string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for k, e := range i.codes.refresh {
		if e.user == user {
			delete(i.codes.refresh, k)
		}
	}
}

// Subject is the sub of token when this issuer signed it with a published
// key and it has not expired.
func (i *Issuer) Subject(token string) (string, bool) { return i.subjectOf(token, i.o.Now()) }

// ProtectedResource is the RFC 9728 metadata of the resource (a backend's
// URL) naming this issuer, as a handler.
func (i *Issuer) ProtectedResource(resource string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{i.URL()},
			"bearer_methods_supported": []string{"header"}})
	})
}

func randomToken(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func (i *Issuer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || q.Get("client_id") == "" {
		http.Error(w, "invalid_request: redirect_uri and client_id", http.StatusBadRequest)
		return
	}
	user := r.Header.Get(UserHeader)
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	switch {
	case user == "":
		back.Set("error", "access_denied")
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		back.Set("error", "invalid_request")
	default:
		code := randomToken("code-")
		i.mu.Lock()
		if i.codes.codes == nil {
			i.codes.codes = map[string]codeEntry{}
		}
		i.codes.codes[code] = codeEntry{user: user, client: q.Get("client_id"), redirect: q.Get("redirect_uri"),
			challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
		i.mu.Unlock()
		back.Set("code", code)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// grantCode redeems a code (the form is parsed, the client authenticated).
func (i *Issuer) grantCode(w http.ResponseWriter, r *http.Request, client string, lifetime time.Duration) {
	code := r.PostForm.Get("code")
	i.mu.Lock()
	e, ok := i.codes.codes[code]
	delete(i.codes.codes, code) // once, whatever happens
	i.mu.Unlock()
	if !ok || e.client != client || e.redirect != r.PostForm.Get("redirect_uri") {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	g := CodeGrant{User: e.user, Client: client, Resource: e.resource,
		Verified: base64.RawURLEncoding.EncodeToString(sum[:]) == e.challenge}
	if !g.Verified {
		i.mu.Lock()
		i.codes.grants = append(i.codes.grants, g)
		i.mu.Unlock()
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	g.Access, g.Refresh = i.issueUser(refreshEntry{user: e.user, client: client, resource: e.resource, scope: e.scope}, lifetime)
	i.mu.Lock()
	i.codes.grants = append(i.codes.grants, g)
	i.mu.Unlock()
	writeUserTokens(w, g.Access, g.Refresh, lifetime)
}

// grantRefresh rotates a refresh token.
func (i *Issuer) grantRefresh(w http.ResponseWriter, r *http.Request, client string, lifetime time.Duration) {
	old := r.PostForm.Get("refresh_token")
	i.mu.Lock()
	e, ok := i.codes.refresh[old]
	delete(i.codes.refresh, old)
	i.mu.Unlock()
	if !ok || e.client != client {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	access, refresh := i.issueUser(e, lifetime)
	i.mu.Lock()
	i.codes.refreshed = append(i.codes.refreshed, access)
	i.mu.Unlock()
	writeUserTokens(w, access, refresh, lifetime)
}

// issueUser mints e's access token and a refresh token.
func (i *Issuer) issueUser(e refreshEntry, lifetime time.Duration) (string, string) {
	now := i.o.Now()
	claims := map[string]any{"iss": i.URL(), "sub": e.user, "aud": e.resource, "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(lifetime).Unix(), "jti": randomToken("jti-"), "client_id": e.client}
	if e.scope != "" {
		claims["scope"] = e.scope
	}
	access, refresh := i.Mint(claims), randomToken("rt-")
	i.mu.Lock()
	if i.codes.refresh == nil {
		i.codes.refresh = map[string]refreshEntry{}
	}
	i.codes.refresh[refresh] = e
	i.mu.Unlock()
	return access, refresh
}

func writeUserTokens(w http.ResponseWriter, access, refresh string, lifetime time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int(lifetime.Seconds()), "refresh_token": refresh})
}

func (i *Issuer) serveRegister(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req) != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	i.mu.Lock()
	i.codes.registrations++
	id := fmt.Sprintf("dcr-%d", i.codes.registrations)
	i.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs,
		"token_endpoint_auth_method": "none"})
}
