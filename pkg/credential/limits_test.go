package credential

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLimitsCheck(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	inFile := filepath.Join(dir, "alpha")
	outFile := filepath.Join(outside, "seed")
	for _, p := range []string{inFile, outFile} {
		if err := os.WriteFile(p, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(outFile, link); err != nil {
		t.Fatal(err)
	}
	l := Limits{Dir: dir, EnvPrefix: "CRED_"}
	for _, c := range []struct {
		ref  Ref
		want string // "" allowed, else a part of the refusal
	}{
		{Ref{File: inFile}, ""},
		{Ref{File: filepath.Join(dir, "not-yet")}, ""},
		{Ref{File: outFile}, "file " + outFile + ": the file is not under the allowed directory " + dir},
		{Ref{File: dir}, "not under"},
		{Ref{File: dir + "-sibling/x"}, "not under"},
		{Ref{File: link}, "a link that leads out"},
		{Ref{Env: "CRED_ALPHA"}, ""},
		{Ref{Env: "ALPHA"}, "env ALPHA: the variable does not begin with the allowed prefix CRED_"},
		{Ref{Env: "FLEETGATE_ADMIN_TOKEN"}, "does not begin"},
	} {
		err := l.Check(c.ref)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want allowed", c.ref, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrOutOfBounds)):
			t.Errorf("%s: %v, want ErrOutOfBounds with %q", c.ref, err, c.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%s: the error quotes the value", c.ref)
		}
	}
	// The defaults: /run/secrets, any variable but the gateway's own; the
	// pod's service account token never.
	def := Limits{Dir: DefaultDir}
	for ref, ok := range map[Ref]bool{
		{File: "/run/secrets/alpha"}:                                  true,
		{File: "/etc/fleetgate/nats/controller.seed"}:                 false,
		{File: "/run/secrets/kubernetes.io/serviceaccount/token"}:     false,
		{File: "/var/run/secrets/kubernetes.io/serviceaccount/token"}: false,
		{Env: "ALPHA_AUTHORIZATION"}:                                  true,
		{Env: "FLEETGATE_ADMIN_TOKEN"}:                                false,
		{Env: "FLEETGATE_NATS_NKEY_SEED"}:                             false,
	} {
		if err := def.Check(ref); (err == nil) != ok {
			t.Errorf("default limits, %s: %v, want allowed %v", ref, err, ok)
		}
	}
	if err := (Limits{Dir: "/", EnvPrefix: "FLEETGATE_CRED_"}).Check(Ref{Env: "FLEETGATE_CRED_X"}); err != nil {
		t.Errorf("a FLEETGATE_CRED_ prefix: %v", err)
	}
	if err := (Limits{Dir: "/", EnvPrefix: "FLEETGATE_CRED_"}).Check(Ref{Env: "FLEETGATE_ADMIN_TOKEN"}); err == nil {
		t.Error("FLEETGATE_ADMIN_TOKEN allowed with prefix FLEETGATE_CRED_")
	}
}

func TestLimitsValidate(t *testing.T) {
	for l, ok := range map[Limits]bool{
		{Dir: "/run/secrets"}:          true,
		{Dir: "/"}:                     true,
		{Dir: "run/secrets"}:           false,
		{Dir: "/run/secrets/"}:         false,
		{Dir: "/run/../etc"}:           false,
		{EnvPrefix: "CRED_"}:           true,
		{EnvPrefix: "FLEETGATE_CRED_"}: true,
		{EnvPrefix: "FLEETGATE_"}:      false,
		{EnvPrefix: "FLEET"}:           false,
		{EnvPrefix: "1X"}:              false,
		{EnvPrefix: "A-B"}:             false,
	} {
		if err := l.Validate(); (err == nil) != ok {
			t.Errorf("%+v: %v, want valid %v", l, err, ok)
		}
	}
}

func TestOrigin(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:9101/mcp":     "http://127.0.0.1:9101",
		"HTTP://Alpha.Internal/mcp":     "http://alpha.internal:80",
		"https://alpha.internal./x?y=1": "https://alpha.internal:443",
		"https://alpha.internal:443/":   "https://alpha.internal:443",
		"http://[::1]:8080/mcp":         "http://[::1]:8080",
		"ftp://alpha/":                  "",
		"/relative":                     "",
	} {
		got, err := Origin(raw)
		if want == "" {
			if err == nil {
				t.Errorf("Origin(%q) = %q, want an error", raw, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("Origin(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
}

// A Transport with Limits never reads a reference out of bounds: every
// request fails with a *ResolveError naming the header and the reference,
// and the backend gets nothing.
func TestTransportLimits(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "alpha"), filepath.Join(t.TempDir(), "seed")
	for _, p := range []string{in, out} {
		if err := os.WriteFile(p, []byte("s3cret-"+filepath.Base(p)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("X-Key"))
	}))
	defer srv.Close()
	l := &Limits{Dir: dir}
	for _, c := range []struct {
		ref  Ref
		sent string // "" refused
	}{
		{Ref{File: in}, "s3cret-alpha"},
		{Ref{File: out}, ""},
		{Ref{Env: "FLEETGATE_ADMIN_TOKEN"}, ""},
	} {
		got = nil
		t.Setenv("FLEETGATE_ADMIN_TOKEN", "s3cret-admin")
		tr := NewTransport(nil, Headers{"X-Key": c.ref}, &TransportOptions{Backend: "alpha", URL: srv.URL, Limits: l})
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/mcp")
		if c.sent != "" {
			if err != nil || len(got) != 1 || got[0] != c.sent {
				t.Errorf("%s: %v, backend got %q", c.ref, err, got)
			}
			if resp != nil {
				resp.Body.Close()
			}
			continue
		}
		if err == nil {
			resp.Body.Close()
		}
		if err == nil || !errors.Is(err, ErrUnresolved) || !errors.Is(err, ErrOutOfBounds) || len(got) != 0 ||
			!strings.Contains(err.Error(), `credential of backend "alpha", header X-Key: `+c.ref.String()+": out of the allowed bounds") ||
			strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v, backend got %q; want a refusal naming the reference, nothing sent", c.ref, err, got)
		}
	}
}
