package signins

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/signin"
)

// The browser binding (signin/binding.go): the URL a caller is given is
// the edge's signin.StartPath, which sends the browser to the fleet
// issuer's login with a cookie binding that login to it; the login comes
// back to signin.LoginPath, where the browser's user must be the caller
// the sign-in was begun for; the cookie then names that identity and
// sign-in, and the browser goes on to the backend's authorization server,
// whose callback requires the cookie. A refusal is a page that names the
// reason only (never a state, code, token or cookie) and stores nothing.

// CookieName is the cookie of the browser binding (http public URL),
// sent to /oauth/ only; SecureCookieName with an https public URL: a
// __Host- cookie (Secure, Path=/, no Domain), which no sibling host can
// set in the browser. A browser holds one per sign-in it began, named
// with CookieSuffix of the sign-in: a page that sends it to another
// sign-in's start URL sets that sign-in's cookie and leaves its own.
const (
	CookieName       = "fleetgate_signin"
	SecureCookieName = "__Host-fleetgate_signin"
)

// CookieSuffix is what the binding cookie of sign-in bind adds to its
// name: "_" and a hash of bind.
func CookieSuffix(bind string) string {
	sum := sha256.Sum256([]byte("fleetgate sign-in cookie\x00" + bind))
	return "_" + hex.EncodeToString(sum[:8])
}

// cookieName and cookiePath are the binding cookie's of wb, for sign-in
// bind.
func (wb *Web) cookieName(bind string) string {
	if wb.secure {
		return SecureCookieName + CookieSuffix(bind)
	}
	return CookieName + CookieSuffix(bind)
}

func (wb *Web) cookiePath() string {
	if wb.secure {
		return "/"
	}
	return wb.prefix + "/oauth/" // as the browser reaches the routes behind a prefix
}

// pathPrefix is the path of public URL base without its final slash
// ("" for none or an unparsable one).
func pathPrefix(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.EscapedPath(), "/")
}

// setCookie sets the binding cookie of sign-in bind (v "" clears it)
// until expires.
func (wb *Web) setCookie(w http.ResponseWriter, bind, v string, expires time.Time) {
	c := &http.Cookie{Name: wb.cookieName(bind), Value: v, Path: wb.cookiePath(), HttpOnly: true, Secure: wb.secure,
		SameSite: http.SameSiteLaxMode}
	if v == "" {
		c.MaxAge = -1
	} else {
		c.MaxAge = max(int(time.Until(expires).Seconds()), 1)
	}
	http.SetCookie(w, c)
}

// cookies are the request's binding cookies: for a sign-in, its cookie
// ("" for none or one over the bound: r.Cookie parses only the header,
// which the server bounds).
func (wb *Web) cookies(r *http.Request) signin.Cookies {
	return func(bind string) string {
		c, err := r.Cookie(wb.cookieName(bind))
		if err != nil || len(c.Value) > signin.MaxCookie {
			return ""
		}
		return c.Value
	}
}

// page writes the sign-in page of status code saying msg.
func page(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html><title>fleetgate sign-in</title><p>%s</p>\n", html.EscapeString(msg))
}

// noStore marks a sign-in answer as neither cached nor referred.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// ServeStart is signin.StartPath: the browser that opened a caller's
// sign-in URL is sent to the fleet issuer's login, bound by a cookie.
func (wb *Web) ServeStart(w http.ResponseWriter, r *http.Request) {
	q, ok := wb.opening(w, r)
	if !ok {
		return
	}
	loginURL, bind, c, err := wb.o.Manager.Start(r.Context(), q.Get("state"))
	if err != nil {
		wb.o.Outcomes.WithLabelValues("failed").Inc()
		wb.o.Log.Warn().Err(err).Msg("sign-in start failed")
		page(w, startStatus(err), "Sign-in could not start (the link may have expired): ask the tool to sign in again.")
		return
	}
	wb.setCookie(w, bind, c, time.Now().Add(signin.StateLifetime))
	http.Redirect(w, r, loginURL, http.StatusFound)
}

// opening is the start of every route of the browser's: 404 without
// sign-ins, no caching, a bounded query (ok false: answered).
func (wb *Web) opening(w http.ResponseWriter, r *http.Request) (q url.Values, ok bool) {
	if wb == nil {
		Absent(false)(w, r)
		return nil, false
	}
	noStore(w)
	if len(r.URL.RawQuery) > maxCallbackQuery {
		page(w, http.StatusRequestURITooLong, "Sign-in failed: the request is too long.")
		return nil, false
	}
	return r.URL.Query(), true
}

// refusedBy answers the error redirect of an authorization server (by
// names it in the page); false when q carries none. Like refuse, it
// leaves the cookie: anyone can make such a redirect.
func (wb *Web) refusedBy(w http.ResponseWriter, q url.Values, by string) bool {
	oauthErr := q.Get("error")
	if oauthErr == "" {
		return false
	}
	wb.o.Outcomes.WithLabelValues("refused").Inc()
	page(w, http.StatusBadRequest, "Sign-in was not completed: "+by+" answered "+clipWord(oauthErr)+".")
	return true
}

// startStatus is the status of a refused start: 400 for a link that is
// not one, 502 when the fleet issuer could not be used.
func startStatus(err error) int {
	if errors.Is(err, signin.ErrMalformed) || errors.Is(err, signin.ErrRefused) || errors.Is(err, signin.ErrExpired) {
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// ServeLogin is signin.LoginPath: the fleet issuer sent the browser back
// with a code. The browser's user must be the caller the sign-in was
// begun for; the browser is then bound to it and sent to the backend's
// authorization server.
func (wb *Web) ServeLogin(w http.ResponseWriter, r *http.Request) {
	q, ok := wb.opening(w, r)
	if !ok || wb.refusedBy(w, q, "the fleet's authorization server") {
		return
	}
	authURL, bound, p, err := wb.o.Manager.Login(r.Context(), q.Get("state"), q.Get("code"), wb.cookies(r))
	if err != nil {
		wb.refuse(w, err, "fleet login")
		return
	}
	wb.o.Log.Info().Str("backend", p.Backend).Str("owner", wb.o.Owner(p.Identity)).Msg("sign-in: browser bound to its user")
	wb.setCookie(w, p.Bind, bound, time.Unix(p.Expires, 0))
	http.Redirect(w, r, authURL, http.StatusFound)
}

// refuse answers a login or callback that failed: a page naming the
// reason (a browser not bound, another user: 403). The cookie is left as
// it is: any page can send a browser to a refused URL, and clearing the
// cookie there would end the sign-in it binds (it serves that one sign-in
// only and expires on its own).
func (wb *Web) refuse(w http.ResponseWriter, err error, where string) {
	switch {
	case errors.Is(err, signin.ErrOtherUser):
		wb.o.Outcomes.WithLabelValues("other_user").Inc()
		wb.o.Log.Warn().Err(err).Msg("sign-in refused: " + where + ": another user's browser")
		page(w, http.StatusForbidden, "Sign-in refused: this sign-in link was made for another user. "+
			"Only the user who asked for it can complete it; ask your own client to sign in.")
	case errors.Is(err, signin.ErrNoBinding):
		wb.o.Outcomes.WithLabelValues("unbound").Inc()
		wb.o.Log.Warn().Err(err).Msg("sign-in refused: " + where + ": the browser did not begin it")
		page(w, http.StatusForbidden, "Sign-in refused: this browser did not begin this sign-in. "+
			"Open the sign-in link your client gave you, in one browser, and finish there.")
	default:
		wb.o.Outcomes.WithLabelValues("failed").Inc()
		wb.o.Log.Warn().Err(err).Msg("sign-in " + where + " failed")
		page(w, http.StatusBadRequest, "Sign-in failed (it may have expired or been used already): ask the tool to sign in again.")
	}
}

// secureBase reports whether base (the public URL) is https: the cookie
// is then Secure.
func secureBase(base string) bool { return strings.HasPrefix(strings.ToLower(base), "https://") }
