package verify

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// Tools with fields the go-sdk mcp.Tool struct does not carry ("execution",
// unknown extensions): the digest must be over the raw definitions.
const (
	toolA = `{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`
	toolB = `{"name":"b","inputSchema":{"type":"object"},"x-vendor":1}`
	toolC = `{"name":"c","description":"third","inputSchema":{"type":"object"}}`
)

func digestOf(t *testing.T, tools ...string) string {
	t.Helper()
	raws := make([]json.RawMessage, len(tools))
	for i, s := range tools {
		raws[i] = json.RawMessage(s)
	}
	d, err := catalog.Digest(raws)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRunTraversal(t *testing.T) {
	all := digestOf(t, toolA, toolB, toolC)
	if all == digestOf(t, `{"name":"a","inputSchema":{"type":"object"}}`, toolB, toolC) {
		t.Fatal("execution does not change the digest; the raw-capture test would prove nothing")
	}
	for _, tc := range []struct {
		name     string
		pages    map[string]string
		maxPages int
		verdict  convergence.Status
		cursors  []string
		errText  string // substring of Report.Error; "" for none
		requests int32  // tools/list requests the server must see
	}{
		{
			name: "raw fields kept across pages",
			pages: map[string]string{
				"":   `{"tools":[` + toolA + `],"nextCursor":"p2"}`,
				"p2": `{"tools":[` + toolB + `,` + toolC + `]}`,
			},
			verdict: convergence.Converged, cursors: []string{"", "p2"}, requests: 2,
		},
		{
			name: "cursor loop",
			pages: map[string]string{
				"":   `{"tools":[` + toolA + `],"nextCursor":"p2"}`,
				"p2": `{"tools":[` + toolB + `],"nextCursor":"p3"}`,
				"p3": `{"tools":[` + toolC + `],"nextCursor":"p2"}`,
			},
			verdict: convergence.Incomplete, cursors: []string{"", "p2", "p3"}, errText: `cursor loop: nextCursor "p2"`, requests: 3,
		},
		{
			name: "max pages",
			pages: map[string]string{
				"":   `{"tools":[` + toolA + `],"nextCursor":"p2"}`,
				"p2": `{"tools":[` + toolB + `],"nextCursor":"p3"}`,
				"p3": `{"tools":[` + toolC + `]}`,
			},
			maxPages: 2, verdict: convergence.Incomplete, cursors: []string{"", "p2"}, errText: "stopped after 2 pages", requests: 2,
		},
		{
			name:    "second page fails",
			pages:   map[string]string{"": `{"tools":[` + toolA + `],"nextCursor":"gone"}`},
			verdict: convergence.Incomplete, cursors: []string{""}, errText: `invalid cursor "gone"`, requests: 2,
		},
		{
			name:    "first page fails",
			pages:   map[string]string{},
			verdict: convergence.Unverifiable, cursors: []string{}, errText: "JSON-RPC error -32602", requests: 1,
		},
		{
			name:    "invalid tool definition",
			pages:   map[string]string{"": `{"tools":[{"name":7}]}`},
			verdict: convergence.Unverifiable, cursors: []string{""}, errText: "digest", requests: 1,
		},
	} {
		for _, sse := range []bool{false, true} {
			name := tc.name + map[bool]string{false: "/json", true: "/sse"}[sse]
			t.Run(name, func(t *testing.T) {
				f := &fakeServer{pages: tc.pages, sse: sse}
				rep, err := Run(t.Context(), Options{URL: f.start(t), ExpectDigest: all, MaxPages: tc.maxPages})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Verdict != tc.verdict {
					t.Errorf("verdict %s (%s), want %s", rep.Verdict, rep.Reason, tc.verdict)
				}
				if strings.Join(rep.Cursors, ",") != strings.Join(tc.cursors, ",") || len(rep.Cursors) != len(tc.cursors) {
					t.Errorf("cursors %q, want %q", rep.Cursors, tc.cursors)
				}
				if (tc.errText == "") != (rep.Error == "") || !strings.Contains(rep.Error, tc.errText) {
					t.Errorf("error %q, want one containing %q", rep.Error, tc.errText)
				}
				if got := f.lists.Load(); got != tc.requests {
					t.Errorf("server saw %d tools/list requests, want %d", got, tc.requests)
				}
				if tc.verdict == convergence.Converged && (rep.Digest != all || rep.ListChanged || rep.ProtocolVersion != "2025-06-18") {
					t.Errorf("digest %s want %s; listChanged %v version %q", rep.Digest, all, rep.ListChanged, rep.ProtocolVersion)
				}
				if tc.verdict != convergence.Converged && rep.ExitCode() == ExitConverged {
					t.Error("exit 0 for a verdict other than converged")
				}
			})
		}
	}
}

func TestReadResponse(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body string
		result            string // "" means an error is expected
		err               error
	}{
		{"json", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"x":1}}`, `{"x":1}`, nil},
		{"json with charset", "application/json; charset=utf-8", `{"jsonrpc":"2.0","id":3,"result":{}}`, `{}`, nil},
		{"json batch", "application/json", `[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":3,"result":[1]}]`, `[1]`, nil},
		{"json other id", "application/json", `{"jsonrpc":"2.0","id":4,"result":{}}`, "", ErrNoResponse},
		// JSON-RPC: the response's id is the request's, of the same type.
		{"json string id for a number", "application/json", `{"jsonrpc":"2.0","id":"3","result":{}}`, "", ErrNoResponse},
		{"json too deep", "application/json", `{"jsonrpc":"2.0","id":3,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, "", mcpwire.ErrTooDeep},
		{"sse too deep", "text/event-stream", "data: " + strings.Repeat("[", 1<<20) + "\n\n", "", mcpwire.ErrTooDeep},
		{"sse priming event", "text/event-stream", "id: 1\ndata:\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":1}\r\n\r\n", `1`, nil},
		{"sse skips notifications and requests", "text/event-stream",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
				": comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n\n" +
				"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}\n\n", `{"ok":true}`, nil},
		{"sse multi-line data", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":3,\"result\":2}\n\n", `2`, nil},
		{"sse without final blank line", "text/event-stream", "data:{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":5}", `5`, nil},
		{"sse ends early", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n", "", ErrNoResponse},
		{"html", "text/html", "<html>", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {tc.ctype}}, Body: io.NopCloser(strings.NewReader(tc.body))}
			m, err := readResponse(resp, 3)
			if tc.result == "" {
				if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Result) != tc.result {
				t.Errorf("result %s, want %s", m.Result, tc.result)
			}
		})
	}
}

// TestReadResponseTooLarge: a JSON body over maxBody, and an event over
// maxBody, are refused with ErrTooLarge (not read whole, not cut short).
func TestReadResponseTooLarge(t *testing.T) {
	for _, tc := range []struct{ ctype, head string }{
		{"application/json", `{"jsonrpc":"2.0","id":3,"result":"`},
		{"text/event-stream", `data: {"jsonrpc":"2.0","id":3,"result":"`},
	} {
		body := io.MultiReader(strings.NewReader(tc.head), io.LimitReader(xs{}, maxBody))
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {tc.ctype}}, Body: io.NopCloser(body)}
		if _, err := readResponse(resp, 3); !errors.Is(err, mcpwire.ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", tc.ctype, err)
		}
	}
}

// xs is an endless stream of 'x'.
type xs struct{}

func (xs) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
