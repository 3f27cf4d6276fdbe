package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// lockedBackend is a go-sdk MCP backend (a demo backend's server) behind a
// handler that answers 401 to every request without Authorization: want,
// and counts the requests with and without it.
type lockedBackend struct {
	name    string
	url     string
	want    string
	refuse  atomic.Bool // answer 401 to everything
	ok, bad atomic.Int64
}

func startLockedBackend(t *testing.T, name, want string, sse bool) *lockedBackend {
	t.Helper()
	demo := demobackend.New(name, nil)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.Server() }, nil)
	if sse {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return demo.Server() }, nil)
	}
	lb := &lockedBackend{name: name, want: want}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != lb.want {
			lb.bad.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		lb.ok.Add(1)
		if lb.refuse.Load() {
			http.Error(w, "token revoked", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	lb.url = srv.URL + "/mcp"
	return lb
}

// loggedProc is a fleetgate process whose output goes to a file the test
// reads.
type loggedProc struct {
	cmd *exec.Cmd
	log string
}

func startLoggedProc(t *testing.T, name string, env []string, args ...string) *loggedProc {
	t.Helper()
	p := &loggedProc{log: filepath.Join(t.TempDir(), name+".log")}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary(t, name), args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		_ = p.cmd.Wait()
		f.Close()
	})
	return p
}

func (p *loggedProc) output(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func randomSecret(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "cred-" + hex.EncodeToString(b)
}

// TestBackendCredentialsNeverLeak: backends configured with headers by
// reference ({env: ...} and {file: ...}) get them from the controller's
// probes and from the edge's calls, each process resolving them itself;
// a backend whose reference the edge cannot resolve fails its calls with
// an error naming the reference; and the secrets appear in no event (the
// JetStream streams read raw, and /v1/events), /v1/state, audit export
// or state, log line of either process, /metrics of either, or error text
// a client gets (also when the backend answers 401).
func TestBackendCredentialsNeverLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	alphaSecret, betaSecret, gammaSecret := randomSecret(t), randomSecret(t), randomSecret(t)
	secrets := []string{alphaSecret, betaSecret, gammaSecret}
	alpha := startLockedBackend(t, "alpha", "Bearer "+alphaSecret, false)
	beta := startLockedBackend(t, "beta", "Bearer "+betaSecret, false)
	gamma := startLockedBackend(t, "gamma", "Bearer "+gammaSecret, false)
	delta := startLockedBackend(t, "delta", "Bearer "+alphaSecret, true) // legacy SSE
	dir := t.TempDir()
	betaFile := filepath.Join(dir, "beta.token")
	if err := os.WriteFile(betaFile, []byte("Bearer "+betaSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "fleet.yaml")
	yaml := fmt.Sprintf(`groups:
  - name: default
    backends:
      - name: alpha
        url: %s
        headers:
          Authorization: {env: CREDTEST_ALPHA_AUTHORIZATION}
      - name: beta
        url: %s
        headers:
          Authorization: {file: %s}
      - name: gamma
        url: %s
        headers:
          Authorization: {env: CREDTEST_GAMMA_AUTHORIZATION}
      - name: delta
        url: %s
        transport: sse
        headers:
          Authorization: {env: CREDTEST_ALPHA_AUTHORIZATION}
health:
  interval: 1h
  timeout: 5s
  debounce: 100ms
`, alpha.url, beta.url, betaFile, gamma.url, delta.url)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	node := startNATS(t)
	admin := freeAddr(t)
	ctl := startLoggedProc(t, "controller", []string{"CREDTEST_ALPHA_AUTHORIZATION=Bearer " + alphaSecret,
		"CREDTEST_GAMMA_AUTHORIZATION=Bearer " + gammaSecret},
		"--config", cfg, "--nats-url", node.ClientURL(), "--id", "cred-ctl", "--admin-listen", admin,
		"--data-dir", t.TempDir(), "--lease-ttl", "1s", "--log-format", "json", "--credential-dir", dir)
	ctlAdmin := "http://" + admin
	// The controller's probes carry the headers: every backend healthy.
	eventually(t, 30*time.Second, "every backend advertised", func() bool {
		resp, err := http.Get(ctlAdmin + "/v1/state")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st controller.StateJSON
		if decodeJSON(resp, &st) != nil || len(st.Groups) != 1 || len(st.Groups[0].Backends) != 4 {
			return false
		}
		for _, b := range st.Groups[0].Backends {
			if !b.Advertisable {
				return false
			}
		}
		return true
	})
	for _, b := range []*lockedBackend{alpha, beta, gamma, delta} {
		if b.ok.Load() == 0 || b.bad.Load() != 0 {
			t.Fatalf("%s: %d requests with its header, %d without", b.name, b.ok.Load(), b.bad.Load())
		}
	}
	probes := alpha.ok.Load()

	// The edge resolves alpha's and beta's references itself; gamma's
	// variable is not in its environment.
	listen, edgeAdmin := freeAddr(t), freeAddr(t)
	edgeProc := startLoggedProc(t, "edge", []string{"CREDTEST_ALPHA_AUTHORIZATION=Bearer " + alphaSecret},
		"--nats-url", node.ClientURL(), "--listen", listen, "--admin-listen", edgeAdmin, "--id", "cred-edge",
		"--log-format", "json", "--call-timeout", "5s", "--credential-dir", dir)
	waitEdgeReady(t, edgeAdmin)
	client := connectMCP(t, "http://"+listen+"/mcp", "")
	eventually(t, 20*time.Second, "the edge serves the four backends", func() bool { return len(client.tools(t)) >= 8 })
	var replies []string
	deltaBefore := delta.ok.Load()
	for _, name := range []string{"alpha_echo", "beta_echo", "delta_echo"} {
		for i := range 3 {
			res, err := client.call(name, map[string]any{"text": fmt.Sprint("hi ", i)})
			if err != nil || res.IsError {
				t.Fatalf("%s through the edge: %v %s", name, err, text(res))
			}
			replies = append(replies, text(res))
		}
	}
	if delta.ok.Load() <= deltaBefore || delta.bad.Load() != 0 {
		t.Fatalf("SSE calls through the edge: delta %d with the header, %d without", delta.ok.Load()-deltaBefore, delta.bad.Load())
	}
	if alpha.ok.Load() <= probes || alpha.bad.Load() != 0 || beta.bad.Load() != 0 {
		t.Fatalf("calls through the edge: alpha %d with the header (%d from probes), %d without; beta %d without",
			alpha.ok.Load(), probes, alpha.bad.Load(), beta.bad.Load())
	}
	res, err := client.call("gamma_echo", map[string]any{"text": "x"})
	if err != nil || !res.IsError || !strings.Contains(text(res), `backend "gamma"`) ||
		!strings.Contains(text(res), "credential unresolved (header Authorization: env CREDTEST_GAMMA_AUTHORIZATION: not set)") {
		t.Fatalf("gamma with its variable unset on the edge: %v %q", err, text(res))
	}
	if gamma.bad.Load() != 0 {
		t.Fatalf("the edge sent gamma %d requests without its credential", gamma.bad.Load())
	}
	replies = append(replies, text(res))
	// The backend refuses the credential: the client gets an error (on
	// the go-sdk session path its kind is "failed"), never the credential.
	alpha.refuse.Store(true)
	res, err = client.call("alpha_echo", map[string]any{"text": "x"})
	if err != nil || !res.IsError || !strings.Contains(text(res), `backend "alpha"`) {
		t.Fatalf("alpha refusing: %v %q", err, text(res))
	}
	replies = append(replies, text(res))
	alpha.refuse.Store(false)

	// Every place a secret could leak to.
	surfaces := map[string]string{
		"client replies":      strings.Join(replies, "\n"),
		"/v1/state":           get(t, ctlAdmin+"/v1/state"),
		"/v1/events":          get(t, ctlAdmin+"/v1/events?from=1&limit=1000"),
		"controller /metrics": get(t, ctlAdmin+"/metrics"),
		"edge /metrics":       get(t, "http://"+edgeAdmin+"/metrics"),
		"edge /v1/sessions":   get(t, "http://"+edgeAdmin+"/v1/sessions"),
	}
	if !strings.Contains(surfaces["/v1/state"], `"headers":{"Authorization":{"env":"CREDTEST_ALPHA_AUTHORIZATION"}}`) ||
		!strings.Contains(surfaces["/v1/state"], `"headers":{"Authorization":{"file":"`+betaFile+`"}}`) {
		t.Fatalf("/v1/state does not show the references:\n%s", surfaces["/v1/state"])
	}
	if !strings.Contains(surfaces["/v1/events"], `"CREDTEST_GAMMA_AUTHORIZATION"`) {
		t.Fatalf("/v1/events does not carry the references:\n%.2000s", surfaces["/v1/events"])
	}
	var st controller.StateJSON
	resp, err := http.Get(ctlAdmin + "/v1/state")
	if err != nil || decodeJSON(resp, &st) != nil {
		t.Fatalf("state: %v", err)
	}
	for _, sub := range [][]string{{"export"}, {"state", "--generation", fmt.Sprint(st.Generation)}, {"history", "--backend", "alpha"}} {
		out, _ := exec.Command(binary(t, "controller"), append(append([]string{"audit"}, sub...), "--nats-url", node.ClientURL())...).CombinedOutput()
		if len(out) == 0 {
			t.Fatalf("audit %s: no output", sub[0])
		}
		surfaces["audit "+sub[0]] = string(out)
	}
	for _, sub := range []string{"audit export", "audit state"} {
		if !strings.Contains(surfaces[sub], "CREDTEST_ALPHA_AUTHORIZATION") {
			t.Fatalf("%s does not carry the references:\n%.2000s", sub, surfaces[sub])
		}
	}
	surfaces["NATS streams (raw)"] = rawStreams(t, node.ClientURL())
	surfaces["controller log"] = ctl.output(t)
	surfaces["edge log"] = edgeProc.output(t)
	if !strings.Contains(surfaces["edge log"], "CREDTEST_GAMMA_AUTHORIZATION") {
		t.Errorf("the edge log does not name gamma's unresolved reference:\n%s", surfaces["edge log"])
	}
	for where, s := range surfaces {
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("%s contains a backend secret", where)
			}
		}
	}
	if !strings.Contains(surfaces["client replies"], "hi 2") {
		t.Fatalf("replies: %s", surfaces["client replies"])
	}
	t.Logf("checked %d surfaces (%d bytes) for %d secrets", len(surfaces), totalLen(surfaces), len(secrets))
}

func totalLen(m map[string]string) (n int) {
	for _, s := range m {
		n += len(s)
	}
	return n
}

// rawStreams is every message of every JetStream stream (the event log,
// snapshots, session records, the call trail), subjects, headers and data
// as stored.
func rawStreams(t *testing.T, natsURL string) string {
	t.Helper()
	js := jsConnect(t, natsURL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted
			}
			fmt.Fprintf(&out, "%s %d %s %v\n", name, seq, m.Subject, m.Header)
			out.Write(m.Data)
			out.WriteByte('\n')
		}
	}
	if out.Len() == 0 {
		t.Fatal("no stream messages read")
	}
	return out.String()
}
