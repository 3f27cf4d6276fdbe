package edge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/sessionserver"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// rawSession is a client of the session-based protocol written by hand:
// the go-sdk client has no task methods.
type rawSession struct {
	t   testing.TB
	url string
	sid string
	n   int
}

// rpcReply is a JSON-RPC response as a raw client reads it.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends one request (or, with method prefixed "notifications/", a
// notification) and returns the HTTP response and its JSON-RPC reply.
func (c *rawSession) post(method string, params any) (*http.Response, rpcReply) {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !strings.HasPrefix(method, "notifications/") {
		c.n++
		msg["id"] = c.n
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(data))
		data = nil
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				data = []byte(d)
			}
		}
	}
	var r rpcReply
	if len(data) > 0 {
		if err := json.Unmarshal(data, &r); err != nil {
			c.t.Fatalf("%s: reply %q: %v", method, data, err)
		}
	}
	return res, r
}

// openRaw initializes a rawSession on url and returns it with the
// initialize result.
func openRaw(t testing.TB, url string) (*rawSession, json.RawMessage) {
	t.Helper()
	c := &rawSession{t: t, url: url}
	res, r := c.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if r.Error != nil || res.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %+v", res.StatusCode, r.Error)
	}
	c.sid = res.Header.Get("Mcp-Session-Id")
	c.post("notifications/initialized", nil)
	return c, r.Result
}

// ok is the result of a request that must succeed, decoded into v.
func (c *rawSession) ok(method string, params any, v any) json.RawMessage {
	c.t.Helper()
	_, r := c.post(method, params)
	if r.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result, v); err != nil {
			c.t.Fatalf("%s: result %s: %v", method, r.Result, err)
		}
	}
	return r.Result
}

// fails is the error code of a request that must fail.
func (c *rawSession) fails(method string, params any) int64 {
	c.t.Helper()
	_, r := c.post(method, params)
	if r.Error == nil {
		c.t.Fatalf("%s: succeeded with %s, want an error", method, r.Result)
	}
	return r.Error.Code
}

// addTaskBackend publishes b in group default, advertisable.
func addTaskBackend(f *fleet, b *taskBackend) {
	f.publish(events.NewBackendAdded(time.Now(), "default", b.Name(), events.BackendConfig{URL: b.URL(), Transport: "streamable-http"}))
	f.catalog("default", b.Name(), &events.Catalog{Tools: b.ToolDefs()})
	f.health("default", b.Name(), true)
}

type wireTask struct {
	TaskID string `json:"taskId"`
	Status string `json:"status"`
}

// startTaskFleet serves two task backends, alpha and beta, through one
// edge, and waits until both are served; it returns the edge, its fleet
// and alpha.
func startTaskFleet(t *testing.T) (*Edge, *fleet, *taskBackend) {
	t.Helper()
	f := newFleet(t)
	alpha, beta := startTaskBackend(t, "alpha"), startTaskBackend(t, "beta")
	addTaskBackend(f, alpha)
	addTaskBackend(f, beta)
	e := startEdge(t, f, nil)
	eventually(t, 10*time.Second, "both backends served", func() bool {
		_, a := e.current().Catalog.Tool("alpha_slow")
		_, b := e.current().Catalog.Tool("beta_slow")
		return a && b
	})
	return e, f, alpha
}

// Tasks through the edge: the capability and the tools' task support are
// advertised; a task-augmented call reaches the tool's backend with its
// task and comes back under an id unique across backends; tasks/get,
// tasks/list, tasks/result and tasks/cancel reach the owning backend;
// a tool without task support is refused before any backend sees it;
// another session cannot see or touch the tasks; plain calls still work.
func TestTasksThroughEdge(t *testing.T) {
	e, _, alpha := startTaskFleet(t)
	c, init := openRaw(t, e.MCPURL())
	var ir struct {
		Capabilities struct {
			Tasks json.RawMessage `json:"tasks"`
			Tools json.RawMessage `json:"tools"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(init, &ir); err != nil || string(ir.Capabilities.Tasks) != string(sessionserver.TasksCapability) || ir.Capabilities.Tools == nil {
		t.Fatalf("initialize capabilities: %s (%v)", init, err)
	}
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	c.ok("tools/list", nil, &list)
	support := map[string]string{}
	for _, tl := range list.Tools {
		if tl.Execution != nil {
			support[tl.Name] = tl.Execution.TaskSupport
		} else {
			support[tl.Name] = "-"
		}
	}
	if support["alpha_slow"] != "optional" || support["beta_needs_task"] != "required" || support["alpha_plain"] != "-" {
		t.Fatalf("task support in tools/list: %v", support)
	}

	var created struct{ Task wireTask }
	c.ok("tools/call", map[string]any{"name": "alpha_slow", "arguments": map[string]any{"text": "x"}, "task": map[string]any{"ttl": 60000}}, &created)
	if created.Task.TaskID != "alpha/t-1" || created.Task.Status != "working" {
		t.Fatalf("created %+v", created.Task)
	}
	got := alpha.Received("tools/call")
	var sent struct {
		Name string          `json:"name"`
		Task json.RawMessage `json:"task"`
	}
	if len(got) != 1 || json.Unmarshal(got[0], &sent) != nil || sent.Name != "slow" || !strings.Contains(string(sent.Task), "60000") {
		t.Fatalf("alpha received %s", got)
	}
	c.ok("tools/call", map[string]any{"name": "beta_needs_task", "arguments": map[string]any{"text": "y"}, "task": map[string]any{}}, &created)
	if created.Task.TaskID != "beta/t-1" {
		t.Fatalf("beta's task %+v: want an id apart from alpha's t-1", created.Task)
	}

	var task wireTask
	c.ok("tasks/get", map[string]any{"taskId": "alpha/t-1"}, &task)
	if task.TaskID != "alpha/t-1" || task.Status != "working" {
		t.Fatalf("tasks/get %+v", task)
	}
	var tl struct {
		Tasks      []wireTask `json:"tasks"`
		NextCursor string     `json:"nextCursor"`
	}
	c.ok("tasks/list", nil, &tl)
	if len(tl.Tasks) != 2 || tl.Tasks[0].TaskID != "alpha/t-1" || tl.Tasks[1].TaskID != "beta/t-1" || tl.NextCursor != "" {
		t.Fatalf("tasks/list %+v", tl)
	}
	if code := c.fails("tasks/list", map[string]any{"cursor": "not-a-cursor"}); code != -32602 {
		t.Fatalf("tasks/list with a bad cursor: %d", code)
	}

	alpha.Complete("t-1")
	var result struct {
		Content []struct{ Text string }
		Meta    map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	c.ok("tasks/result", map[string]any{"taskId": "alpha/t-1"}, &result)
	if len(result.Content) != 1 || result.Content[0].Text != "done x" || result.Meta[calls.RelatedTask].TaskID != "alpha/t-1" {
		t.Fatalf("tasks/result %+v", result)
	}
	if code := c.fails("tasks/cancel", map[string]any{"taskId": "alpha/t-1"}); code != -32602 {
		t.Fatalf("cancel of a completed task: %d, want the backend's -32602", code)
	}
	c.ok("tasks/cancel", map[string]any{"taskId": "beta/t-1"}, &task)
	if task.TaskID != "beta/t-1" || task.Status != "cancelled" {
		t.Fatalf("tasks/cancel %+v", task)
	}

	calls := len(alpha.Received("tools/call"))
	if code := c.fails("tools/call", map[string]any{"name": "alpha_plain", "arguments": map[string]any{}, "task": map[string]any{}}); code != -32601 {
		t.Fatalf("a task call of a tool without task support: %d, want -32601", code)
	}
	if code := c.fails("tasks/get", map[string]any{"taskId": "nope"}); code != -32602 {
		t.Fatalf("tasks/get of an unknown id: %d", code)
	}
	var plain struct{ Content []struct{ Text string } }
	c.ok("tools/call", map[string]any{"name": "alpha_slow", "arguments": map[string]any{"text": "now"}}, &plain)
	if len(plain.Content) != 1 || plain.Content[0].Text != "done now" {
		t.Fatalf("a plain call of a task tool: %+v", plain)
	}
	if n := len(alpha.Received("tools/call")); n != calls+1 {
		t.Fatalf("alpha got %d calls since, want 1 (the refused task call must not reach it)", n-calls)
	}

	other, _ := openRaw(t, e.MCPURL())
	if code := other.fails("tasks/get", map[string]any{"taskId": "alpha/t-1"}); code != -32602 {
		t.Fatalf("another session's tasks/get: %d, want not found", code)
	}
	if code := other.fails("tasks/cancel", map[string]any{"taskId": "alpha/t-1"}); code != -32602 {
		t.Fatalf("another session's tasks/cancel: %d", code)
	}
	other.ok("tasks/list", nil, &tl)
	if len(tl.Tasks) != 0 {
		t.Fatalf("another session lists %+v", tl.Tasks)
	}

	// A go-sdk client still initializes (the added capability) and calls.
	gc := connect(t, e.MCPURL(), "2025-11-25")
	if got := text(gc.call(t, "alpha_plain", map[string]any{"text": "sdk"})); got != "done sdk" {
		t.Fatalf("go-sdk client call: %q", got)
	}
}

// A session's tasks are in its record: the session, rebuilt on another
// edge, still reaches them; the record drops a task its backend forgot.
func TestTasksMoveWithSession(t *testing.T) {
	f := newSharedFleet(t)
	alpha := startTaskBackend(t, "alpha")
	addTaskBackend(f.fleet, alpha)
	anonymous := func(o *Options) { o.IdentityHeader = "" }
	a := startRecordEdge(t, f, "a", nil, anonymous)
	b := startRecordEdge(t, f, "b", nil, anonymous)
	for _, e := range []*Edge{a.Edge, b.Edge} {
		eventually(t, 10*time.Second, "alpha served", func() bool { _, ok := e.current().Catalog.Tool("alpha_slow"); return ok })
	}
	c, _ := openRaw(t, a.MCPURL())
	var created struct{ Task wireTask }
	c.ok("tools/call", map[string]any{"name": "alpha_slow", "arguments": map[string]any{"text": "moved"}, "task": map[string]any{}}, &created)
	eventually(t, 10*time.Second, "the task in the stored record", func() bool {
		rec := stored(t, a.Edge, c.sid)
		return rec != nil && len(rec.Tasks) == 1 && rec.Tasks[0] == sessionstore.TaskRef{Backend: "alpha", ID: "t-1", Tool: "alpha_slow"}
	})
	moved := &rawSession{t: t, url: b.MCPURL(), sid: c.sid, n: 100}
	var task wireTask
	moved.ok("tasks/get", map[string]any{"taskId": created.Task.TaskID}, &task)
	if task.TaskID != "alpha/t-1" || task.Status != "working" {
		t.Fatalf("tasks/get on edge b: %+v", task)
	}
	alpha.Complete("t-1")
	var result struct{ Content []struct{ Text string } }
	moved.ok("tasks/result", map[string]any{"taskId": "alpha/t-1"}, &result)
	if len(result.Content) != 1 || result.Content[0].Text != "done moved" {
		t.Fatalf("tasks/result on edge b: %+v", result)
	}
	var tl struct{ Tasks []wireTask }
	moved.ok("tasks/list", nil, &tl)
	if len(tl.Tasks) != 1 || tl.Tasks[0].TaskID != "alpha/t-1" || tl.Tasks[0].Status != "completed" {
		t.Fatalf("tasks/list on edge b: %+v", tl)
	}
}

// A task-augmented call is recorded in the call trail like any call: the
// tool, its backend's own name, the outcome; a refused one (a tool no
// backend serves) too.
func TestTaskCallsInTrail(t *testing.T) {
	f := newSharedFleet(t)
	trail, err := calltrail.Open(t.Context(), f.js, nil)
	if err != nil {
		t.Fatal(err)
	}
	alpha := startTaskBackend(t, "alpha")
	addTaskBackend(f.fleet, alpha)
	e := startEdge(t, f.fleet, &Options{CallTrail: trail})
	eventually(t, 10*time.Second, "alpha served", func() bool { _, ok := e.current().Catalog.Tool("alpha_slow"); return ok })
	c, _ := openRaw(t, e.MCPURL())
	var created struct{ Task struct{ TaskID string } }
	c.ok("tools/call", map[string]any{"name": "alpha_slow", "arguments": map[string]any{"text": "x"}, "task": map[string]any{"ttl": 60000}}, &created)
	if created.Task.TaskID == "" {
		t.Fatal("no task made")
	}
	c.fails("tools/call", map[string]any{"name": "nobody_slow", "arguments": map[string]any{}, "task": map[string]any{}})
	got := trailEntries(t, f, trail, 2)
	if ok := got[0]; ok.Tool != "alpha_slow" || ok.BackendTool != "slow" || ok.Backend != "alpha" || ok.Outcome != calltrail.OutcomeOK {
		t.Fatalf("entry of the task call %+v", ok)
	}
	if bad := got[1]; bad.Tool != "nobody_slow" || bad.Outcome != calltrail.OutcomeError {
		t.Fatalf("entry of the refused task call %+v", bad)
	}
}
