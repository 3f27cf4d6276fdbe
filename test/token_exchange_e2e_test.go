package test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// exchangeBackend is a go-sdk backend that takes only tokens the test
// issuer's token endpoint issued (exchanged for a user, or granted to the
// client) and records the Authorization of every request.
type exchangeBackend struct {
	url string
	mu  sync.Mutex
	got []string // Authorization values, in order
}

func startExchangeBackend(t *testing.T, iss *issuertest.Issuer) *exchangeBackend {
	t.Helper()
	demo := demobackend.New("tickets", nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.Server() }, nil)
	eb := &exchangeBackend{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		eb.mu.Lock()
		eb.got = append(eb.got, a)
		eb.mu.Unlock()
		tok := strings.TrimPrefix(a, "Bearer ")
		issued := slices.ContainsFunc(iss.Exchanges(), func(e issuertest.Exchange) bool { return e.Issued == tok })
		if !issued && !slices.Contains(iss.ClientGrants(), tok) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	eb.url = srv.URL + "/mcp"
	return eb
}

func (eb *exchangeBackend) saw(v string) bool {
	eb.mu.Lock()
	defer eb.mu.Unlock()
	return slices.Contains(eb.got, v)
}

// bearerClient is an MCP client session to url sending token.
func bearerClient(t *testing.T, url, token string) *mcpClient {
	t.Helper()
	hc := &http.Client{Transport: bearerRoundTripper{token: token, next: http.DefaultTransport.(*http.Transport).Clone()}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &mcpClient{cs: cs}
}

// TestTokenExchangeNeverLeaks: a backend with auth: token_exchange is
// probed by the controller with the client's own token (healthy), and
// reached through an edge by two users, each with the token the edge
// exchanged for them at the test issuer (never their own); a refused
// exchange gives the caller an error naming the backend and the
// endpoint's error code. No subject token, exchanged token, probe token or
// client secret appears in any event (the streams read raw: events,
// snapshots, session records, the call trail), /v1/state, /v1/events, an
// audit export, a log line of either process, /metrics of either, or a
// client's reply.
func TestTokenExchangeNeverLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	iss := issuertest.New(t, nil)
	clientSecret := randomSecret(t)
	iss.SetClient("fleetgate", clientSecret)
	tickets := startExchangeBackend(t, iss)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "sts.secret")
	if err := os.WriteFile(secretFile, []byte(clientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "fleet.yaml")
	yaml := fmt.Sprintf(`groups:
  - name: default
    backends:
      - name: tickets
        url: %s
        auth:
          type: token_exchange
          token_url: %s
          audience: https://tickets.example
          scopes: [tickets.read]
          client_id: fleetgate
          client_secret: {file: %s}
health:
  interval: 1h
  timeout: 5s
  debounce: 100ms
`, tickets.url, iss.TokenURL(), secretFile)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	node := startNATS(t)
	admin := freeAddr(t)
	ctl := startLoggedProc(t, "controller", nil, "--config", cfg, "--nats-url", node.ClientURL(), "--id", "tx-ctl",
		"--admin-listen", admin, "--data-dir", t.TempDir(), "--lease-ttl", "1s", "--log-format", "json", "--credential-dir", dir)
	ctlAdmin := "http://" + admin
	eventually(t, 30*time.Second, "tickets advertised (probed with the client's own token)", soleBackendAdvertised(ctlAdmin))
	if len(iss.ClientGrants()) == 0 || !tickets.saw("Bearer "+iss.ClientGrants()[0]) {
		t.Fatal("the controller's probe did not carry a client credentials token")
	}

	listen, edgeAdmin := freeAddr(t), freeAddr(t)
	mcpURL := "http://" + listen + "/mcp"
	edgeProc := startLoggedProc(t, "edge", nil, "--nats-url", node.ClientURL(), "--listen", listen, "--admin-listen", edgeAdmin,
		"--id", "tx-edge", "--log-format", "json", "--call-timeout", "5s", "--auth-issuer", iss.URL())
	waitEdgeReady(t, edgeAdmin)
	aliceTok, bobTok := iss.Mint(iss.Claims("alice", mcpURL)), iss.Mint(iss.Claims("bob", mcpURL))
	alice, bob := bearerClient(t, mcpURL, aliceTok), bearerClient(t, mcpURL, bobTok)
	eventually(t, 20*time.Second, "the edge serves tickets", func() bool { return slices.Contains(alice.tools(t), "tickets_echo") })
	var replies []string
	for i, c := range []*mcpClient{alice, bob, alice, bob} {
		res, err := c.call("tickets_echo", map[string]any{"text": fmt.Sprint("hi ", i)})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %s", i, err, text(res))
		}
		replies = append(replies, text(res))
	}
	ex := iss.Exchanges()
	if len(ex) != 2 || ex[0].Subject == ex[1].Subject {
		t.Fatalf("exchanges %+v: want one per user", ex)
	}
	byUser := map[string]issuertest.Exchange{ex[0].Subject: ex[0], ex[1].Subject: ex[1]}
	if byUser["alice"].SubjectToken != aliceTok || byUser["bob"].SubjectToken != bobTok ||
		!tickets.saw("Bearer "+byUser["alice"].Issued) || !tickets.saw("Bearer "+byUser["bob"].Issued) {
		t.Fatal("the backend did not get each user's exchanged token")
	}
	if tickets.saw("Bearer "+aliceTok) || tickets.saw("Bearer "+bobTok) {
		t.Fatal("the backend got a caller's own token")
	}

	// A refused exchange (a new user): an error result naming the backend
	// and the endpoint's code.
	iss.RefuseExchanges("invalid_target")
	carolTok := iss.Mint(iss.Claims("carol", mcpURL))
	carol := bearerClient(t, mcpURL, carolTok)
	res, err := carol.call("tickets_echo", map[string]any{"text": "x"})
	if err != nil || !res.IsError || !strings.Contains(text(res), `backend "tickets"`) || !strings.Contains(text(res), `"invalid_target"`) {
		t.Fatalf("refused exchange: %v %q", err, text(res))
	}
	replies = append(replies, text(res))
	iss.RefuseExchanges("")

	secrets := []string{aliceTok, bobTok, carolTok, clientSecret, byUser["alice"].Issued, byUser["bob"].Issued}
	secrets = append(secrets, iss.ClientGrants()...)
	surfaces := map[string]string{
		"client replies":      strings.Join(replies, "\n"),
		"/v1/state":           get(t, ctlAdmin+"/v1/state"),
		"/v1/events":          get(t, ctlAdmin+"/v1/events?from=1&limit=1000"),
		"controller /metrics": get(t, ctlAdmin+"/metrics"),
		"edge /metrics":       get(t, "http://"+edgeAdmin+"/metrics"),
		"edge /v1/sessions":   get(t, "http://"+edgeAdmin+"/v1/sessions"),
	}
	// The edge's figures: three exchanges (alice's, bob's, carol's
	// refused), two tokens cached, the later calls answered from the cache,
	// the callers' sessions.
	for _, m := range []string{`fleetgate_edge_token_exchanges_total 3`, `fleetgate_edge_tokens_cached 2`,
		`fleetgate_edge_token_cache_hits_total [1-9]\d*`, `fleetgate_edge_caller_sessions [1-9]\d*`} {
		if !regexp.MustCompile(`(?m)^` + m + `$`).MatchString(surfaces["edge /metrics"]) {
			t.Errorf("edge /metrics lacks %q:\n%s", m, grepLines(surfaces["edge /metrics"], "fleetgate_edge_t", "fleetgate_edge_caller"))
		}
	}
	if !strings.Contains(surfaces["/v1/state"], `"client_secret":{"file":"`+secretFile+`"}`) {
		t.Fatalf("/v1/state does not show the auth section's reference:\n%s", surfaces["/v1/state"])
	}
	for _, sub := range [][]string{{"export"}, {"history", "--backend", "tickets"}} {
		out, _ := exec.Command(binary(t, "controller"), append(append([]string{"audit"}, sub...), "--nats-url", node.ClientURL())...).CombinedOutput()
		if len(out) == 0 {
			t.Fatalf("audit %s: no output", sub[0])
		}
		surfaces["audit "+sub[0]] = string(out)
	}
	surfaces["NATS streams (raw)"] = rawStreams(t, node.ClientURL())
	surfaces["controller log"] = ctl.output(t)
	surfaces["edge log"] = edgeProc.output(t)
	if !strings.Contains(surfaces["edge log"], "invalid_target") {
		t.Errorf("the edge log does not name the refusal")
	}
	for where, s := range surfaces {
		for i, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("%s contains secret %d", where, i)
			}
		}
	}
	t.Logf("checked %d surfaces (%d bytes) for %d secrets", len(surfaces), totalLen(surfaces), len(secrets))
}

// grepLines are the lines of s that start with one of prefixes.
func grepLines(s string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// soleBackendAdvertised reports whether the controller at admin (its
// admin API's base URL) serves one group with one backend, advertised.
func soleBackendAdvertised(admin string) func() bool {
	return func() bool {
		var st controller.StateJSON
		resp, err := http.Get(admin + "/v1/state")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return decodeJSON(resp, &st) == nil && len(st.Groups) == 1 && len(st.Groups[0].Backends) == 1 && st.Groups[0].Backends[0].Advertisable
	}
}
