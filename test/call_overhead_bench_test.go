package test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// BenchmarkCallOverheadProcess is the call overhead of an edge as
// production runs it, against the floor of any hop between processes, in
// one run: the same tools/call (echo) made directly to a demo backend
// process, through a byte-copying TCP forwarder process and through an
// edge process, one call each per iteration, the order rotated every
// iteration so that no leg is always the first (warmest or coldest). The
// edge is the edge binary with its defaults (call trail and session
// records on, the admission gate), bearer auth against a real issuer
// (token verified, warm key and token caches), a 20-rule policy that
// allows the tool, and rate limits that refuse nothing. The controller,
// NATS, the issuer and the client are in the test process. All three legs
// send the same bearer token through the same kind of HTTP client, so the
// ratios are the hops' cost, not the client's.
//
// It reports each leg's p50 and p99 and the p50 ratios edge/direct and
// forwarder/direct (issue 27: the edge's at most the forwarder's + 0.15).
//
// FLEETGATE_BENCH_EDGE_BIN runs another edge binary (e.g. one built at an
// older commit); FLEETGATE_BENCH_BARE=1 runs the edge without auth, policy
// and rate limits (for binaries older than them); FLEETGATE_BENCH_EDGE_FLAGS
// adds edge flags (e.g. --no-call-trail). FLEETGATE_BENCH_PROXY=1 adds a
// leg through a plain httputil.ReverseProxy process (proxy-ratio): the
// floor of a hop that ends HTTP and starts it again, as the edge must,
// where the TCP forwarder only copies bytes (in the kernel: splice).
func BenchmarkCallOverheadProcess(b *testing.B) {
	bare := os.Getenv("FLEETGATE_BENCH_BARE") == "1"
	backend := startBackendProc(b, "alpha")
	forwarder := startForwarderProc(b, "tcp", backend)
	// A JetStream store larger than an embedded node's default: an edge
	// binary from before 2026-12-02 asks for a 1 GiB call trail stream.
	n, err := natsnode.Start(&natsnode.Options{DataDir: b.TempDir(), Listen: "127.0.0.1:0", MaxStore: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.Shutdown)
	fleet := fleetYAMLAt(time.Second, 100*time.Millisecond, [2]string{"alpha", backend})
	if !bare {
		fleet += productionAuthorization()
	}
	startController(b, n.ClientURL(), "ctl", fleet)

	var iss *issuertest.Issuer
	if !bare {
		iss = issuertest.New(b, nil)
	}
	// startEdge runs the edge binary bin and returns its MCP URL and the
	// bearer token it accepts.
	startEdge := func(id, bin string, auth bool, flags string) (string, string) {
		listen, admin := freeAddr(b), freeAddr(b)
		u := "http://" + listen + "/mcp"
		args := []string{"--nats-url", n.ClientURL(), "--listen", listen, "--admin-listen", admin, "--id", id,
			"--log-format", "json"}
		token := "none"
		if iss != nil && auth {
			args = append(args, "--auth-issuer", iss.URL())
			c := iss.Claims("alice", u)
			c["roles"] = []any{"dev"}
			token = iss.Mint(c)
		}
		args = append(args, strings.Fields(os.Getenv("FLEETGATE_BENCH_EDGE_FLAGS"))...)
		args = append(args, strings.Fields(flags)...)
		startProc(b, id, exec.Command(bin, args...))
		waitEdgeReady(b, admin)
		return u, token
	}
	// FLEETGATE_BENCH_EDGE_BIN_B adds a fourth leg, edge-b: another edge
	// binary configured the same, e.g. one built at another commit, so two
	// builds are compared in one run. It starts first: an older binary
	// cannot take over the call trail stream a newer one made. With
	// FLEETGATE_BENCH_EDGE_B_NOAUTH=1 it runs without --auth-issuer (a
	// binary older than bearer auth; it is sent the same token, unchecked;
	// the policy and rate limits are the fleet's, so an edge that knows
	// them applies them to an anonymous caller); FLEETGATE_BENCH_EDGE_B_FLAGS
	// adds flags to it alone (e.g. the same binary with --no-call-trail).
	var edgeB, tokenB string
	if binB := os.Getenv("FLEETGATE_BENCH_EDGE_BIN_B"); binB != "" {
		edgeB, tokenB = startEdge("bench-edge-b", binB, os.Getenv("FLEETGATE_BENCH_EDGE_B_NOAUTH") != "1",
			os.Getenv("FLEETGATE_BENCH_EDGE_B_FLAGS"))
	}
	bin := os.Getenv("FLEETGATE_BENCH_EDGE_BIN")
	if bin == "" {
		bin = binary(b, "edge")
	}
	edgeURL, token := startEdge("bench-edge", bin, true, "")

	connect := func(u, token string) (*mcp.ClientSession, error) {
		hc := &http.Client{Transport: bearerRoundTripper{token: token, next: http.DefaultTransport.(*http.Transport).Clone()}}
		return mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	type leg struct {
		name, url, tool, token string
		cs                     *mcp.ClientSession
		ds                     []time.Duration
	}
	legs := []*leg{{name: "direct", url: backend, tool: "echo", token: token},
		{name: "forwarder", url: forwarder, tool: "echo", token: token},
		{name: "edge", url: edgeURL, tool: "alpha_echo", token: token}}
	if edgeB != "" {
		if tokenB == "none" {
			tokenB = token
		}
		legs = append(legs, &leg{name: "edge-b", url: edgeB, tool: "alpha_echo", token: tokenB})
	}
	if os.Getenv("FLEETGATE_BENCH_PROXY") == "1" {
		legs = append(legs, &leg{name: "proxy", url: startForwarderProc(b, "proxy", backend), tool: "echo", token: token})
	}
	for _, l := range legs {
		eventually(b, 30*time.Second, l.name+" session", func() bool {
			var err error
			l.cs, err = connect(l.url, l.token)
			return err == nil
		})
		b.Cleanup(func() { l.cs.Close() })
	}
	args2 := map[string]any{"text": "bench"}
	call := func(l *leg) time.Duration {
		start := time.Now()
		res, err := l.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: l.tool, Arguments: args2})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("call %s via %s: %v %+v", l.tool, l.name, err, res)
		}
		return d
	}
	for _, l := range legs[2:] {
		if l.tool != "alpha_echo" {
			continue
		}
		eventually(b, 30*time.Second, "alpha_echo served by "+l.name, func() bool {
			res, err := l.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha_echo", Arguments: args2})
			return err == nil && !res.IsError
		})
	}
	for range 50 { // warm every leg's connections, caches and the scheduler
		for _, l := range legs {
			call(l)
		}
	}
	// Each iteration calls the legs in the next of all their orders: each
	// leg is first, last and after each other leg equally often (a leg
	// always called after the same one measured 3% slower in an A/A run).
	orders := permutations(len(legs))
	i := 0
	for b.Loop() {
		for _, k := range orders[i%len(orders)] {
			l := legs[k]
			l.ds = append(l.ds, call(l))
		}
		i++
	}
	q := func(s []time.Duration, p float64) float64 {
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds())
	}
	for _, l := range legs {
		slices.Sort(l.ds)
		b.ReportMetric(q(l.ds, 0.5), l.name+"-p50-µs")
		b.ReportMetric(q(l.ds, 0.99), l.name+"-p99-µs")
	}
	d := q(legs[0].ds, 0.5)
	b.ReportMetric(q(legs[2].ds, 0.5)/d, "edge-ratio")
	b.ReportMetric(q(legs[1].ds, 0.5)/d, "forwarder-ratio")
	for _, l := range legs[3:] {
		b.ReportMetric(q(l.ds, 0.5)/d, l.name+"-ratio")
	}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append(make([]int, 0, n), p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// productionAuthorization is an authorization section as a production
// fleet has one: 20 deny rules with CEL conditions on the token's claims,
// none of which hides alpha_echo from a caller with role dev, and rate
// limits (identity, a tool rule, failed authentications) too high to
// refuse a call of the benchmark.
func productionAuthorization() string {
	var sb strings.Builder
	sb.WriteString("authorization:\n  default: allow\n  rules:\n")
	sb.WriteString("    - name: rule-00\n      effect: deny\n      tools: [\"*\"]\n      when: 'has(claims.roles) && \"blocked\" in claims.roles'\n")
	for i := 1; i < 20; i++ {
		fmt.Fprintf(&sb, "    - name: rule-%02d\n      effect: deny\n      tools: [\"other%02d_*\"]\n      when: '!(\"ops\" in claims.roles)'\n", i, i)
	}
	sb.WriteString("  rate_limits:\n")
	sb.WriteString("    identity: {requests_per_second: 100000, burst: 100000, concurrent_calls: 1000}\n")
	sb.WriteString("    tools:\n      - {name: alpha, tools: [\"alpha_*\"], requests_per_second: 100000, burst: 100000, per_identity: true}\n")
	sb.WriteString("    failed_auth: {per_address_per_minute: 10}\n")
	return sb.String()
}

// bearerRoundTripper sends every request with a bearer token.
type bearerRoundTripper struct {
	token string
	next  http.RoundTripper
}

func (t bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}
