package signin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// Begin starts identity's sign-in to backend (at backendURL, configured
// a), asked by the URL-mode elicitation of id elicitation ("" for none):
// it returns the authorization URL the user opens.
func (m *Manager) Begin(ctx context.Context, identity, backend, backendURL string, a *credential.Auth, elicitation string) (string, error) {
	if identity == "" {
		return "", fmt.Errorf("sign in to backend %q: %w", backend, ErrNoIdentity)
	}
	if m.o.Login == nil && !m.o.Unbound {
		return "", fmt.Errorf("sign in to backend %q: %w", backend, ErrNoLogin)
	}
	d, err := m.discover(ctx, backendURL)
	if err != nil {
		return "", err
	}
	c, err := m.client(ctx, d, a)
	if err != nil {
		return "", err
	}
	p := Pending{Identity: identity, Backend: backend, Verifier: NewVerifier(), ClientID: c.ID,
		TokenEndpoint: d.server.TokenEndpoint, Resource: d.resource.Resource, Redirect: m.o.RedirectURL,
		Elicitation: elicitation, Expires: m.o.Now().Add(StateLifetime).Unix()}
	if m.o.Login != nil {
		p.Bind, p.AuthEndpoint, p.Scopes = newID(), d.server.AuthorizationEndpoint, a.Scopes
	}
	state, err := m.o.Key.SealState(p)
	if err != nil {
		return "", err
	}
	if m.o.Login != nil { // the user's browser is bound first (binding.go)
		return m.o.Login.startURL(state), nil
	}
	return AuthorizationURL(d.server.AuthorizationEndpoint, c.ID, p.Redirect, state, p.Verifier, p.Resource, a.Scopes)
}

// ErrNoIdentity: a sign-in needs a verified caller (--auth-issuer).
var ErrNoIdentity = errors.New("sign-in needs a verified caller (the edge needs --auth-issuer)")

// Complete finishes the sign-in of a callback (its state and code) to a
// browser whose cookies hold its binding (unused by unbound sign-ins): the
// code is redeemed with the state's verifier, the refresh token sealed
// into the bucket and the access token held. secretOf gives the client
// secret reference configured for the state's backend and client (zero:
// a public client). A browser not bound to the state's identity and
// sign-in is refused (ErrNoBinding, ErrOtherUser) before the code is
// redeemed.
func (m *Manager) Complete(ctx context.Context, state, code string, cookies Cookies, secretOf func(backend, clientID string) credential.Ref) (Pending, error) {
	now := m.o.Now()
	p, err := m.o.Key.OpenState(state, now)
	if err != nil {
		return Pending{}, err
	}
	if p.Bind == "" && !m.o.Unbound {
		// A state another edge made unbound (--signin-unbound, or an
		// older edge): this edge takes none.
		return Pending{}, fmt.Errorf("callback: %w", ErrNoBinding)
	}
	if m.o.Login != nil || p.Bind != "" {
		b, err := m.o.Key.OpenBinding(cookies(p.Bind), now)
		if err != nil {
			return Pending{}, fmt.Errorf("callback: %w", ErrNoBinding)
		}
		if err := CheckBinding(b, p); err != nil {
			return Pending{}, fmt.Errorf("callback: %w", err)
		}
	}
	if code == "" || len(code) > tokenexchange.MaxToken {
		return Pending{}, fmt.Errorf("callback: %w: no usable code", ErrMalformed)
	}
	start := m.o.Now()
	c := Client{ID: p.ClientID, Secret: secretOf(p.Backend, p.ClientID)}
	t, err := exchangeCode(ctx, &m.hc, m.o.Timeout, p, c, code, p.Redirect)
	if err != nil {
		return Pending{}, err
	}
	if t.Refresh.Reveal() == "" {
		// Without a refresh token the sign-in lasts as long as the access
		// token, on this edge only: refused, as the sign-in must survive
		// a move.
		return Pending{}, fmt.Errorf("authorization code grant: %w: no refresh_token issued", tokenexchange.ErrBadResponse)
	}
	r := Record{Identity: p.Identity, Backend: p.Backend, Refresh: t.Refresh.Reveal(), ClientID: p.ClientID,
		TokenEndpoint: p.TokenEndpoint, Resource: p.Resource}
	if err := m.store(ctx, r, t.Access, start, 0); err != nil {
		return Pending{}, err
	}
	m.o.OnChange(p.Identity, p.Backend)
	return p, nil
}

// store seals r into the bucket (over revision rev when not 0) and holds
// access.
func (m *Manager) store(ctx context.Context, r Record, access tokenexchange.Token, start time.Time, rev uint64) error {
	sealed, err := m.o.Key.SealRecord(r)
	if err != nil {
		return err
	}
	kv, err := m.bucket()
	if err != nil {
		return err
	}
	key := KeyOf(r.Identity, r.Backend)
	if rev == 0 {
		rev, err = kv.Put(ctx, key, sealed)
	} else {
		rev, err = kv.Update(ctx, key, sealed, rev)
	}
	if err != nil {
		return fmt.Errorf("store the sign-in: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[key]
	if e == nil {
		if len(m.entries) >= m.o.MaxEntries {
			return nil // held in the bucket; this edge refreshes it on use
		}
		e = &entry{identity: r.Identity, backend: r.Backend}
		m.entries[key] = e
	}
	if rev > e.rev {
		e.sealed, e.rev = sealed, rev
		m.setUnsaved(key, e, false)
	}
	m.signal()
	e.access, e.until = access, tokenexchange.UseUntil(access, start, time.Time{})
	return nil
}

// Authorization is the Authorization value of identity's calls to
// backend: its access token, refreshed with the stored refresh token when
// expired or forgotten. ErrNotSignedIn when it has no sign-in; a refresh
// the server refuses (invalid_grant) ends the sign-in.
func (m *Manager) Authorization(ctx context.Context, identity, backend string, a *credential.Auth) (string, error) {
	key := KeyOf(identity, backend)
	now := m.o.Now()
	m.mu.Lock()
	e := m.entries[key]
	if e != nil && e.access.Value.Reveal() != "" && now.Before(e.until) {
		v := "Bearer " + e.access.Value.Reveal()
		m.mu.Unlock()
		return v, nil
	}
	m.mu.Unlock()
	for range maxJoinedWrites + 1 {
		v, err, _ := m.flight.Do(refreshFlight+key, func() (any, error) {
			return m.refresh(context.WithoutCancel(ctx), key, identity, backend, a)
		})
		if err != nil {
			return "", err
		}
		if s, ok := v.(string); ok {
			return s, nil
		}
		// The flight joined was Run's write of a held token
		// (heldwriter.go), no refresh: one of this call's own next.
	}
	return "", fmt.Errorf("refresh the sign-in: %w", errBusy)
}

// refreshFlight prefixes a key's flight: its refreshes and the writes of
// its held token, one at a time on this edge.
const refreshFlight = "refresh\x00"

// maxJoinedWrites bounds the writes of a held token an Authorization
// joins before its refresh (Run writes a key at most once a round).
const maxJoinedWrites = 2

// errBusy: every flight an Authorization joined was a write.
var errBusy = errors.New("sign-in busy: the held token's writes kept running")

// refresh obtains a new access token of key's sign-in.
func (m *Manager) refresh(ctx context.Context, key, identity, backend string, a *credential.Auth) (string, error) {
	now := m.o.Now()
	m.mu.Lock()
	e := m.entries[key]
	if e != nil && e.access.Value.Reveal() != "" && now.Before(e.until) {
		v := "Bearer " + e.access.Value.Reveal()
		m.mu.Unlock()
		return v, nil // another flight just ended
	}
	var sealed []byte
	var rev uint64
	if e != nil {
		sealed, rev = e.sealed, e.rev
	}
	m.mu.Unlock()
	if sealed == nil { // not held (over MaxEntries, or the watch is behind): the bucket
		kv, err := m.bucket()
		if err != nil {
			return "", err
		}
		kve, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return "", ErrNotSignedIn
		}
		if err != nil {
			return "", fmt.Errorf("read the sign-in: %w", err)
		}
		sealed, rev = kve.Value(), kve.Revision()
	}
	r, err := m.o.Key.OpenRecord(key, sealed)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotSignedIn, err)
	}
	secret := credential.Ref{}
	if a != nil && a.ClientID == r.ClientID {
		secret = a.ClientSecret
	}
	start := m.o.Now()
	t, err := refresh(ctx, &m.hc, m.o.Timeout, r.TokenEndpoint, r.Resource, Client{ID: r.ClientID, Secret: secret}, r.refreshToken())
	m.mu.Lock()
	m.refreshes++
	m.mu.Unlock()
	var re *tokenexchange.RefusedError
	if errors.As(err, &re) && re.Code == "invalid_grant" {
		_ = m.SignOut(ctx, identity, backend) // expired or revoked at the server: sign in again
		return "", fmt.Errorf("%w: the authorization server refused the refresh token", ErrNotSignedIn)
	}
	if err != nil {
		return "", err
	}
	r.Refresh = t.Refresh.Reveal()
	if err := m.store(ctx, r, t.Access, start, rev); err != nil {
		m.storeFailed(key, r, rev, t.Access, start, err) // refreshstore.go
	}
	return "Bearer " + t.Access.Value.Reveal(), nil
}

// Forget drops identity's access token for backend (the backend answered
// it with 401): the next call refreshes.
func (m *Manager) Forget(identity, backend string) {
	m.mu.Lock()
	if e := m.entries[KeyOf(identity, backend)]; e != nil {
		e.access, e.until = tokenexchange.Token{}, time.Time{}
	}
	m.mu.Unlock()
}

// SignOut ends identity's sign-in to backend on every edge: the record is
// deleted from the bucket (the watches drop it everywhere).
func (m *Manager) SignOut(ctx context.Context, identity, backend string) error {
	key := KeyOf(identity, backend)
	m.mu.Lock()
	e := m.entries[key]
	m.dropEntry(key)
	m.mu.Unlock()
	kv, err := m.bucket()
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	if err := kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("sign out: %w", err)
	}
	if e != nil {
		m.o.OnChange(identity, backend)
	}
	return nil
}
