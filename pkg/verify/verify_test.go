package verify

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

func startBackend(t *testing.T, o *demobackend.Options) *demobackend.Backend {
	t.Helper()
	b := demobackend.New("alpha", o)
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// sdkDigest lists the endpoint's tools with the go-sdk client, an
// independent path to the digest verify must compute.
func sdkDigest(t *testing.T, url string) (string, int) {
	t.Helper()
	ctx := t.Context()
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var raws []json.RawMessage
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	d, err := catalog.Digest(raws)
	if err != nil {
		t.Fatal(err)
	}
	return d, len(raws)
}

func TestRunDemoBackend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      *demobackend.Options
		pages     int
		tools     int
		cursorsOK func([]string) bool
	}{
		{"one page", nil, 1, 2, func(c []string) bool { return len(c) == 1 && c[0] == "" }},
		{"250 tools in pages of 100", &demobackend.Options{ExtraTools: 250, PageSize: 100}, 3, 252,
			func(c []string) bool { return len(c) == 3 && c[0] == "" && c[1] != "" && c[2] != "" && c[1] != c[2] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBackend(t, tc.opts)
			want, n := sdkDigest(t, b.URL())
			rep, err := Run(t.Context(), Options{URL: b.URL()})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Digest != want || rep.Tools != tc.tools || n != tc.tools {
				t.Errorf("digest %s tools %d, want %s tools %d (sdk saw %d)", rep.Digest, rep.Tools, want, tc.tools, n)
			}
			if rep.Pages != tc.pages || !tc.cursorsOK(rep.Cursors) || !rep.Complete || rep.NextCursor != "" {
				t.Errorf("pages %d cursors %q complete %v next %q", rep.Pages, rep.Cursors, rep.Complete, rep.NextCursor)
			}
			if rep.ProtocolVersion != "2025-11-25" || !rep.ListChanged || rep.Server.Name != "demo-alpha" {
				t.Errorf("negotiation: version %q listChanged %v server %+v", rep.ProtocolVersion, rep.ListChanged, rep.Server)
			}
			// Nothing to compare against.
			if rep.Verdict != convergence.Unverifiable || rep.ExitCode() != ExitUnverifiable || rep.Expected != nil {
				t.Errorf("verdict %s (%s) exit %d", rep.Verdict, rep.Reason, rep.ExitCode())
			}
		})
	}
}

func TestRunExpectDigest(t *testing.T) {
	b := startBackend(t, &demobackend.Options{ExtraTools: 250, PageSize: 100})
	want, _ := sdkDigest(t, b.URL())
	for _, tc := range []struct {
		name    string
		expect  string
		verdict convergence.Status
		exit    int
	}{
		{"match", want, convergence.Converged, ExitConverged},
		{"mismatch", "sha256:0000000000000000000000000000000000000000000000000000000000000000", convergence.Stale, ExitStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(t.Context(), Options{URL: b.URL(), ExpectDigest: tc.expect})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.verdict || rep.ExitCode() != tc.exit {
				t.Errorf("verdict %s (%s) exit %d, want %s exit %d", rep.Verdict, rep.Reason, rep.ExitCode(), tc.verdict, tc.exit)
			}
			if rep.Expected == nil || rep.Expected.Source != "expect-digest" || rep.Expected.Digest != tc.expect {
				t.Errorf("expected %+v", rep.Expected)
			}
		})
	}
}

// fakeController serves GET /v1/groups/{group}/view for one group.
func fakeController(t *testing.T, group string, gen uint64, digest string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/groups/{group}/view", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("group") != group {
			http.Error(w, "unknown group", http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"generation": gen, "digest": digest, "tools": []any{}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRunController(t *testing.T) {
	b := startBackend(t, nil)
	want, _ := sdkDigest(t, b.URL())
	t.Run("converged", func(t *testing.T) {
		ctl := fakeController(t, "blue", 7, want)
		rep, err := Run(t.Context(), Options{URL: b.URL(), Controller: ctl + "/", Group: "blue"})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != convergence.Converged || rep.Expected.Generation != 7 || rep.Expected.Source != "controller" || rep.Expected.Group != "blue" {
			t.Errorf("verdict %s (%s) expected %+v", rep.Verdict, rep.Reason, rep.Expected)
		}
		if !strings.Contains(rep.Reason, "generation 7") {
			t.Errorf("reason %q does not name the generation", rep.Reason)
		}
	})
	t.Run("stale", func(t *testing.T) {
		ctl := fakeController(t, DefaultGroup, 9, "sha256:ffff")
		rep, err := Run(t.Context(), Options{URL: b.URL(), Controller: ctl})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != convergence.Stale || rep.ExitCode() != ExitStale {
			t.Errorf("verdict %s (%s)", rep.Verdict, rep.Reason)
		}
	})
	t.Run("unknown group", func(t *testing.T) {
		ctl := fakeController(t, "blue", 1, want)
		_, err := Run(t.Context(), Options{URL: b.URL(), Controller: ctl, Group: "green"})
		if !errors.Is(err, ErrView) || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), `"green"`) {
			t.Errorf("err = %v, want ErrView naming the group and status", err)
		}
	})
}

func TestRunUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	_, err = Run(t.Context(), Options{URL: url})
	if err == nil || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "initialize") {
		t.Fatalf("err = %v, want an initialize error naming %s", err, url)
	}
}

func TestRunHeader(t *testing.T) {
	b := startBackend(t, nil)
	b.RequireToken("s3cret")
	_, err := Run(t.Context(), Options{URL: b.URL()})
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want HTTP 401", err)
	}
	rep, err := Run(t.Context(), Options{URL: b.URL(), Header: http.Header{"Authorization": {"Bearer s3cret"}}})
	if err != nil || rep.Tools != 2 {
		t.Fatalf("with token: %v, %+v", err, rep)
	}
}

// TestRunJSONResponse verifies a go-sdk server answering application/json
// bodies rather than event streams.
func TestRunJSONResponse(t *testing.T) {
	b := demobackend.New("beta", &demobackend.Options{ExtraTools: 5, PageSize: 3})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.Server() }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	want, _ := sdkDigest(t, srv.URL)
	rep, err := Run(t.Context(), Options{URL: srv.URL, ExpectDigest: want})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != convergence.Converged || rep.Pages != 3 || rep.Tools != 7 {
		t.Errorf("verdict %s (%s) pages %d tools %d", rep.Verdict, rep.Reason, rep.Pages, rep.Tools)
	}
}

func TestOptionsInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want error
	}{
		{"no url", Options{}, ErrOptions},
		{"not http", Options{URL: "nats://127.0.0.1:4222"}, ErrOptions},
		{"no host", Options{URL: "http:///mcp"}, ErrOptions},
		{"both expectations", Options{URL: "http://127.0.0.1:1/mcp", ExpectDigest: "sha256:00", Controller: "http://127.0.0.1:2"}, ErrOptions},
		{"stateless protocol", Options{URL: "http://127.0.0.1:1/mcp", ProtocolVersion: "2026-07-28"}, ErrUnsupportedProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tc.o); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
