package edge

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
)

// withName is hdr with Mcp-Name set to name.
func withName(hdr map[string]string, name string) map[string]string {
	out := map[string]string{"Mcp-Name": name}
	for k, v := range hdr {
		out[k] = v
	}
	return out
}

// A call refused for its headers is not a call: the call trail records
// neither one refused on the fast path nor one refused after the go-sdk
// decoded it (a body whose arguments member repeats).
func TestParamHeadersRefusalNotAudited(t *testing.T) {
	f := newSharedFleet(t)
	trail, err := calltrail.Open(t.Context(), f.js, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := startBackend(t, "alpha", nil)
	b.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(jsontest.RouteSchema)})
	f.healthyBackend("default", b)
	e := startRecordEdge(t, f, "a", nil, func(o *Options) { o.CallTrail = trail })
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_route"); return ok })
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":""},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	post := func(args string, hdr map[string]string) map[string]any {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{%s,"name":"alpha_route","arguments":%s}}`, meta, args)
		_, _, msg := statelessPost(t, e.MCPURL(), body, withName(hdr, "alpha_route"))
		return msg
	}
	for args, header := range map[string]string{
		`{"region":"eu"}`: "us", // on the fast path
		`{"region":"eu"},"arguments":{"region":"us"}`: "eu", // the go-sdk's: the last member
	} {
		if msg := post(args, map[string]string{"Mcp-Param-Region": header, userHeader: "alice"}); msg["error"] == nil {
			t.Fatalf("%s: %v, want refused", args, msg)
		}
	}
	if msg := post(`{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "eu", userHeader: "alice"}); msg["result"] == nil {
		t.Fatalf("good call: %v", msg)
	}
	eventually(t, 10*time.Second, "entries published", func() bool { return trail.Stats().Published >= 1 })
	cons, err := f.js.OrderedConsumer(t.Context(), calltrail.DefaultStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ent calltrail.Entry
	if err := json.Unmarshal(msg.Data(), &ent); err != nil || ent.Outcome != calltrail.OutcomeOK {
		t.Fatalf("first entry %+v (%v), want the good call", ent, err)
	}
	if extra, err := cons.Next(jetstream.FetchMaxWait(200 * time.Millisecond)); err == nil {
		t.Fatalf("another entry: %s", extra.Data())
	}
}
