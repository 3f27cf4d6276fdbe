package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// Paths of the browser binding on the MCP listener (binding.go).
const (
	// StartPath is where the URL a caller is given leads: the browser is
	// sent to the fleet issuer's login.
	StartPath = "/oauth/start"
	// LoginPath is the redirect URI of the fleet login.
	LoginPath = "/oauth/login"
)

// ErrNoLogin: the edge has no client at the fleet issuer to bind sign-ins
// to their users' browsers, and was not told to accept unbound sign-ins.
var ErrNoLogin = errors.New("per-user sign-in is disabled on this edge: it has no client at the fleet issuer to check who completes a sign-in (--signin-client-id), and unbound sign-ins are not accepted (--signin-unbound)")

// Fleet is the fleet's own issuer (the edge's --auth-issuer) as the
// browser binding uses it.
type Fleet struct {
	Issuer string
	// Resource is asked for (RFC 8707) so that the token issued is one
	// the edge verifies as it verifies its MCP callers'; Scopes are the
	// scopes those need.
	Resource string
	Scopes   []string
	// Identify verifies an access token of the issuer as the edge
	// verifies its MCP callers' and returns its identity (iss and sub).
	Identify func(ctx context.Context, token string) (string, error)
}

// Login binds sign-ins to their users' browsers: the edge is a client of
// the fleet issuer (authorization code with PKCE).
type Login struct {
	Fleet
	ClientID string
	// ClientSecret is the reference of a confidential client's secret
	// (zero: a public client).
	ClientSecret credential.Ref
	// StartURL and RedirectURL are the edge's base URL + StartPath and +
	// LoginPath.
	StartURL, RedirectURL string
}

// startURL is the URL a caller is given for the sign-in sealed in state.
func (lo *Login) startURL(state string) string {
	return lo.StartURL + "?" + url.Values{"state": {state}}.Encode()
}

// Start is the fleet login of the browser that opened the start URL of
// the sign-in sealed in state: the fleet issuer's authorization URL to
// send it to, and the cookie that binds the login to it, for sign-in bind
// (the browser keeps one cookie per sign-in: opening another's start URL
// replaces nothing of its own).
func (m *Manager) Start(ctx context.Context, state string) (loginURL, bind, cookie string, err error) {
	lo := m.o.Login
	if lo == nil {
		return "", "", "", ErrNoLogin
	}
	p, err := m.o.Key.OpenState(state, m.o.Now())
	if err != nil {
		return "", "", "", fmt.Errorf("sign-in start: %w", err)
	}
	if p.Bind == "" {
		return "", "", "", fmt.Errorf("sign-in start: %w: the state binds no browser", ErrMalformed)
	}
	asm, err := m.fleetServer(ctx)
	if err != nil {
		return "", "", "", err
	}
	l := LoginState{State: state, Verifier: NewVerifier(), Nonce: newID(), Expires: p.Expires}
	ls, err := m.o.Key.SealLogin(l)
	if err != nil {
		return "", "", "", err
	}
	if cookie, err = m.o.Key.SealBinding(Binding{Bind: p.Bind, Nonce: l.Nonce, Expires: p.Expires}); err != nil {
		return "", "", "", err
	}
	loginURL, err = AuthorizationURL(asm.AuthorizationEndpoint, lo.ClientID, lo.RedirectURL, ls, l.Verifier, lo.Resource, lo.Scopes)
	return loginURL, p.Bind, cookie, err
}

// Login completes the fleet login of the browser whose cookies hold its
// binding to the sign-in: the code is redeemed, the token's identity must be the one
// the sign-in was begun for. It returns the backend's authorization URL
// and the cookie binding the browser to that identity and sign-in.
// ErrNoBinding when the browser did not begin this login, ErrOtherUser
// when its user is another.
func (m *Manager) Login(ctx context.Context, loginState, code string, cookies Cookies) (authURL, bound string, p Pending, err error) {
	lo, now := m.o.Login, m.o.Now()
	if lo == nil {
		return "", "", Pending{}, ErrNoLogin
	}
	l, err := m.o.Key.OpenLogin(loginState, now)
	if err != nil {
		return "", "", Pending{}, fmt.Errorf("fleet login: %w", err)
	}
	if p, err = m.o.Key.OpenState(l.State, now); err != nil {
		return "", "", Pending{}, fmt.Errorf("fleet login: %w", err)
	}
	b, err := m.o.Key.OpenBinding(cookies(p.Bind), now)
	if err != nil || b.Nonce != l.Nonce || b.Bind != p.Bind {
		return "", "", Pending{}, fmt.Errorf("fleet login: %w", ErrNoBinding)
	}
	if code == "" || len(code) > tokenexchange.MaxToken {
		return "", "", Pending{}, fmt.Errorf("fleet login: %w: no usable code", ErrMalformed)
	}
	asm, err := m.fleetServer(ctx)
	if err != nil {
		return "", "", Pending{}, err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {lo.RedirectURL},
		"code_verifier": {l.Verifier}}
	if lo.Resource != "" {
		form.Set("resource", lo.Resource)
	}
	t, err := post(ctx, &m.hc, m.o.Timeout, asm.TokenEndpoint, Client{ID: lo.ClientID, Secret: lo.ClientSecret}, form)
	if err != nil {
		return "", "", Pending{}, fmt.Errorf("fleet login: authorization code grant: %w", err)
	}
	identity, err := lo.Identify(ctx, t.Access.Value.Reveal())
	if err != nil {
		return "", "", Pending{}, fmt.Errorf("fleet login: the issued token: %w", err)
	}
	if identity != p.Identity {
		return "", "", Pending{}, fmt.Errorf("fleet login: %w", ErrOtherUser)
	}
	if bound, err = m.o.Key.SealBinding(Binding{Identity: identity, Bind: p.Bind, Expires: p.Expires}); err != nil {
		return "", "", Pending{}, err
	}
	authURL, err = AuthorizationURL(p.AuthEndpoint, p.ClientID, p.Redirect, l.State, p.Verifier, p.Resource, p.Scopes)
	return authURL, bound, p, err
}

// fleetServer is the fleet issuer's metadata (RFC 8414, else OpenID
// configuration), cached as a backend's is.
func (m *Manager) fleetServer(ctx context.Context) (ServerMetadata, error) {
	issuer, now := m.o.Login.Issuer, m.o.Now()
	key := "fleet\x00" + issuer
	m.mu.Lock()
	d, ok := m.backends[key]
	m.mu.Unlock()
	if ok && now.Sub(d.at) < discoveryTTL {
		return d.server, nil
	}
	v, err, _ := m.flight.Do("discover\x00"+key, func() (any, error) {
		asm, err := discoverIssuer(context.WithoutCancel(ctx), &m.hc, m.o.Timeout, issuer)
		if err != nil {
			return ServerMetadata{}, err
		}
		m.mu.Lock()
		if len(m.backends) >= maxDiscovered {
			clear(m.backends)
		}
		m.backends[key] = discovered{server: asm, at: now}
		m.mu.Unlock()
		return asm, nil
	})
	if err != nil {
		return ServerMetadata{}, fmt.Errorf("discover the fleet issuer: %w", err)
	}
	return v.(ServerMetadata), nil
}

// discoverIssuer reads issuer's RFC 8414 metadata, else its OpenID
// configuration.
func discoverIssuer(ctx context.Context, hc *http.Client, timeout time.Duration, issuer string) (ServerMetadata, error) {
	iu, err := absURL(issuer, "issuer")
	if err != nil {
		return ServerMetadata{}, err
	}
	var last error
	for _, u := range []string{wellKnown(iu, "oauth-authorization-server"), strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"} {
		status, _, body, err := fetch(ctx, hc, timeout, u, true)
		switch {
		case err != nil:
			last = err
		case status != http.StatusOK:
			last = fmt.Errorf("%w: HTTP %d", ErrBadMetadata, status)
		default:
			return ParseServerMetadata(body, issuer)
		}
	}
	return ServerMetadata{}, fmt.Errorf("authorization server metadata: %w", last)
}
