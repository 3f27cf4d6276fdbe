// Package adminauth guards an admin HTTP API: a bearer token read from a
// file, and a Host allowlist against DNS rebinding (a browser page whose
// name an attacker points at 127.0.0.1 sends its own name as Host).
//
//	tok, err := adminauth.ReadTokenFile(*tokenFile)          // --admin-token-file
//	hosts, err := adminauth.ParseAllowedHosts(*allowedHosts) // --admin-allowed-hosts
//	ln, _ := net.Listen("tcp", addr)
//	h := adminauth.Guard(mux, adminauth.Options{Token: tok, AllowedHosts: hosts, ListenAddr: ln.Addr().String()})
//
// Clients read the token with ClientToken (a file flag or the
// FLEETGATE_ADMIN_TOKEN variable, never a flag value) and send it with
// SetToken.
package adminauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
)

// MaxTokenBytes bounds an admin token.
const MaxTokenBytes = 4096

// EnvToken is the environment variable a client reads the token from
// when no token file is given.
const EnvToken = "FLEETGATE_ADMIN_TOKEN"

// ErrToken is wrapped by the errors of reading a token.
var ErrToken = errors.New("admin token")

// Options configure Guard.
type Options struct {
	// Token, when not empty, must be sent as "Authorization: Bearer
	// <Token>" on every request but /healthz and /readyz (401 otherwise).
	Token []byte
	// AllowedHosts are Host values answered besides the loopback names;
	// an entry "name" allows any port, "name:port" that port only.
	AllowedHosts []string
	// ListenAddr is the address the API listens on (after net.Listen, so
	// that port 0 is resolved); loopback names pass with its port. Empty:
	// loopback names pass with any port.
	ListenAddr string
	// Role names the API's role ("controller", "edge") in the 401: its
	// realm and message say whose token is wanted, for each role has its
	// own (a controller refuses an edge's). Empty: not named.
	Role string
	// Open are exact paths that GET and HEAD requests reach without the
	// token (the Host check still applies): static assets that hold no
	// data, such as a page shell that then asks for the token.
	Open []string
}

type hostPort struct{ host, port string }

// splitHost splits a Host value or allowlist entry into a lower-case
// host without brackets or a trailing dot, and a port ("" if none).
func splitHost(s string) hostPort {
	s = strings.ToLower(strings.TrimSpace(s))
	if h, p, err := net.SplitHostPort(s); err == nil {
		return hostPort{strings.TrimSuffix(h, "."), p}
	}
	return hostPort{strings.TrimSuffix(strings.Trim(s, "[]"), "."), ""}
}

// Guard wraps next. Every request but GET of /healthz and /readyz must
// carry an allowed Host (403 otherwise) and, when a token is configured,
// the token (401 otherwise, with WWW-Authenticate: Bearer), unless it is
// a GET or HEAD of one of Options.Open.
func Guard(next http.Handler, o Options) http.Handler {
	var want [sha256.Size]byte
	check := len(o.Token) > 0
	if check {
		want = sha256.Sum256(o.Token)
	}
	listenPort := ""
	if o.ListenAddr != "" {
		listenPort = splitHost(o.ListenAddr).port
	}
	allowed := make([]hostPort, 0, len(o.AllowedHosts))
	for _, h := range o.AllowedHosts {
		allowed = append(allowed, splitHost(h))
	}
	hostOK := func(host string) bool {
		hp := splitHost(host)
		if hp.port == "" {
			hp.port = "80"
		}
		switch hp.host {
		case "localhost", "127.0.0.1", "::1":
			if listenPort == "" || hp.port == listenPort {
				return true
			}
		}
		for _, a := range allowed {
			if a.host == hp.host && (a.port == "" || a.port == hp.port) {
				return true
			}
		}
		return false
	}
	realm, wanted := `Bearer realm="fleetgate admin"`, "admin token required: Authorization: Bearer <the content of --admin-token-file>"
	if o.Role != "" {
		realm = `Bearer realm="fleetgate ` + o.Role + ` admin"`
		wanted = "the " + o.Role + "'s admin token required: Authorization: Bearer <the content of the " + o.Role +
			"'s --admin-token-file>; each role has its own token"
	}
	open := make(map[string]bool, len(o.Open))
	for _, p := range o.Open {
		open[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/healthz" || p == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		if !hostOK(r.Host) {
			refuse(w, http.StatusForbidden, "host not allowed for the admin API; see --admin-allowed-hosts")
			return
		}
		if check && !(open[r.URL.Path] && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
			got, ok := bearer(r.Header.Values("Authorization"))
			sum := sha256.Sum256(got)
			if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", realm)
				refuse(w, http.StatusUnauthorized, wanted)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bearer reads the token of exactly one "Bearer <token>" header: the
// scheme, spaces, the token (RFC 6750: 1*SP between them; spaces and tabs
// around the value are ignored, no other white space is).
func bearer(vals []string) ([]byte, bool) {
	if len(vals) != 1 {
		return nil, false
	}
	scheme, tok, ok := strings.Cut(strings.Trim(vals[0], " \t"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	return []byte(strings.TrimLeft(tok, " ")), true
}

func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// ReadTokenFile reads a token file: its content without trailing line
// breaks, which must be 1 to MaxTokenBytes visible ASCII characters.
// Errors name the file, never the content.
func ReadTokenFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w file: %w", ErrToken, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenBytes+3))
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %w", ErrToken, path, err)
	}
	tok, err := checkToken(bytes.TrimRight(b, "\r\n"))
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %w", ErrToken, path, err)
	}
	return tok, nil
}

func checkToken(b []byte) ([]byte, error) {
	switch {
	case len(b) == 0:
		return nil, errors.New("empty")
	case len(b) > MaxTokenBytes:
		return nil, fmt.Errorf("longer than %d bytes", MaxTokenBytes)
	}
	for i, c := range b {
		if c < 0x21 || c > 0x7e {
			return nil, fmt.Errorf("byte %d is not visible ASCII (spaces and control characters are not allowed)", i)
		}
	}
	return b, nil
}

// ClientToken is the token a client of an admin API sends: the content
// of file when it is not empty, else the value of FLEETGATE_ADMIN_TOKEN
// (getenv), else none (nil, nil).
func ClientToken(file string, getenv func(string) string) ([]byte, error) {
	if file != "" {
		return ReadTokenFile(file)
	}
	v := getenv(EnvToken)
	if v == "" {
		return nil, nil
	}
	tok, err := checkToken([]byte(strings.TrimRight(v, "\r\n")))
	if err != nil {
		return nil, fmt.Errorf("%w in %s: %w", ErrToken, EnvToken, err)
	}
	return tok, nil
}

// SetToken sets h's Authorization to the bearer token (nothing when tok
// is empty).
func SetToken(h http.Header, tok []byte) {
	if len(tok) > 0 {
		h.Set("Authorization", "Bearer "+string(tok))
	}
}

// ParseAllowedHosts splits an --admin-allowed-hosts value ("a,b:8081")
// into its entries; an entry must be a host name or address, with an
// optional port.
func ParseAllowedHosts(s string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if hp := splitHost(e); len(e) > 255 || !validHost(hp.host) || !validPort(hp.port) {
			return nil, fmt.Errorf("admin allowed host %q: want a host name or address with an optional port", e)
		}
		out = append(out, e)
	}
	return out, nil
}

func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' || i > 4 {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n >= 1 && n <= 65535
}
