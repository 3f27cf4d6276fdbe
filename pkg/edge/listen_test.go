package edge

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
)

// postListen opens a listen stream with raw HTTP; hdr overrides headers.
// The body is closed at cleanup.
func postListen(t *testing.T, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	return openStream(t, req, hdr)
}

// A listen stream the edge serves says what the go-sdk's says (the events
// below were captured from the go-sdk v1.8.0 server), and only for the
// kinds subscribed to.
func TestListenStream(t *testing.T) {
	cat := demoCatalog(t, "alpha")
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{Coalesce: time.Millisecond})
		e.upCatalog("alpha", cat)
		e.settle()
		testListenStream(t, e)
	})
}

// testListenStream is TestListenStream on e, serving alpha (the demo
// backend's catalog).
func testListenStream(t *testing.T, e *memoryEdge) {
	tools := postListen(t, e.MCPURL(), jsontest.ListenBody("2", `{"toolsListChanged":true}`), nil)
	prompts := postListen(t, e.MCPURL(), jsontest.ListenBody(`"p"`, `{"promptsListChanged":true,"toolsListChanged":false}`), nil)
	for _, r := range []*http.Response{tools, prompts} {
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, Content-Type %q", r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
	te, pe := readEvents(tools.Body), readEvents(prompts.Body)
	want := func(ch <-chan string, ev string) {
		t.Helper()
		if got, _ := nextEvent(t, ch, 5*time.Second); got != ev {
			t.Fatalf("event %s, want %s", got, ev)
		}
	}
	want(te, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"notifications":{"toolsListChanged":true}}}`)
	want(pe, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"p"},"notifications":{"promptsListChanged":true}}}`)
	synctest.Wait()
	if n := testutil.ToFloat64(e.m.streams); n != 2 {
		t.Fatalf("%v streams served by the edge; want both", n)
	}

	e.down("alpha") // the demo backend has tools, prompts and resources
	want(te, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}`)
	want(pe, `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"p"}}}`)
	select {
	case ev := <-te:
		t.Fatalf("tools stream: unexpected event %s", ev)
	case ev := <-pe:
		t.Fatalf("prompts stream: unexpected event %s", ev)
	case <-time.After(300 * time.Millisecond):
	}

	// The client leaving ends the stream and its session.
	tools.Body.Close()
	prompts.Body.Close()
	synctest.Wait()
	if n := len(e.Sessions()); n != 0 {
		t.Fatalf("%d sessions once the listen streams' clients left", n)
	}
}

// Requests the go-sdk would answer otherwise are left to it.
func TestListenLeftToGoSDK(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, nil)
	for _, c := range []struct {
		name string
		body string
		hdr  map[string]string
		want int
	}{
		{"protocol version in _meta differs from the header", strings.Replace(jsontest.ListenBody("1", `{"toolsListChanged":true}`),
			`protocolVersion":"2026-07-28"`, `protocolVersion":"2027-01-01"`, 1), nil, http.StatusBadRequest},
		{"Mcp-Method header differs", jsontest.ListenBody("1", `{"toolsListChanged":true}`), map[string]string{"Mcp-Method": "tools/list"}, http.StatusBadRequest},
		{"no client capabilities", strings.Replace(jsontest.ListenBody("1", `{"toolsListChanged":true}`),
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},`, ``, 1), nil, http.StatusBadRequest},
		{"no subscription", jsontest.ListenBody("1", `{}`), nil, http.StatusOK},
		{"body over the limit", func() string {
			b := jsontest.ListenBody("1", `{"toolsListChanged":true}`)
			return b + strings.Repeat(" ", maxBody+1-len(b))
		}(), nil, http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := postListen(t, e.MCPURL(), c.body, c.hdr)
			if r.StatusCode != c.want {
				t.Fatalf("status %d, want %d", r.StatusCode, c.want)
			}
			if n := testutil.ToFloat64(e.m.streams); n != 0 {
				t.Fatalf("%v streams served by the edge, want the go-sdk to have answered", n)
			}
		})
	}
}

// The edge's listen streams against the go-sdk's, byte for byte: the
// same requests to an edge that serves them and to one that leaves them
// all to the go-sdk give the same status, acknowledgement and
// list_changed, whichever of the two serves them (odd ids and _meta
// values are left to the go-sdk).
func TestListenMatchesGoSDK(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	own := startEdge(t, f, &Options{Coalesce: time.Millisecond})
	sdk := startEdge(t, f, &Options{Coalesce: time.Millisecond, paths: pathSwitches{goSDKListen: true}})
	subs := `{"toolsListChanged":true,"promptsListChanged":true}`
	bodies := []string{
		jsontest.ListenBody("2", subs),
		jsontest.ListenBody(`"s"`, subs),
		jsontest.ListenBody("-7", `{"resourcesListChanged":true}`),
		jsontest.ListenBody(`"a\u0041"`, subs),
		jsontest.ListenBody(`"\/x"`, subs),
		jsontest.ListenBody("9007199254740993", subs),
		jsontest.ListenBody("99999999999999999999", subs),
		strings.Replace(jsontest.ListenBody("3", subs), `"name":"raw"`, `"name":"raw","x":1e400`, 1),
		strings.Replace(jsontest.ListenBody("4", subs), `"io.modelcontextprotocol/protocolVersion"`, `"x":[-1e400],"io.modelcontextprotocol/protocolVersion"`, 1),
		strings.Replace(jsontest.ListenBody("5", subs), `,"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, "", 1),
	}
	type stream struct {
		status int
		events <-chan string
	}
	open := func(e *Edge, body string) stream {
		r := postListen(t, e.MCPURL(), body, nil)
		return stream{r.StatusCode, readEvents(r.Body)}
	}
	var owns, sdks []stream
	for _, b := range bodies {
		owns, sdks = append(owns, open(own, b)), append(sdks, open(sdk, b))
	}
	first := func(s stream) string {
		if s.status != http.StatusOK {
			return ""
		}
		ev, _ := nextEvent(t, s.events, 5*time.Second)
		return ev
	}
	for i, b := range bodies {
		o, g := first(owns[i]), first(sdks[i])
		if owns[i].status != sdks[i].status || o != g {
			t.Errorf("%s:\nedge   %d %s\ngo-sdk %d %s", b, owns[i].status, o, sdks[i].status, g)
		}
	}
	if testutil.ToFloat64(own.m.streams) < 3 {
		t.Fatalf("the edge served %v streams, want at least the plain ones", testutil.ToFloat64(own.m.streams))
	}
	f.health("default", "alpha", false)
	for i, b := range bodies {
		if owns[i].status != http.StatusOK {
			continue
		}
		// One event per subscribed kind (the go-sdk's order varies).
		var o, g []string
		for range strings.Count(b[strings.Index(b, `"notifications":`):], "true") {
			o, g = append(o, first(owns[i])), append(g, first(sdks[i]))
		}
		slices.Sort(o)
		slices.Sort(g)
		if !slices.Equal(o, g) {
			t.Errorf("%s: list_changed\nedge   %s\ngo-sdk %s", b, o, g)
		}
	}
}
