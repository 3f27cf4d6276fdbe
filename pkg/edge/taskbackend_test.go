package edge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskBackend is a hand-written MCP 2025-11-25 server supporting the
// tasks utility, which go-sdk v1.8.0 lacks: JSON-RPC over streamable HTTP,
// each request answered by one application/json body (no SSE; GET is 405).
// Its tools are slow (taskSupport optional), needs_task (required) and
// plain (none). Tasks stay working until Complete or tasks/cancel; their
// ids are t-1, t-2, … per instance, so two instances mint the same ids.
type taskBackend struct {
	name  string
	ts    *httptest.Server
	tools []json.RawMessage
	quit  chan struct{} // closed at cleanup: releases tasks/result waiters

	mu       sync.Mutex
	sessions map[string]bool
	tasks    map[string]*tbTask
	order    []string // task ids in creation order
	received map[string][]json.RawMessage
}

// tbTask is a Task; its exported fields are guarded by taskBackend.mu.
type tbTask struct {
	ID            string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`

	text string        // the call's arguments.text
	done chan struct{} // closed once, on reaching a terminal status
}

func (k *tbTask) terminal() bool {
	return k.Status == "completed" || k.Status == "failed" || k.Status == "cancelled"
}

// finish moves k to the terminal status st; b.mu must be held.
func (k *tbTask) finish(st, msg string) {
	k.Status, k.StatusMessage = st, msg
	k.LastUpdatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	close(k.done)
}

// tbError is a JSON-RPC error object.
type tbError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *tbError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

const (
	tbMaxBody  = 1 << 20
	tbPageSize = 2
)

// startTaskBackend serves a taskBackend on 127.0.0.1 until the test ends.
func startTaskBackend(t testing.TB, name string) *taskBackend {
	t.Helper()
	b := &taskBackend{name: name, quit: make(chan struct{}), sessions: map[string]bool{},
		tasks: map[string]*tbTask{}, received: map[string][]json.RawMessage{}}
	schema := `"inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}`
	for _, d := range []struct{ name, exec string }{
		{"slow", `,"execution":{"taskSupport":"optional"}`},
		{"needs_task", `,"execution":{"taskSupport":"required"}`},
		{"plain", ""},
	} {
		b.tools = append(b.tools, json.RawMessage(fmt.Sprintf(`{"name":%q,%s%s}`, d.name, schema, d.exec)))
	}
	b.ts = httptest.NewServer(http.HandlerFunc(b.serveHTTP))
	t.Cleanup(func() {
		close(b.quit) // blocked tasks/result handlers return, so Close does not hang
		b.ts.Close()
	})
	return b
}

func (b *taskBackend) Name() string { return b.name }
func (b *taskBackend) URL() string  { return b.ts.URL + "/mcp" }

// ToolDefs returns the tool definitions exactly as tools/list returns them.
func (b *taskBackend) ToolDefs() []json.RawMessage { return tbClone(b.tools) }

// Complete moves a working task to completed; it ignores unknown and
// terminal ids.
func (b *taskBackend) Complete(taskID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := b.tasks[taskID]; k != nil && !k.terminal() {
		k.finish("completed", "")
	}
}

// Received returns the params of every request of method received so far.
func (b *taskBackend) Received(method string) []json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return tbClone(b.received[method])
}

func tbClone(msgs []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = bytes.Clone(m)
	}
	return out
}

func (b *taskBackend) serveHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method == http.MethodDelete {
		b.mu.Lock()
		known := b.sessions[sid]
		delete(b.sessions, sid)
		b.mu.Unlock()
		if known {
			w.WriteHeader(http.StatusNoContent)
		} else {
			http.Error(w, "session not found", http.StatusNotFound)
		}
		return
	}
	if r.Method != http.MethodPost { // GET too: there is no standalone SSE stream
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, tbMaxBody)).Decode(&msg); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		} else {
			tbWrite(w, json.RawMessage("null"), nil, &tbError{-32700, "parse error"})
		}
		return
	}
	b.mu.Lock()
	if msg.Method == "initialize" {
		sid = rand.Text()
		b.sessions[sid] = true
		w.Header().Set("Mcp-Session-Id", sid)
	}
	known := b.sessions[sid]
	if known && msg.Method != "" {
		b.received[msg.Method] = append(b.received[msg.Method], msg.Params)
	}
	b.mu.Unlock()
	switch {
	case sid == "":
		http.Error(w, "missing Mcp-Session-Id", http.StatusBadRequest)
	case !known:
		http.Error(w, "session not found", http.StatusNotFound)
	case msg.Method == "" || len(msg.ID) == 0 || string(msg.ID) == "null":
		w.WriteHeader(http.StatusAccepted) // a notification or a response
	default:
		res, rerr := b.dispatch(r.Context(), msg.Method, msg.Params)
		tbWrite(w, msg.ID, res, rerr)
	}
}

func tbWrite(w http.ResponseWriter, id json.RawMessage, res any, rerr *tbError) {
	out := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		out["error"] = rerr
	} else {
		out["result"] = res
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (b *taskBackend) dispatch(ctx context.Context, method string, params json.RawMessage) (any, *tbError) {
	switch method {
	case "initialize":
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},` +
			`"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},` +
			`"serverInfo":{"name":` + strconv.Quote(b.name) + `,"version":"1"}}`), nil
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		return map[string]any{"tools": b.tools}, nil
	case "tools/call":
		return b.callTool(params)
	case "tasks/list":
		return b.listTasks(params)
	case "tasks/get", "tasks/result", "tasks/cancel":
	default:
		return nil, &tbError{-32601, "method not found: " + method}
	}
	var p struct{ TaskID string }
	_ = json.Unmarshal(params, &p)
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.tasks[p.TaskID]
	switch {
	case k == nil:
		return nil, &tbError{-32602, "unknown task " + strconv.Quote(p.TaskID)}
	case method == "tasks/cancel" && k.terminal():
		return nil, &tbError{-32602, "task " + p.TaskID + " is already " + k.Status}
	case method == "tasks/cancel":
		k.finish("cancelled", "The task was cancelled by request.")
	case method == "tasks/result":
		b.mu.Unlock() // wait unlocked; the deferred Unlock pairs with the Lock below
		select {
		case <-k.done:
		case <-ctx.Done(): // the requestor went away
		case <-b.quit: // cleanup
		}
		b.mu.Lock()
		if k.Status != "completed" { // cancelled, or still working
			return nil, &tbError{-32603, "task " + k.Status}
		}
		return tbToolResult(k.text, k.ID), nil
	}
	return json.RawMessage(tbMarshal(k)), nil // b.mu held: a consistent snapshot
}

func tbMarshal(v any) []byte { data, _ := json.Marshal(v); return data }

// tbToolResult is the CallToolResult of a call with text; with a task id
// it carries the related-task meta.
func tbToolResult(text, taskID string) map[string]any {
	res := map[string]any{"content": []any{map[string]any{"type": "text", "text": "done " + text}}}
	if taskID != "" {
		res["_meta"] = map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": taskID}}
	}
	return res
}

func (b *taskBackend) callTool(params json.RawMessage) (any, *tbError) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
		Task json.RawMessage `json:"task"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &tbError{-32602, "bad tools/call params: " + err.Error()}
	}
	asTask := len(p.Task) > 0 && string(p.Task) != "null"
	var task struct{ TTL *int64 }
	if asTask && (p.Task[0] != '{' || json.Unmarshal(p.Task, &task) != nil) {
		return nil, &tbError{-32602, "params.task must be an object"}
	}
	switch {
	case p.Name != "slow" && p.Name != "needs_task" && p.Name != "plain":
		return nil, &tbError{-32602, "unknown tool " + strconv.Quote(p.Name)}
	case p.Name == "needs_task" && !asTask:
		return nil, &tbError{-32601, "tool needs_task must be invoked as a task"}
	case p.Name == "plain" && asTask:
		return nil, &tbError{-32601, "tool plain does not support tasks"}
	case !asTask:
		return tbToolResult(p.Arguments.Text, ""), nil
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	b.mu.Lock()
	defer b.mu.Unlock()
	k := &tbTask{ID: "t-" + strconv.Itoa(len(b.order)+1), Status: "working", CreatedAt: now,
		LastUpdatedAt: now, TTL: 60000, PollInterval: 100, text: p.Arguments.Text, done: make(chan struct{})}
	if task.TTL != nil {
		k.TTL = *task.TTL
	}
	b.tasks[k.ID] = k
	b.order = append(b.order, k.ID)
	return json.RawMessage(`{"task":` + string(tbMarshal(k)) + `}`), nil
}

func (b *taskBackend) listTasks(params json.RawMessage) (any, *tbError) {
	var p struct{ Cursor *string }
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, &tbError{-32602, "bad tasks/list params"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	start := 0
	if p.Cursor != nil {
		raw, _ := base64.RawURLEncoding.DecodeString(*p.Cursor)
		digits, ok := strings.CutPrefix(string(raw), "tasks@")
		n, err := strconv.Atoi(digits)
		if !ok || err != nil || n <= 0 || n > len(b.order) {
			return nil, &tbError{-32602, "bad cursor"}
		}
		start = n
	}
	end := min(start+tbPageSize, len(b.order))
	page := []json.RawMessage{}
	for _, id := range b.order[start:end] {
		page = append(page, tbMarshal(b.tasks[id]))
	}
	res := map[string]any{"tasks": page}
	if end < len(b.order) {
		res["nextCursor"] = base64.RawURLEncoding.EncodeToString([]byte("tasks@" + strconv.Itoa(end)))
	}
	return res, nil
}

// tbPost posts one JSON-RPC request on session sid and decodes the answer.
func tbPost(ctx context.Context, c *http.Client, url, sid, method string, params any) (json.RawMessage, *tbError, error) {
	body := tbMarshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: HTTP %s", method, resp.Status)
	}
	var out struct {
		Result json.RawMessage
		Error  *tbError
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.Result, out.Error, err
}

func TestTaskBackend(t *testing.T) {
	b := startTaskBackend(t, "tasky")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL(), HTTPClient: b.ts.Client(),
		DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("protocol version %q", v)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 3 || tools.Tools[0].Name != "slow" || tools.Tools[2].Name != "plain" {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}

	// post answers a raw request on the session: its result, or its error.
	post := func(method string, params any) string {
		res, rerr, err := tbPost(ctx, b.ts.Client(), b.URL(), cs.ID(), method, params)
		if err != nil {
			return err.Error()
		} else if rerr != nil {
			return rerr.Error()
		}
		return string(res)
	}
	expect := func(method string, params any, want string) string {
		t.Helper()
		got := post(method, params)
		if !strings.Contains(got, want) {
			t.Fatalf("%s %v: got %s, want %s", method, params, got, want)
		}
		return got
	}
	// waitResult runs tasks/result in the background, once the backend holds it.
	waitResult := func(id string) <-chan string {
		n, ch := len(b.Received("tasks/result")), make(chan string, 1)
		go func() { ch <- post("tasks/result", map[string]any{"taskId": id}) }()
		for len(b.Received("tasks/result")) == n && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		return ch
	}
	id := func(id string) map[string]any { return map[string]any{"taskId": id} }
	task := map[string]any{}

	expect("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"text": "x"}, "task": map[string]any{"ttl": 5000}},
		`{"task":{"taskId":"t-1","status":"working",`)
	expect("tasks/get", id("t-1"), `"ttl":5000,"pollInterval":100}`)
	got := waitResult("t-1")
	b.Complete("t-1")
	b.Complete("t-1") // terminal: a no-op
	b.Complete("nope")
	if r := <-got; r != `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}},"content":[{"text":"done x","type":"text"}]}` {
		t.Fatalf("tasks/result: %s", r)
	}
	expect("tasks/get", id("t-1"), `"status":"completed"`)
	expect("tasks/cancel", id("t-1"), "error -32602")
	expect("tasks/get", id("t-9"), "error -32602")

	// A cancel wakes a tasks/result waiter with an error.
	expect("tools/call", map[string]any{"name": "needs_task", "task": task}, `"taskId":"t-2","status":"working"`)
	got = waitResult("t-2")
	expect("tasks/cancel", id("t-2"), `"status":"cancelled"`)
	if r := <-got; !strings.Contains(r, "error -32603: task cancelled") {
		t.Fatalf("tasks/result of a cancelled task: %s", r)
	}

	// tasks/list pages over every task, 2 at a time.
	expect("tools/call", map[string]any{"name": "slow", "task": task}, `"taskId":"t-3"`)
	var page struct{ NextCursor string }
	_ = json.Unmarshal([]byte(expect("tasks/list", map[string]any{}, `"tasks":[{"taskId":"t-1",`)), &page)
	if page.NextCursor == "" || strings.Contains(post("tasks/list", nil), "t-3") {
		t.Fatalf("tasks/list first page: no cursor, or t-3")
	}
	if r := expect("tasks/list", map[string]any{"cursor": page.NextCursor}, `{"tasks":[{"taskId":"t-3","status":"working"`); strings.Contains(r, "nextCursor") {
		t.Fatalf("tasks/list last page: %s", r)
	}
	expect("tasks/list", map[string]any{"cursor": "bogus"}, "error -32602")

	expect("tools/call", map[string]any{"name": "needs_task"}, "error -32601")
	expect("tools/call", map[string]any{"name": "plain", "task": task}, "error -32601")
	expect("tools/call", map[string]any{"name": "plain", "arguments": map[string]any{"text": "p"}}, `"done p"`)
	expect("resources/list", nil, "error -32601")
	if _, _, err := tbPost(ctx, b.ts.Client(), b.URL(), "nope", "ping", nil); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("unknown session: %v", err)
	}
	if n := len(b.Received("tools/call")); n != 6 {
		t.Fatalf("Received(tools/call): %d", n)
	}
}
