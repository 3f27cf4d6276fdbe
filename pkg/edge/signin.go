package edge

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// Per-user sign-in to user_oauth backends (package signin): the edge is
// the OAuth client. A user's browser comes back to the edge's callback,
// signin.CallbackPath on the MCP listener (any edge of the fleet: the
// state is sealed under the key every edge shares), which redeems the code
// and stores the sealed refresh token in the bucket every edge watches.
// Each sign-in and sign-out of any edge tells the user's sessions here to
// list again (list_changed); DELETE /v1/signins on the admin API revokes
// a user's sign-in fleet-wide.

// SignInOptions make the edge keep per-user sign-ins (Options.SignIns).
type SignInOptions struct {
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
}

// openSignIns opens the sign-ins of e (nil without Options.SignIns);
// Run attaches their bucket.
func (e *Edge) openSignIns() *signin.Manager {
	o := e.opts.SignIns
	if o == nil {
		return nil
	}
	base := o.PublicURL
	if base == "" {
		base = "http://" + e.mcpLn.Addr().String()
	}
	return signin.Open(signin.Options{Key: o.Key, JetStream: o.JetStream, Replicas: o.Replicas, HTTPClient: o.HTTPClient,
		RedirectURL: signin.CallbackURL(base), OnChange: e.signInChanged})
}

// planeSignIns is the call plane's view of the sign-ins (nil for none);
// the pool is given them too.
func (e *Edge) planeSignIns() calls.SignIns {
	if e.signIns == nil {
		return nil
	}
	e.pool.SetSignIns(e.signIns)
	return e.signIns
}

// signInChanged tells the sessions of identity here that their lists
// changed (a sign-in to or out of backend, on any edge).
func (e *Edge) signInChanged(identity, backend string) {
	e.m.signInChanges.Inc()
	all := view.Change{Tools: true, Prompts: true, Resources: true}
	for _, s := range e.reg.All() {
		if s.Identity() == identity && s.Kind() != session.KindStateless {
			if s.Notify(all, time.Now()) {
				e.m.notifyDropped.Inc()
			}
		}
	}
}

// maxCallbackQuery bounds the callback's query string.
const maxCallbackQuery = 16 << 10

// serveCallback is the sign-in callback: the authorization server
// redirected the user's browser here with a code and the state. The page
// tells the user the outcome, never a token, code or state.
func (e *Edge) serveCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	page := func(code int, msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintf(w, "<!doctype html><title>fleetgate sign-in</title><p>%s</p>\n", html.EscapeString(msg))
	}
	if e.signIns == nil {
		page(http.StatusNotFound, "This edge keeps no sign-ins.")
		return
	}
	if len(r.URL.RawQuery) > maxCallbackQuery {
		page(http.StatusRequestURITooLong, "Sign-in failed: the request is too long.")
		return
	}
	q := r.URL.Query()
	if oauthErr := q.Get("error"); oauthErr != "" {
		e.m.signIns.WithLabelValues("refused").Inc()
		page(http.StatusBadRequest, "Sign-in was not completed: the authorization server answered "+clipWord(oauthErr)+".")
		return
	}
	p, err := e.signIns.Complete(r.Context(), q.Get("state"), q.Get("code"), e.clientSecretOf)
	if err != nil {
		e.m.signIns.WithLabelValues("failed").Inc()
		e.log.Warn().Err(err).Msg("sign-in callback failed")
		page(http.StatusBadRequest, "Sign-in failed (it may have expired or been used already): ask the tool to sign in again.")
		return
	}
	e.m.signIns.WithLabelValues("completed").Inc()
	if p.Elicitation != "" {
		e.elicitationComplete(p.Identity, p.Elicitation)
	}
	e.log.Info().Str("backend", p.Backend).Str("owner", e.ownerOf(p.Identity)).Msg("sign-in completed")
	page(http.StatusOK, "Signed in to "+p.Backend+". You can close this page and go back to your client.")
}

// elicitationComplete tells the sessions of identity here that the
// URL-mode elicitation id (the sign-in it asked for) completed.
func (e *Edge) elicitationComplete(identity, id string) {
	for _, s := range e.reg.All() {
		if s.Identity() != identity || s.Kind() != session.KindSession {
			continue
		}
		s.OweElicitationComplete(id) // on the stream the edge writes itself
	}
}

// clientSecretOf is the client secret reference configured for backend
// with client id clientID (zero: none, a public client).
func (e *Edge) clientSecretOf(backend, clientID string) credential.Ref {
	cfg, ok := (*e.backends.Load())[backend]
	if !ok || !cfg.Auth.SignIn() || cfg.Auth.ClientID != clientID {
		return credential.Ref{}
	}
	return cfg.Auth.ClientSecret
}

// ownerOf is the hash of identity the logs name (never the identity).
func (e *Edge) ownerOf(identity string) string {
	return e.opts.OwnerKey.Hash(identity)
}

// serveRevoke is DELETE /v1/signins?iss=I&sub=S&backend=B: the user's
// sign-in to backend ends on every edge.
func (e *Edge) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if e.signIns == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this edge keeps no sign-ins"})
		return
	}
	q := r.URL.Query()
	iss, sub, b := q.Get("iss"), q.Get("sub"), q.Get("backend")
	if iss == "" || sub == "" || b == "" || len(iss)+len(sub)+len(b) > 4096 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want iss, sub and backend (at most 4096 bytes together)"})
		return
	}
	if err := e.signIns.SignOut(r.Context(), iss+" "+sub, b); err != nil {
		e.log.Warn().Err(err).Str("backend", b).Msg("revoke sign-in failed")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "revoke failed: the sign-in bucket is unreachable"})
		return
	}
	e.m.signIns.WithLabelValues("revoked").Inc()
	writeJSON(w, http.StatusOK, map[string]string{"revoked": b})
}

// clipWord is an OAuth error code for a page: at most 64 visible ASCII
// characters, else "an error".
func clipWord(s string) string {
	if len(s) > 64 || strings.IndexFunc(s, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
		return "an error"
	}
	return `"` + s + `"`
}
