package auth_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

// Every way the issuer's keys can fail to arrive is classified into the
// fixed set of KeysCauses, from the error Verify returns.
func TestKeysCause(t *testing.T) {
	iss := issuertest.New(t, nil)
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL + "/jwks"
	}
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/jwks"
	ln.Close()
	for _, c := range []struct {
		name, url, want string
	}{
		{"timeout", serve(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }), auth.CauseTimeout},
		{"HTTP 500", serve(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }), auth.CauseHTTPStatus},
		{"a redirect", serve(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, iss.JWKSURL(), http.StatusFound) }), auth.CauseHTTPStatus},
		{"text/plain, not JSON", serve(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("keys: none"))
		}), auth.CauseDecode},
		{"no usable key", serve(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
		}), auth.CauseDecode},
		{"a body cut short", serve(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write([]byte(`{"keys":[`))
		}), auth.CauseNetwork},
		{"an unknown certificate authority", tlsSrv.URL + "/jwks", auth.CauseTLS},
		{"connection refused", closed, auth.CauseNetwork},
	} {
		t.Run(c.name, func(t *testing.T) {
			timeout := 10 * time.Second
			if c.want == auth.CauseTimeout {
				timeout = 100 * time.Millisecond
			}
			v, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: "aud", JWKSURL: c.url,
				HTTPClient: &http.Client{}, FetchTimeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(context.Background(), iss.Mint(iss.Claims("alice", "aud")))
			if !errors.Is(err, auth.ErrKeysUnavailable) {
				t.Fatalf("verify: %v, want ErrKeysUnavailable", err)
			}
			if got := auth.KeysCause(err); got != c.want {
				t.Fatalf("cause of %v: %q, want %q", err, got, c.want)
			}
		})
	}
	if auth.KeysCause(auth.ErrExpired) != "" || auth.KeysCause(nil) != "" {
		t.Fatal("a cause for an error that is not ErrKeysUnavailable")
	}
	if got := auth.KeysCause(auth.ErrKeysUnavailable); !slices.Contains(auth.KeysCauses, got) {
		t.Fatalf("bare ErrKeysUnavailable: %q", got)
	}
}
