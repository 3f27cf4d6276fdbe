package prober

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// A backend with per-caller credentials (auth: token_exchange) takes no
// call without a token; the controller, which calls for no user, probes
// it with a token of its own: the client credentials grant (RFC 6749
// section 4.4) at the backend's token endpoint, as the backend's client,
// for its audience and scopes. The token is kept until shortly before it
// expires (tokenexchange.UseUntil) and set on every request of the
// probe's session. A grant the endpoint refuses, and a backend answering
// the token with 401 or 403, are authentication failures
// (unauthenticated, not unhealthy); an endpoint that cannot be reached is
// a failure.

// probeToken is the prober's client credentials token.
type probeToken struct {
	client *tokenexchange.Client
	tok    tokenexchange.Token
	until  time.Time
	cfg    tokenexchange.Config
}

// withProbeToken returns next setting the probe token on every request
// when the target has Auth, next itself otherwise. Called from the
// prober's goroutine (connect).
func (p *Prober) withProbeToken(ctx context.Context, next http.RoundTripper) (http.RoundTripper, error) {
	a := p.target.Auth
	if !a.Exchanges() { // user_oauth: probed as configured (its headers), a 401 is unauthenticated
		return next, nil
	}
	cfg := tokenexchange.Config{TokenURL: a.TokenURL, ClientID: a.ClientID, ClientSecret: a.ClientSecret,
		Audience: a.Audience, Scopes: a.Scopes}
	pt := &p.probeTok
	now := p.now()
	if pt.client == nil {
		pt.client = tokenexchange.NewClient(&tokenexchange.Options{HTTPClient: &http.Client{Transport: p.base}, Timeout: p.policy.Timeout})
	}
	if !pt.cfg.Equal(cfg) || !now.Before(pt.until) {
		tok, err := pt.client.ClientCredentials(ctx, cfg)
		if err != nil {
			return nil, probeTokenError(err)
		}
		pt.tok, pt.cfg, pt.until = tok, cfg, tokenexchange.UseUntil(tok, now, time.Time{})
	}
	return probeBearer{next: next, v: "Bearer " + pt.tok.Value.Reveal()}, nil
}

// forgetProbeToken drops the token (the backend refused it): the next
// connect asks for another.
func (p *Prober) forgetProbeToken() { p.probeTok.until = time.Time{} }

// probeTokenError classifies a failed grant: refused by the endpoint (the
// gateway's credentials rejected) or not obtained.
func probeTokenError(err error) *connectError {
	var re *tokenexchange.RefusedError
	var ce *credential.ResolveError
	switch {
	case errors.As(err, &re):
		return &connectError{result: resultAuthFailure, err: err,
			reason: fmt.Sprintf("token endpoint refused the probe's client credentials grant: error %q", re.Code)}
	case errors.As(err, &ce):
		return &connectError{result: resultFailure, err: err, reason: "probe token: client_secret " + ce.Detail()}
	}
	return &connectError{result: resultFailure, err: err, reason: "probe token: " + err.Error()}
}

// probeBearer sets Authorization on every request.
type probeBearer struct {
	next http.RoundTripper
	v    string
}

func (b probeBearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", b.v)
	return b.next.RoundTrip(req)
}

// CloseIdleConnections passes on to the transport wrapped.
func (b probeBearer) CloseIdleConnections() {
	if c, ok := b.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
