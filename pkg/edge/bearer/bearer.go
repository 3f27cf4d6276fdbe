package bearer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/clientaddr"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// Options make the edge an OAuth 2.1 resource server: every request to
// /mcp needs a JWT access token of Issuer for Audience with Scopes. The
// caller's identity is the token's iss and sub.
type Options struct {
	// Issuer is the authorization server whose tokens are accepted.
	Issuer string
	// JWKSURL is where its keys are; empty: from the issuer's metadata.
	JWKSURL string
	// Audience every token must carry; default ResourceURL.
	Audience string
	// Scopes every token must carry.
	Scopes []string
	// ResourceURL is this endpoint's public URL; default http://<listen>/mcp.
	ResourceURL string
	// HTTPClient fetches the issuer's metadata and keys (nil: a default
	// one that follows no redirects).
	HTTPClient *http.Client
	// MinRefetchInterval is the least time between two fetches of the
	// issuer's keys (a token of an unknown kid refetches them at most
	// this often); zero: auth.DefaultMinRefetchInterval.
	MinRefetchInterval time.Duration
}

// Throttle is the limit of failed authentications per client address
// (the rate limits of the policy in force).
type Throttle interface {
	// Blocked is the refusal of a request from addr, which failed too
	// often to be verified at all; nil when it may be verified.
	Blocked(now time.Time, addr string) *admission.Refusal
	// Failed charges addr with a failed authentication.
	Failed(now time.Time, addr string)
}

// Authenticator is the edge's resource-server side: the verifier, the RFC
// 9728 metadata, and the subjects the policy sees for verified tokens.
type Authenticator struct {
	v           *auth.Verifier
	resourceURL string
	mdPath      string
	mdURL       string
	meta        http.Handler
	results     *prometheus.CounterVec
	keysFailed  *prometheus.CounterVec // refusals for want of the issuer's keys, by auth.KeysCause
	ok          prometheus.Counter     // results{ok}
	throttle    Throttle
	owners      *sessionstore.OwnerKey
	clients     *clientaddr.Resolver
}

// Wiring is what an Authenticator is given by its edge.
type Wiring struct {
	// Throttle limits failed authentications per client address;
	// required.
	Throttle Throttle
	// Owners keys the owner hash of a verified token's user; nil:
	// unkeyed.
	Owners *sessionstore.OwnerKey
	// Clients tells a request's client address, believing the
	// forwarding header of trusted proxies; nil: the connection's peer.
	Clients *clientaddr.Resolver
	// Registry takes the authentication metrics; required.
	Registry prometheus.Registerer
}

// errAuthOptions: the Options cannot be used.
var errAuthOptions = errors.New("edge: auth options")

// New builds the verifier for o; listen is the MCP listener's address
// (the default resource URL).
func New(o *Options, identityHeader, listen string, w Wiring) (*Authenticator, error) {
	if identityHeader != "" {
		return nil, fmt.Errorf("%w: an identity header and a token issuer exclude each other", errAuthOptions)
	}
	b := &Authenticator{resourceURL: o.ResourceURL, throttle: w.Throttle, owners: w.Owners, clients: w.Clients}
	reg := w.Registry
	if b.resourceURL == "" {
		b.resourceURL = "http://" + listen + "/mcp"
	}
	aud := o.Audience
	if aud == "" {
		aud = b.resourceURL
	}
	var err error
	if b.mdPath, b.mdURL, err = auth.MetadataURL(b.resourceURL); err != nil {
		return nil, fmt.Errorf("%w: resource URL: %w", errAuthOptions, err)
	}
	if b.v, err = auth.NewVerifier(auth.Options{Issuer: o.Issuer, Audience: aud, Scopes: o.Scopes,
		JWKSURL: o.JWKSURL, HTTPClient: o.HTTPClient, MinRefetchInterval: o.MinRefetchInterval}); err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthOptions, err)
	}
	b.meta = auth.MetadataHandler(auth.NewMetadata(b.resourceURL, o.Issuer, o.Scopes))
	b.results = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_authentications_total",
		Help: "Bearer-token authentications, by result (ok, refused) and reason."}, []string{"result", "reason"})
	b.keysFailed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_auth_keys_unavailable_total",
		Help: "Requests refused 503 because the issuer's keys could not be fetched, by cause (timeout, http_status, decode, tls, network, other)."}, []string{"cause"})
	for _, c := range auth.KeysCauses {
		b.keysFailed.WithLabelValues(c)
	}
	reg.MustRegister(b.results, b.keysFailed)
	b.ok = b.results.WithLabelValues("ok", "")
	return b, nil
}

// tokenUser is the user id of a verified identity: iss and sub, joined by
// a space (an issuer URL has none), so that tokens of one caller, however
// often refreshed, are one user to the go-sdk's session binding and to
// the edge's owner hashes.
func tokenUser(id *auth.Identity) string { return id.Issuer + " " + id.Subject }

// Authenticate verifies r's bearer token (when the edge has a token
// issuer) and returns r carrying the go-sdk's TokenInfo for it; or the
// refusal: 401 with the challenge, 403 for a missing scope, 503 while the
// issuer's keys are unknown. Errors name the reason only (never the
// token).
func (b *Authenticator) Authenticate(r *http.Request) (*http.Request, *admission.Refusal) {
	if b == nil {
		return r, nil
	}
	now, addr := time.Now(), b.clients.Addr(r)
	if f := b.throttle.Blocked(now, addr); f != nil {
		return r, f // too many failures from here: not verified at all
	}
	id, err := b.v.VerifyRequest(r)
	if err != nil {
		reason := auth.Reason(err)
		switch reason { // a forged or foreign token; not an expired one, nor the first step of discovery (none)
		case "malformed", "bad_signature", "unknown_key", "wrong_issuer", "wrong_audience":
			b.throttle.Failed(now, addr)
		}
		b.results.WithLabelValues("refused", reason).Inc()
		status, challenge := auth.Challenge(err, b.mdURL)
		f := &admission.Refusal{Status: status, Reason: "auth_" + reason,
			Err: fmt.Errorf("%w: bearer token: %s", admission.ErrUnauthenticated, strings.ReplaceAll(reason, "_", " "))}
		if challenge != "" {
			f.Header = http.Header{"Www-Authenticate": {challenge}}
		}
		if cause := auth.KeysCause(err); cause != "" {
			b.keysFailed.WithLabelValues(cause).Inc()
			f.Cause = fmt.Errorf("%s: %w", cause, err) // the fetch's error: URLs and status, never a token
		}
		return r, f
	}
	vt := verifiedTokenOf(id, b.owners)
	if vt == nil { // the go-sdk would not take its TokenInfo: refused as malformed
		b.results.WithLabelValues("refused", "malformed").Inc()
		return r, &admission.Refusal{Status: http.StatusUnauthorized, Reason: "auth_malformed",
			Err:    fmt.Errorf("%w: bearer token: malformed", admission.ErrUnauthenticated),
			Header: http.Header{"Www-Authenticate": {`Bearer resource_metadata="` + b.mdURL + `", error="invalid_token"`}}}
	}
	b.ok.Inc()
	return r.WithContext(withVerified(r.Context(), vt)), nil
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

// MetadataPath is the path of the RFC 9728 metadata, where clients learn
// how to get a token; Metadata serves it.
func (b *Authenticator) MetadataPath() string { return b.mdPath }

// Metadata serves the RFC 9728 metadata.
func (b *Authenticator) Metadata() http.Handler { return b.meta }

// Results counts the authentications, by result (ok, refused) and reason.
func (b *Authenticator) Results() *prometheus.CounterVec { return b.results }

// Fleet is the issuer as per-user sign-in's browser binding uses it (a
// browser's user logs in there and its token is verified as a caller's:
// the same iss and sub); nil for a nil Authenticator (no issuer).
func (b *Authenticator) Fleet() *signin.Fleet {
	if b == nil {
		return nil
	}
	return &signin.Fleet{Issuer: b.v.Issuer(), Resource: b.resourceURL, Scopes: b.v.Scopes(),
		Identify: func(ctx context.Context, token string) (string, error) {
			id, err := b.v.Verify(ctx, token)
			if err != nil {
				return "", fmt.Errorf("verify the fleet login's token: %w", err)
			}
			return tokenUser(id), nil
		}}
}
