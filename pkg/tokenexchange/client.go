package tokenexchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// DefaultTimeout bounds one request to a token endpoint.
const DefaultTimeout = 5 * time.Second

// Config is what a backend's `auth: {type: token_exchange}` section
// gives: the token endpoint, the client the edge (and the controller)
// authenticates as, and the audience and scopes of the tokens asked for.
type Config struct {
	TokenURL string
	ClientID string
	// ClientSecret is a reference ({env: ...} or {file: ...}); zero: a
	// public client (client_id in the form, no authentication).
	ClientSecret credential.Ref
	Audience     string
	Scopes       []string
}

// Equal reports whether c and o are the same configuration.
func (c Config) Equal(o Config) bool {
	return c.TokenURL == o.TokenURL && c.ClientID == o.ClientID && c.ClientSecret == o.ClientSecret &&
		c.Audience == o.Audience && strings.Join(c.Scopes, " ") == strings.Join(o.Scopes, " ")
}

// fingerprint tells configurations apart in cache keys.
func (c Config) fingerprint() string {
	return strings.Join([]string{c.TokenURL, c.ClientID, c.ClientSecret.String(), c.Audience, strings.Join(c.Scopes, " ")}, "\x00")
}

// Options configure a Client; nil or zero fields take the defaults.
type Options struct {
	// HTTPClient makes the requests; default a client of its own. Its
	// redirect policy is replaced: a redirect is never followed (the
	// form carries a token and the client's secret).
	HTTPClient *http.Client
	// Timeout bounds one request; default DefaultTimeout.
	Timeout time.Duration
}

// Client makes token requests. It is safe for concurrent use.
type Client struct {
	hc      http.Client
	timeout time.Duration
}

// NewClient returns a Client with options o (nil: the defaults).
func NewClient(o *Options) *Client {
	c := &Client{timeout: DefaultTimeout}
	if o != nil && o.HTTPClient != nil {
		c.hc = *o.HTTPClient
	}
	if o != nil && o.Timeout > 0 {
		c.timeout = o.Timeout
	}
	c.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// Exchange asks cfg's token endpoint for a token for cfg's audience and
// scopes in exchange for subject, the caller's access token (RFC 8693,
// subject_token_type access_token). Errors name the operation, never the
// token or the secret: a *RefusedError for an OAuth error answer,
// ErrBadResponse for any other unusable answer, a transport error or a
// credential.ResolveError (the client secret's reference) otherwise.
func (c *Client) Exchange(ctx context.Context, cfg Config, subject credential.Secret) (Token, error) {
	form := url.Values{
		"grant_type":           {grantExchange},
		"subject_token":        {subject.Reveal()},
		"subject_token_type":   {TypeAccessToken},
		"requested_token_type": {TypeAccessToken},
	}
	t, err := c.request(ctx, cfg, form)
	if err != nil {
		return Token{}, fmt.Errorf("token exchange: %w", err)
	}
	return t, nil
}

// ClientCredentials asks cfg's token endpoint for a token of the client
// itself (RFC 6749 section 4.4) for cfg's audience and scopes: what the
// controller probes a token-exchange backend with. Errors as Exchange's.
func (c *Client) ClientCredentials(ctx context.Context, cfg Config) (Token, error) {
	t, err := c.request(ctx, cfg, url.Values{"grant_type": {grantClient}})
	if err != nil {
		return Token{}, fmt.Errorf("client credentials grant: %w", err)
	}
	return t, nil
}

// errNoEndpoint: the configuration has no usable token URL.
var errNoEndpoint = errors.New("token_url is not an http(s) URL")

func (c *Client) request(ctx context.Context, cfg Config, form url.Values) (Token, error) {
	u, err := url.Parse(cfg.TokenURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return Token{}, errNoEndpoint
	}
	if cfg.Audience != "" {
		form.Set("audience", cfg.Audience)
	}
	if len(cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(cfg.Scopes, " "))
	}
	var secret credential.Secret
	if cfg.ClientSecret != (credential.Ref{}) {
		if secret, err = credential.Resolve(cfg.ClientSecret); err != nil {
			return Token{}, fmt.Errorf("client_secret: %w", err)
		}
	} else if cfg.ClientID != "" {
		form.Set("client_id", cfg.ClientID)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, fmt.Errorf("request: %w", errNoEndpoint)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret.Reveal() != "" {
		// RFC 6749 section 2.3.1: both form-encoded, then Basic.
		req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(secret.Reveal()))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// The error of net/http quotes the URL (no user info: refused
		// above) and never the body.
		return Token{}, fmt.Errorf("post: %w", scrub(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return Token{}, fmt.Errorf("read answer: %w", scrub(err))
	}
	return ParseResponse(resp.StatusCode, body)
}

// scrub keeps the cause of a transport error and drops the request it
// names (a *url.Error quotes method and URL).
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
