package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/backendnet"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/signin"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// A backend with per-caller credentials (auth: token_exchange) gets a
// session per caller and backend, not the shared pooled one: its requests
// carry Authorization: Bearer <the token exchanged for that caller>
// (package tokenexchange), never the caller's own token, and a backend
// that binds its sessions to a user sees one user per session. The
// sessions are bounded in count (the least recently used is closed) and
// closed after an idle time; Prune closes those of a backend removed or
// reconfigured, CloseAll every one. Backends with static or no
// credentials keep the shared session (pool.go).

// Defaults of CallerOptions.
const (
	DefaultMaxCallerSessions = 1024
	DefaultCallerIdle        = 5 * time.Minute
)

// CallerOptions configure the per-caller sessions (SetCallerOptions);
// zero fields take the defaults.
type CallerOptions struct {
	// MaxSessions bounds the per-caller sessions of the pool, all
	// backends together (DefaultMaxCallerSessions).
	MaxSessions int
	// Idle closes a session unused this long (DefaultCallerIdle).
	Idle time.Duration
	// Exchange configures the token source; nil: its defaults, over a
	// transport whose dials refuse link-local and metadata addresses.
	Exchange *tokenexchange.SourceOptions
	// SignIns gives the tokens of user_oauth backends (a
	// *signin.Manager); nil: calls to them fail (not signed in).
	SignIns SignIns
}

// SignIns gives each signed-in user's access token to a user_oauth
// backend (package signin): Authorization refreshes it when needed,
// Forget drops it (the backend answered 401).
type SignIns interface {
	Authorization(ctx context.Context, identity, backend string, a *credential.Auth) (string, error)
	Forget(identity, backend string)
}

// WithCaller returns ctx carrying id, the verified identity of the caller
// a request to a backend is made for (nil: none). Do and CallTool read it
// before they detach the call's context.
func WithCaller(ctx context.Context, id *auth.Identity) context.Context {
	if id == nil {
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, id)
}

type callerKey struct{}

// IdentityKey is the key of a verified token's identity in the go-sdk's
// TokenInfo.Extra (the edge's calls.ClaimsKey).
const IdentityKey = "fleetgate.identity"

// callerOf is ctx's caller: WithCaller's, else the identity of the
// go-sdk TokenInfo of the request ctx is of; nil for none.
func callerOf(ctx context.Context) *auth.Identity {
	if id, ok := ctx.Value(callerKey{}).(*auth.Identity); ok {
		return id
	}
	if ti := goauth.TokenInfoFromContext(ctx); ti != nil {
		id, _ := ti.Extra[IdentityKey].(*auth.Identity)
		return id
	}
	return nil
}

// perCaller reports whether cfg's calls carry each caller's credentials.
func perCaller(cfg events.BackendConfig) bool { return cfg.Auth.PerCaller() }

// exchangeConfig is the token source's view of cfg's auth section.
func exchangeConfig(a *credential.Auth) tokenexchange.Config {
	return tokenexchange.Config{TokenURL: a.TokenURL, ClientID: a.ClientID, ClientSecret: a.ClientSecret,
		Audience: a.Audience, Scopes: a.Scopes}
}

// callerSet is the pool's per-caller sessions. Its zero value is ready
// (the defaults, made on first use).
type callerSet struct {
	mu    sync.Mutex
	o     CallerOptions
	src   *tokenexchange.Source
	conns map[callerConnKey]*backendConn
	timer *time.Timer // the next idle sweep; nil when none is due
	// parked are the resource subscriptions of per-caller sessions
	// closed while they held some (subscribe.go): the caller's next
	// session subscribes to them again. At most MaxSessions entries.
	parked map[callerConnKey]map[string]bool
}

// park keeps the subscriptions of the closed per-caller sessions gone for
// their callers' next sessions (mu held).
func (s *callerSet) park(gone []*backendConn) {
	max, _ := s.limits()
	for _, c := range gone {
		subs := c.takeSubs()
		if len(subs) == 0 || c.user == nil {
			continue
		}
		k := callerConnKey{c.user.backend, c.user.identity}
		if s.parked == nil {
			s.parked = map[callerConnKey]map[string]bool{}
		}
		if _, ok := s.parked[k]; !ok && len(s.parked) >= max {
			for old := range s.parked { // full: one is given up
				delete(s.parked, old)
				break
			}
		}
		s.parked[k] = subs
	}
}

type callerConnKey struct{ backend, identity string }

// userAuth is the caller of a per-caller session.
type userAuth struct {
	backend, identity string
	cfg               tokenexchange.Config
	src               *tokenexchange.Source
	signIns           SignIns                               // of a user_oauth backend (src nil)
	auth              *credential.Auth                      // the backend's auth section
	subject           atomic.Pointer[tokenexchange.Subject] // the caller's latest verified token
	used              atomic.Int64                          // unix nanoseconds of the last call
}

// authorization is the value of the session's Authorization header: the
// token exchanged for the caller (cached until shortly before it
// expires).
func (u *userAuth) authorization(ctx context.Context) (string, error) {
	if u.auth.SignIn() {
		if u.signIns == nil {
			return "", fmt.Errorf("%w: %w", errSignIn, errNoSignIns)
		}
		v, err := u.signIns.Authorization(ctx, u.identity, u.backend, u.auth)
		if err != nil {
			return "", fmt.Errorf("%w: %w", errSignIn, err)
		}
		return v, nil
	}
	s := u.subject.Load()
	if s == nil {
		return "", tokenexchange.ErrNoSubject
	}
	t, err := u.src.Token(ctx, *s, u.backend, u.cfg)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errExchange, err)
	}
	return "Bearer " + t.Value.Reveal(), nil
}

// errExchange wraps every failure to obtain a caller's token.
var errExchange = errors.New("token exchange")

// errSignIn wraps every failure to obtain a signed-in user's token.
var errSignIn = errors.New("sign-in token")

// errNoSignIns: the edge keeps no sign-ins.
var errNoSignIns = errors.New("this edge keeps no sign-ins")

// errNoCaller: a call to a user_oauth backend without a verified caller.
var errNoCaller = errors.New("no verified caller")

// forget drops the caller's token: the backend refused it (401).
func (u *userAuth) forget() {
	if u.signIns != nil {
		u.signIns.Forget(u.identity, u.backend)
		return
	}
	u.src.Forget(u.identity, u.backend, u.cfg)
}

// userTransport sets the caller's exchanged token on each request of the
// go-sdk session (initialize, the standalone stream, every other call).
type userTransport struct {
	next http.RoundTripper
	u    *userAuth
}

func (t userTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	v, err := t.u.authorization(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", v)
	return t.next.RoundTrip(req)
}

// SetCallerOptions sets the per-caller sessions' options (before the
// first call).
func (p *Pool) SetCallerOptions(o CallerOptions) {
	p.callers.mu.Lock()
	if o.SignIns == nil { // kept from SetSignIns
		o.SignIns = p.callers.o.SignIns
	}
	p.callers.o, p.callers.src = o, nil
	p.callers.mu.Unlock()
}

// SetSignIns gives the pool the tokens of user_oauth backends (before
// the first call).
func (p *Pool) SetSignIns(s SignIns) {
	p.callers.mu.Lock()
	p.callers.o.SignIns = s
	p.callers.mu.Unlock()
}

// TokenStats are the token exchanges made, the calls answered from the
// token cache, the tokens cached, and the per-caller sessions open.
func (p *Pool) TokenStats() (exchanges, hits, cached, sessions int) {
	p.callers.mu.Lock()
	src, n := p.callers.src, len(p.callers.conns)
	p.callers.mu.Unlock()
	if src != nil {
		exchanges, hits, cached = src.Stats()
	}
	return exchanges, hits, cached, n
}

// source is the token source, made on first use. Called with mu held.
func (s *callerSet) source() *tokenexchange.Source {
	if s.src == nil {
		o := tokenexchange.SourceOptions{}
		if s.o.Exchange != nil {
			o = *s.o.Exchange
		}
		if o.Client == nil || o.Client.HTTPClient == nil {
			ht := http.DefaultTransport.(*http.Transport).Clone()
			backendnet.Guard(ht)
			co := tokenexchange.Options{HTTPClient: &http.Client{Transport: ht}}
			if o.Client != nil {
				co.Timeout = o.Client.Timeout
			}
			o.Client = &co
		}
		s.src = tokenexchange.NewSource(&o)
	}
	return s.src
}

func (s *callerSet) limits() (int, time.Duration) {
	max, idle := s.o.MaxSessions, s.o.Idle
	if max <= 0 {
		max = DefaultMaxCallerSessions
	}
	if idle <= 0 {
		idle = DefaultCallerIdle
	}
	return max, idle
}

// connOf is the connection a call of backend (configured cfg) made under
// ctx goes through: the shared one, or for a per-caller backend the
// session of ctx's caller (made on first use, its caller's token noted
// for the next exchange).
func (p *Pool) connOf(ctx context.Context, backend string, cfg events.BackendConfig) (*backendConn, error) {
	if !perCaller(cfg) {
		return p.conn(backend, cfg), nil
	}
	id := callerOf(ctx)
	if id == nil || (id.AccessToken() == "" && !cfg.Auth.SignIn()) {
		if cfg.Auth.SignIn() {
			return nil, fmt.Errorf("%w: %w", errSignIn, errNoCaller)
		}
		return nil, fmt.Errorf("%w: %w", errExchange, tokenexchange.ErrNoSubject)
	}
	sub := &tokenexchange.Subject{Identity: CallerKey(id), Token: credential.NewSecret(id.AccessToken()), Expiry: id.Expiry}
	k := callerConnKey{backend: backend, identity: sub.Identity}
	s := &p.callers
	s.mu.Lock()
	if p.ctx.Err() != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("connect backend %q: %w", backend, errConnClosed)
	}
	if s.conns == nil {
		s.conns = map[callerConnKey]*backendConn{}
	}
	c := s.conns[k]
	var gone []*backendConn
	if c != nil && !c.serves(cfg) {
		gone, c = append(gone, c), nil
	}
	if c == nil {
		max, idle := s.limits()
		for len(s.conns) >= max {
			lru := s.leastUsed()
			delete(s.conns, callerConnKey{lru.user.backend, lru.user.identity})
			gone = append(gone, lru)
		}
		u := &userAuth{backend: backend, identity: sub.Identity, cfg: exchangeConfig(cfg.Auth), auth: cfg.Auth}
		if cfg.Auth.SignIn() {
			u.signIns = s.o.SignIns
		} else {
			u.src = s.source()
		}
		c = &backendConn{name: backend, url: cfg.URL, sse: isSSE(cfg), cfg: cfg, user: u}
		c.sdk, c.creds = p.backendClient(backend, cfg)
		c.sdk.Transport = userTransport{next: c.sdk.Transport, u: u}
		c.ctx, c.cancel = context.WithCancel(p.ctx)
		s.park(gone) // a reconfigured session's own among them
		if subs := s.parked[k]; subs != nil {
			c.giveSubs(subs) // its first session subscribes to them
			delete(s.parked, k)
		}
		s.conns[k] = c
		if s.timer == nil {
			s.timer = time.AfterFunc(idle, func() { p.sweepCallers() })
		}
	}
	c.user.subject.Store(sub)
	c.user.used.Store(time.Now().UnixNano())
	s.mu.Unlock()
	for _, g := range gone {
		p.closeLater(g)
	}
	return c, nil
}

// leastUsed is the per-caller session used longest ago (mu held, some),
// one without resource subscriptions when there is one.
func (s *callerSet) leastUsed() *backendConn {
	var lru *backendConn
	lruSubscribed := false
	for _, c := range s.conns {
		sub := c.subscribed()
		if lru == nil || lruSubscribed && !sub || sub == lruSubscribed && c.user.used.Load() < lru.user.used.Load() {
			lru, lruSubscribed = c, sub
		}
	}
	return lru
}

// sweepCallers closes the per-caller sessions idle for their idle time
// and arms the next sweep for the soonest to become idle.
func (p *Pool) sweepCallers() {
	s := &p.callers
	_, idle := s.limits()
	now := time.Now().UnixNano()
	var gone []*backendConn
	s.mu.Lock()
	s.timer = nil
	next := int64(-1)
	for k, c := range s.conns {
		at := c.user.used.Load() + int64(idle)
		if c.subscribed() { // its user's resource updates come on it (subscribe.go)
			at = max(at, now+int64(idle))
		}
		if at <= now {
			delete(s.conns, k)
			gone = append(gone, c)
		} else if next < 0 || at < next {
			next = at
		}
	}
	if next >= 0 && p.ctx.Err() == nil {
		s.timer = time.AfterFunc(time.Duration(next-now), func() { p.sweepCallers() })
	}
	s.mu.Unlock()
	for _, c := range gone {
		p.closeLater(c)
	}
}

// pruneCallers closes the per-caller sessions of backends not in cfgs or
// configured otherwise there.
func (p *Pool) pruneCallers(cfgs map[string]events.BackendConfig) {
	var gone []*backendConn
	p.callers.mu.Lock()
	for k, c := range p.callers.conns {
		if cfg, ok := cfgs[k.backend]; !ok || !c.serves(cfg) {
			delete(p.callers.conns, k)
			gone = append(gone, c)
		}
	}
	p.callers.park(gone) // a backend reconfigured: its callers' next sessions subscribe again
	for k := range p.callers.parked {
		if cfg, ok := cfgs[k.backend]; !ok || !perCaller(cfg) {
			delete(p.callers.parked, k)
		}
	}
	p.callers.mu.Unlock()
	for _, c := range gone {
		p.closeLater(c)
	}
}

// closeCallers closes every per-caller session and stops the sweeps
// (CloseAll, after the pool's context ended).
func (p *Pool) closeCallers() {
	p.callers.mu.Lock()
	conns := p.callers.conns
	p.callers.conns = nil
	if p.callers.timer != nil {
		p.callers.timer.Stop()
		p.callers.timer = nil
	}
	p.callers.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// exchangeKind is the Error kind of a failure to obtain a caller's token,
// "" for another failure. It names the endpoint's error code for a
// refusal, never a token.
func exchangeKind(err error) string {
	if errors.Is(err, errSignIn) {
		return signInKind(err)
	}
	if !errors.Is(err, errExchange) {
		return ""
	}
	var re *tokenexchange.RefusedError
	var ce *credential.ResolveError
	switch {
	case errors.As(err, &re):
		return fmt.Sprintf("token exchange refused by the token endpoint (error %q)", re.Code)
	case errors.Is(err, tokenexchange.ErrNoSubject):
		return "token exchange impossible: the call carries no verified access token (the edge needs --auth-issuer)"
	case errors.As(err, &ce):
		return "token exchange: client_secret unresolved (" + ce.Detail() + ")"
	case errors.Is(err, context.DeadlineExceeded):
		return "token exchange: token endpoint timed out"
	case errors.Is(err, tokenexchange.ErrBadResponse):
		return "token exchange: token endpoint answer unusable"
	}
	return "token exchange: token endpoint unreachable"
}

// signInKind is the Error kind of a failure to obtain a signed-in user's
// token: never a token, nor the server's answer beyond its error code.
func signInKind(err error) string {
	var re *tokenexchange.RefusedError
	switch {
	case errors.Is(err, signin.ErrNotSignedIn):
		return "not signed in to the backend (call its sign_in tool)"
	case errors.Is(err, errNoSignIns):
		return "this edge keeps no sign-ins (-no-signins): the backend needs each user's sign-in"
	case errors.Is(err, errNoCaller):
		return "sign-in impossible: the call carries no verified access token (the edge needs --auth-issuer)"
	case errors.As(err, &re):
		return fmt.Sprintf("sign-in token refused by the authorization server (error %q)", re.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return "sign-in token: authorization server timed out"
	case errors.Is(err, tokenexchange.ErrBadResponse):
		return "sign-in token: authorization server answer unusable"
	}
	return "sign-in token: authorization server unreachable"
}
