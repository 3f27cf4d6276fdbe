package credential

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

const secret = "s3cr3t-7f4e1b9a-value"

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("CRED_TEST_SET", secret)
	t.Setenv("CRED_TEST_EMPTY", "")
	t.Setenv("CRED_TEST_CTL", "a\nb")
	for _, tc := range []struct {
		name string
		ref  Ref
		want string // "" for an error
		msg  string // in the error
	}{
		{"env", Ref{Env: "CRED_TEST_SET"}, secret, ""},
		{"env missing", Ref{Env: "CRED_TEST_MISSING"}, "", "env CRED_TEST_MISSING: not set"},
		{"env empty", Ref{Env: "CRED_TEST_EMPTY"}, "", "env CRED_TEST_EMPTY: empty"},
		{"env control", Ref{Env: "CRED_TEST_CTL"}, "", "control characters"},
		{"file", Ref{File: write("a", secret+"\n")}, secret, ""},
		{"file crlf", Ref{File: write("b", secret+"\r\n")}, secret, ""},
		{"file no newline", Ref{File: write("c", secret)}, secret, ""},
		{"file two newlines", Ref{File: write("d", secret+"\n\n")}, "", "control characters"},
		{"file empty", Ref{File: write("e", "\n")}, "", "empty"},
		{"file missing", Ref{File: filepath.Join(dir, "nope")}, "", "no such file"},
		{"file too large", Ref{File: write("f", strings.Repeat("x", MaxValue+3))}, "", "over"},
		{"file at bound", Ref{File: write("g", strings.Repeat("x", MaxValue)+"\r\n")}, strings.Repeat("x", MaxValue), ""},
		{"both", Ref{Env: "A", File: "/x"}, "", "not both"},
		{"none", Ref{}, "", "want {env"},
		{"relative", Ref{File: "x/y"}, "", "absolute"},
		{"bad env", Ref{Env: "1X"}, "", "environment variable name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(tc.ref)
			if tc.want != "" {
				if err != nil || s.Reveal() != tc.want {
					t.Fatalf("Resolve(%v) = %d bytes, %v", tc.ref, len(s.Reveal()), err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrUnresolved) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Resolve(%v) error %v, want %q", tc.ref, err, tc.msg)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "xxxx") {
				t.Fatalf("error quotes the value: %v", err)
			}
		})
	}
}

// TestSecretRedacted: no way of printing or encoding a Secret, alone or
// inside another value, shows it.
func TestSecretRedacted(t *testing.T) {
	t.Setenv("CRED_TEST_SET", secret)
	s, err := Resolve(Ref{Env: "CRED_TEST_SET"})
	if err != nil {
		t.Fatal(err)
	}
	type holder struct {
		Pub  Secret
		priv Secret
	}
	h := holder{s, s}
	var out bytes.Buffer
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		fmt.Fprintf(&out, f+"\n", s)
		fmt.Fprintf(&out, f+"\n", h)
		fmt.Fprintf(&out, f+"\n", &h)
		fmt.Fprintf(&out, f+"\n", []Secret{s})
		fmt.Fprintf(&out, f+"\n", map[string]Secret{"k": s})
	}
	fmt.Fprintln(&out, s, h)
	j, _ := json.Marshal(map[string]any{"s": s, "h": h})
	out.Write(j)
	zl := zerolog.New(&out)
	zl.Info().Interface("s", s).Stringer("t", s).Object("o", s).Interface("h", h).Msg("x")
	slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "s", s, "h", h)
	slog.New(slog.NewTextHandler(&out, nil)).Info("x", "s", s, "h", h)
	if strings.Contains(out.String(), secret) {
		t.Fatalf("a printed form shows the secret:\n%s", out.String())
	}
	if !strings.Contains(out.String(), Redacted) {
		t.Fatalf("no redaction marker in:\n%s", out.String())
	}
}

func TestRefString(t *testing.T) {
	for ref, want := range map[Ref]string{
		{Env: "A"}: "env A", {File: "/run/x"}: "file /run/x", {}: "invalid reference", {Env: "A", File: "/x"}: "invalid reference",
	} {
		if got := ref.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", ref, got, want)
		}
	}
	j, _ := json.Marshal(Headers{"Authorization": {Env: "ALPHA_AUTHORIZATION"}})
	if string(j) != `{"Authorization":{"env":"ALPHA_AUTHORIZATION"}}` {
		t.Errorf("JSON %s", j)
	}
}

func TestParseRefJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
		err  error
	}{
		{`{"env":"X"}`, Ref{Env: "X"}, nil},
		{` {"file":"/run/s"} `, Ref{File: "/run/s"}, nil},
		{`"Bearer ` + secret + `"`, Ref{}, ErrLiteral},
		{`{"env":"X","file":"/y"}`, Ref{}, ErrInvalidRef},
		{`{"value":"` + secret + `"}`, Ref{}, ErrInvalidRef},
		{`{"env":"Bearer ` + secret + `"}`, Ref{}, ErrInvalidRef},
		{`{"env":1}`, Ref{}, ErrInvalidRef},
		{`{"env":""}`, Ref{}, ErrInvalidRef},
		{`{}`, Ref{}, ErrInvalidRef},
		{`null`, Ref{}, ErrInvalidRef},
		{`[1]`, Ref{}, ErrInvalidRef},
		{`{"env":"X"`, Ref{}, ErrInvalidRef},
		{`{"file":"relative"}`, Ref{}, ErrInvalidRef},
		{`{"file":"/a/../b"}`, Ref{}, ErrInvalidRef},
		{`{"env":"` + strings.Repeat("A", MaxRefJSON) + `"}`, Ref{}, ErrInvalidRef},
	} {
		got, err := ParseRefJSON([]byte(tc.in))
		if tc.err == nil {
			if err != nil || got != tc.want {
				t.Errorf("ParseRefJSON(%s) = %v, %v", tc.in, got, err)
			}
			continue
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("ParseRefJSON(%.40s) error %v, want %v", tc.in, err, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error quotes the input: %v", err)
		}
	}
}

func TestCheckName(t *testing.T) {
	for in, want := range map[string]string{
		"authorization": "Authorization", "X-Api-Key": "X-Api-Key", "x-tenant": "X-Tenant", "Cookie": "Cookie",
	} {
		if got, err := CheckName(in); err != nil || got != want {
			t.Errorf("CheckName(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "Host", "host", "Content-Length", "Transfer-Encoding", "Connection",
		"Mcp-Session-Id", "mcp-protocol-version", "Mcp-Method", "Upgrade", "TE", "Keep-Alive", "Proxy-Authorization",
		"Bad Name", "a:b", "é", strings.Repeat("a", MaxHeaderName+1), "Bearer " + secret} {
		_, err := CheckName(in)
		if !errors.Is(err, ErrInvalidHeader) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalidHeader", in, err)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error quotes the input: %v", err)
		}
	}
	h := Headers{}
	for i := 0; i <= MaxHeaders; i++ {
		h[fmt.Sprintf("X-H%d", i)] = Ref{Env: "A"}
	}
	if err := h.Validate(); !errors.Is(err, ErrInvalidHeader) {
		t.Errorf("%d headers: %v", len(h), err)
	}
	if err := (Headers{"authorization": {Env: "A"}}).Validate(); !errors.Is(err, ErrInvalidHeader) {
		t.Errorf("non-canonical name: %v", err)
	}
	if err := (Headers{"Authorization": {}}).Validate(); !errors.Is(err, ErrInvalidRef) {
		t.Errorf("empty ref: %v", err)
	}
}

// TestTransport: the headers reach the server on every request, a caller's
// header of the same name is replaced, the caller's request is not
// changed, an unresolved reference fails before anything is sent, and a
// rotated file is picked up after Recheck.
func TestTransport(t *testing.T) {
	got := make(chan http.Header, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(path, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CRED_TEST_SET", secret)
	now := time.Unix(1000, 0)
	var errs []error
	tr := NewTransport(nil, Headers{"Authorization": {Env: "CRED_TEST_SET"}, "X-Tenant": {File: path}},
		&TransportOptions{Backend: "alpha", URL: srv.URL + "/mcp", Recheck: time.Second, Now: func() time.Time { return now },
			OnError: func(err error) { errs = append(errs, err) }})
	c := &http.Client{Transport: tr}
	req, _ := http.NewRequest("GET", srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "caller")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("Authorization") != secret || h.Get("X-Tenant") != "one" || req.Header.Get("Authorization") != "caller" {
		t.Fatalf("server got %v; caller's request now %v", h, req.Header)
	}
	// Rotation: picked up once Recheck passed.
	if err := os.WriteFile(path, []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func() (http.Header, error) {
		resp, err := c.Get(srv.URL + "/mcp")
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return <-got, nil
	}
	if h, _ := get(); h.Get("X-Tenant") != "one" {
		t.Fatalf("before recheck: %q", h.Get("X-Tenant"))
	}
	now = now.Add(time.Second)
	if h, _ := get(); h.Get("X-Tenant") != "two" {
		t.Fatalf("after recheck: %q", h.Get("X-Tenant"))
	}
	// The file goes: every request fails, naming the ref; OnError once.
	os.Remove(path)
	now = now.Add(time.Second)
	for range 3 {
		if _, err := get(); !errors.Is(err, ErrUnresolved) || !strings.Contains(err.Error(), `backend "alpha", header X-Tenant: file `+path) {
			t.Fatalf("unresolved: %v", err)
		}
	}
	if len(errs) != 1 || len(got) != 0 {
		t.Fatalf("OnError calls %v; requests sent %d", errs, len(got))
	}
	if err := os.WriteFile(path, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tr.Refresh(); err != nil {
		t.Fatal(err)
	}
	if h, _ := get(); h.Get("X-Tenant") != "three" {
		t.Fatalf("after Refresh: %q", h.Get("X-Tenant"))
	}
	// Another origin gets nothing.
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("other origin reached") }))
	defer other.Close()
	if _, err := c.Get(other.URL + "/mcp"); !errors.Is(err, ErrOtherOrigin) {
		t.Fatalf("other origin: %v", err)
	}
	// A body is closed when the request is refused.
	b := &closeBody{Reader: strings.NewReader("x")}
	req, _ = http.NewRequest("POST", other.URL, b)
	if _, err := tr.RoundTrip(req); err == nil || !b.closed {
		t.Fatalf("refused request: %v, body closed %v", err, b.closed)
	}
	if len(errs) != 1 {
		t.Fatalf("OnError calls %v", errs)
	}
}

type closeBody struct {
	io.Reader
	closed bool
}

func (b *closeBody) Close() error { b.closed = true; return nil }

func TestTransportInvalid(t *testing.T) {
	var logged []error
	tr := NewTransport(http.DefaultTransport, Headers{"Host": {Env: "X"}}, &TransportOptions{Backend: "beta", OnError: func(err error) { logged = append(logged, err) }})
	req, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrUnresolved) || !errors.Is(err, ErrInvalidHeader) || !strings.Contains(err.Error(), `"beta"`) {
		t.Fatalf("invalid headers: %v", err)
	}
	if tr.Refresh() == nil || tr.Err() == nil || len(logged) != 1 {
		t.Fatalf("Refresh %v Err %v logged %v", tr.Refresh(), tr.Err(), logged)
	}
	// No headers: a plain pass-through.
	plain := NewTransport(nil, nil, nil)
	if plain.Err() != nil || plain.Refresh() != nil {
		t.Fatal(plain.Err())
	}
	h := http.Header{}
	if err := plain.Apply(h); err != nil || len(h) != 0 {
		t.Fatal(err, h)
	}
}
