// Package signins is the edge's side of per-user sign-in to user_oauth
// backends (package signin keeps the sign-ins): the callback a user's
// browser comes back to, the admin call that revokes a sign-in
// fleet-wide, and the sessions told when a sign-in changes.
//
// The edge is the OAuth client. The URL a user is given is
// signin.StartPath on the MCP listener, where the browser logs in at the
// fleet's own issuer and must be the user who asked (browser.go); a
// cookie binds it to that user and sign-in. The browser comes back to the
// callback, signin.CallbackPath (any edge of the fleet: the states and
// the cookie are sealed under the key every edge shares), which requires
// the cookie, redeems the code and stores the sealed refresh token in the
// bucket every edge watches. Each sign-in and sign-out of any edge tells the
// user's sessions here to list again (list_changed); DELETE /v1/signins
// on the admin API revokes a user's sign-in fleet-wide.
package signins

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// EdgeOptions make an edge keep per-user sign-ins (edge.Options.SignIns).
type EdgeOptions struct {
	// JetStream holds the sign-in bucket (signin.DefaultBucket).
	JetStream jetstream.JetStream
	// Key seals the states and refresh tokens; every edge of the fleet
	// must have the same (--signin-key-file). nil: a key of this process
	// (a sign-in does not survive a move to another edge).
	Key *signin.Key
	// PublicURL is the edge's base URL as users' browsers reach it
	// (--public-url); the redirect URI is PublicURL + signin.CallbackPath.
	// Default http://<the MCP listener's address>.
	PublicURL string
	// HTTPClient makes discovery and token requests; nil: one whose dials
	// refuse link-local and metadata addresses.
	HTTPClient *http.Client
	// Replicas of the bucket when the edge creates it (default 1).
	Replicas int
	// LoginClientID is the edge's client at the fleet issuer
	// (--signin-client-id; LoginClientSecret for a confidential one):
	// each sign-in is bound to its user's browser, checked there to be
	// the caller (browser.go). Without it sign-ins are refused, unless
	// Unbound (--signin-unbound) accepts sign-ins any browser may
	// complete.
	LoginClientID     string
	LoginClientSecret credential.Ref
	Unbound           bool
}

// Open opens the sign-ins eo configures for an edge whose MCP listener
// is mcpAddr (the default public URL), and their Web, wired by o (whose
// Manager Open sets); Run of the Manager attaches their bucket.
func Open(eo *EdgeOptions, mcpAddr string, o Options) (*signin.Manager, *Web) {
	base := eo.PublicURL
	if base == "" {
		base = "http://" + mcpAddr
	}
	web := &Web{secure: secureBase(base), prefix: pathPrefix(base)}
	var login *signin.Login
	if eo.LoginClientID != "" && o.Fleet != nil {
		login = &signin.Login{Fleet: *o.Fleet, ClientID: eo.LoginClientID, ClientSecret: eo.LoginClientSecret,
			StartURL: strings.TrimSuffix(base, "/") + signin.StartPath, RedirectURL: strings.TrimSuffix(base, "/") + signin.LoginPath}
	}
	o.Manager = signin.Open(signin.Options{Key: eo.Key, JetStream: eo.JetStream, Replicas: eo.Replicas, HTTPClient: eo.HTTPClient,
		RedirectURL: signin.CallbackURL(base), OnChange: web.Changed, Login: login, Unbound: eo.Unbound,
		Log: o.Log, StoreFailures: o.StoreFailures, Unsaved: o.Unsaved})
	web.o = o
	return o.Manager, web
}

// Options wire a Web to its edge; all are required but Fleet.
type Options struct {
	Manager *signin.Manager
	// Fleet is the fleet issuer the browser binding logs users in at
	// (nil: an edge without --auth-issuer, whose sign-ins cannot begin).
	Fleet    *signin.Fleet
	Sessions *session.Registry
	// Backend is the configuration of a backend served now.
	Backend func(name string) (events.BackendConfig, bool)
	// Owner is the hash of an identity the logs name (never the identity).
	Owner func(identity string) string
	Log   zerolog.Logger
	// Outcomes counts callbacks and revocations by outcome; Changes the
	// sign-ins and sign-outs heard; Dropped the notifications a full
	// session queue dropped; StoreFailures the failed bucket writes of
	// rotated refresh tokens, by reason; Unsaved the rotated tokens held
	// in memory, not yet written (signin.Options).
	Outcomes      *prometheus.CounterVec
	Changes       prometheus.Counter
	Dropped       prometheus.Counter
	StoreFailures *prometheus.CounterVec
	Unsaved       prometheus.Gauge
}

// Web serves the sign-in routes and revocation of one edge; a nil Web
// answers them as an edge that keeps no sign-ins (Absent).
type Web struct {
	o      Options
	secure bool   // the public URL is https: the binding cookie is Secure
	prefix string // the public URL's path ("" or "/gw"): the http cookie's path is under it
}

// New returns the Web of o.
func New(o Options) *Web { return &Web{o: o} }

// Changed tells the sessions of identity here that their lists changed
// (a sign-in to or out of backend, on any edge): the Manager's OnChange.
func (wb *Web) Changed(identity, backend string) {
	wb.o.Changes.Inc()
	all := view.Change{Tools: true, Prompts: true, Resources: true}
	for _, s := range wb.o.Sessions.All() {
		if s.Identity() == identity && s.Kind() != session.KindStateless {
			if s.Notify(all, time.Now()) {
				wb.o.Dropped.Inc()
			}
		}
	}
}

// maxCallbackQuery bounds the callback's query string.
const maxCallbackQuery = 16 << 10

// ServeCallback is the sign-in callback: the authorization server
// redirected the user's browser here with a code and the state. The page
// tells the user the outcome, never a token, code or state.
func (wb *Web) ServeCallback(w http.ResponseWriter, r *http.Request) {
	q, ok := wb.opening(w, r)
	if !ok || wb.refusedBy(w, q, "the authorization server") {
		return
	}
	p, err := wb.o.Manager.Complete(r.Context(), q.Get("state"), q.Get("code"), wb.cookies(r), wb.clientSecretOf)
	if err != nil {
		wb.refuse(w, err, "callback")
		return
	}
	if p.Bind != "" {
		wb.setCookie(w, p.Bind, "", time.Time{}) // used: a binding serves one sign-in
	}
	wb.o.Outcomes.WithLabelValues("completed").Inc()
	if p.Elicitation != "" {
		wb.elicitationComplete(p.Identity, p.Elicitation)
	}
	wb.o.Log.Info().Str("backend", p.Backend).Str("owner", wb.o.Owner(p.Identity)).Msg("sign-in completed")
	page(w, http.StatusOK, "Signed in to "+p.Backend+". You can close this page and go back to your client.")
}

// elicitationComplete tells the sessions of identity here that the
// URL-mode elicitation id (the sign-in it asked for) completed.
func (wb *Web) elicitationComplete(identity, id string) {
	for _, s := range wb.o.Sessions.All() {
		if s.Identity() != identity || s.Kind() != session.KindSession {
			continue
		}
		s.OweElicitationComplete(id) // on the stream the edge writes itself
	}
}

// clientSecretOf is the client secret reference configured for backend
// with client id clientID (zero: none, a public client).
func (wb *Web) clientSecretOf(backend, clientID string) credential.Ref {
	cfg, ok := wb.o.Backend(backend)
	if !ok || !cfg.Auth.SignIn() || cfg.Auth.ClientID != clientID {
		return credential.Ref{}
	}
	return cfg.Auth.ClientSecret
}

// ServeRevoke is DELETE /v1/signins?iss=I&sub=S&backend=B: the user's
// sign-in to backend ends on every edge.
func (wb *Web) ServeRevoke(w http.ResponseWriter, r *http.Request) {
	if wb == nil {
		Absent(true)(w, r)
		return
	}
	q := r.URL.Query()
	iss, sub, b := q.Get("iss"), q.Get("sub"), q.Get("backend")
	if iss == "" || sub == "" || b == "" || len(iss)+len(sub)+len(b) > 4096 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want iss, sub and backend (at most 4096 bytes together)"})
		return
	}
	if err := wb.o.Manager.SignOut(r.Context(), iss+" "+sub, b); err != nil {
		wb.o.Log.Warn().Err(err).Str("backend", b).Msg("revoke sign-in failed")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "revoke failed: the sign-in bucket is unreachable"})
		return
	}
	wb.o.Outcomes.WithLabelValues("revoked").Inc()
	writeJSON(w, http.StatusOK, map[string]string{"revoked": b})
}

// Absent answers the callback and revocation of an edge that keeps no
// sign-ins.
func Absent(admin bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if admin {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "this edge keeps no sign-ins"})
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<!doctype html><title>fleetgate sign-in</title><p>This edge keeps no sign-ins.</p>\n")
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// clipWord is an OAuth error code for a page: at most 64 visible ASCII
// characters, else "an error".
func clipWord(s string) string {
	if len(s) > 64 || strings.IndexFunc(s, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
		return "an error"
	}
	return `"` + s + `"`
}
