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

func (e *tbError) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

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
func (b *taskBackend) ToolDefs() []json.RawMessage {
	out := make([]json.RawMessage, len(b.tools))
	for i, d := range b.tools {
		out[i] = bytes.Clone(d)
	}
	return out
}

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
	out := make([]json.RawMessage, len(b.received[method]))
	for i, p := range b.received[method] {
		out[i] = bytes.Clone(p)
	}
	return out
}

func (b *taskBackend) serveHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		b.mu.Lock()
		known := b.sessions[sid]
		delete(b.sessions, sid)
		b.mu.Unlock()
		if !known {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	default: // GET included: no standalone SSE stream
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
			return
		}
		tbWrite(w, json.RawMessage("null"), nil, &tbError{-32700, "parse error"})
		return
	}
	b.mu.Lock()
	if msg.Method == "initialize" {
		sid = rand.Text()
		b.sessions[sid] = true
	}
	known := b.sessions[sid]
	if known && msg.Method != "" {
		b.received[msg.Method] = append(b.received[msg.Method], msg.Params)
	}
	b.mu.Unlock()
	switch {
	case sid == "":
		http.Error(w, "missing Mcp-Session-Id", http.StatusBadRequest)
		return
	case !known:
		http.Error(w, "session not found", http.StatusNotFound)
		return
	case msg.Method == "" || len(msg.ID) == 0 || string(msg.ID) == "null":
		w.WriteHeader(http.StatusAccepted) // a notification or a response
		return
	}
	if msg.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", sid)
	}
	res, rerr := b.dispatch(r.Context(), msg.Method, msg.Params)
	tbWrite(w, msg.ID, res, rerr)
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
	var p struct {
		TaskID string `json:"taskId"`
	}
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
	case method == "tasks/result": // waits unlocked; every return below holds b.mu again
		b.mu.Unlock()
		select {
		case <-k.done:
		case <-ctx.Done():
			b.mu.Lock()
			return nil, &tbError{-32603, "request ended"}
		case <-b.quit:
			b.mu.Lock()
			return nil, &tbError{-32603, "backend closing"}
		}
		b.mu.Lock()
		if k.Status != "completed" {
			return nil, &tbError{-32603, "task " + k.Status}
		}
		return tbToolResult(k.text, k.ID), nil
	}
	return json.RawMessage(tbMarshal(k)), nil // b.mu held: a consistent snapshot
}

func tbMarshal(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

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
	var task struct {
		TTL *int64 `json:"ttl"`
	}
	if asTask && (p.Task[0] != '{' || json.Unmarshal(p.Task, &task) != nil) {
		return nil, &tbError{-32602, "params.task must be an object"}
	}
	switch p.Name {
	case "slow":
	case "needs_task":
		if !asTask {
			return nil, &tbError{-32601, "tool needs_task must be invoked as a task"}
		}
	case "plain":
		if asTask {
			return nil, &tbError{-32601, "tool plain does not support tasks"}
		}
	default:
		return nil, &tbError{-32602, "unknown tool " + strconv.Quote(p.Name)}
	}
	if !asTask {
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
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, &tbError{-32602, "bad tasks/list params"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	start := 0
	if p.Cursor != nil {
		raw, err := base64.RawURLEncoding.DecodeString(*p.Cursor)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(raw), "tasks@"))
		if err != nil || err2 != nil || !strings.HasPrefix(string(raw), "tasks@") || n <= 0 || n > len(b.order) {
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
	req.Header.Set("Accept", "application/json, text/event-stream")
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
		Result json.RawMessage `json:"result"`
		Error  *tbError        `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", method, err)
	}
	return out.Result, out.Error, nil
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
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}

	call := func(method string, params any) (json.RawMessage, *tbError) {
		t.Helper()
		res, rerr, err := tbPost(ctx, b.ts.Client(), b.URL(), cs.ID(), method, params)
		if err != nil {
			t.Fatal(err)
		}
		return res, rerr
	}
	wantCode := func(code int, method string, params any) {
		t.Helper()
		if _, rerr := call(method, params); rerr == nil || rerr.Code != code {
			t.Fatalf("%s %v: got %v, want code %d", method, params, rerr, code)
		}
	}
	// waitResult runs tasks/result in the background once the backend holds it.
	waitResult := func(id string) <-chan string {
		t.Helper()
		n, ch := len(b.Received("tasks/result")), make(chan string, 1)
		go func() {
			res, rerr, err := tbPost(ctx, b.ts.Client(), b.URL(), cs.ID(), "tasks/result", map[string]any{"taskId": id})
			switch {
			case err != nil:
				ch <- err.Error()
			case rerr != nil:
				ch <- rerr.Error()
			default:
				ch <- string(res)
			}
		}()
		for len(b.Received("tasks/result")) == n && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		return ch
	}
	var created struct{ Task tbTask }
	res, rerr := call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"text": "x"}, "task": map[string]any{"ttl": 5000}})
	if rerr != nil || json.Unmarshal(res, &created) != nil || created.Task.ID != "t-1" ||
		created.Task.Status != "working" || created.Task.TTL != 5000 || created.Task.PollInterval != 100 {
		t.Fatalf("create: %s %v", res, rerr)
	}
	if res, _ := call("tasks/get", map[string]any{"taskId": "t-1"}); !strings.Contains(string(res), `"status":"working"`) {
		t.Fatalf("tasks/get: %s", res)
	}
	got := waitResult("t-1")
	b.Complete("t-1")
	b.Complete("t-1") // terminal: a no-op
	b.Complete("nope")
	if r := <-got; r != `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}},"content":[{"text":"done x","type":"text"}]}` {
		t.Fatalf("tasks/result: %s", r)
	}
	if res, _ := call("tasks/get", map[string]any{"taskId": "t-1"}); !strings.Contains(string(res), `"status":"completed"`) {
		t.Fatalf("tasks/get after Complete: %s", res)
	}
	wantCode(-32602, "tasks/cancel", map[string]any{"taskId": "t-1"})
	wantCode(-32602, "tasks/get", map[string]any{"taskId": "t-9"})

	// A cancel wakes a tasks/result waiter with an error.
	if _, rerr := call("tools/call", map[string]any{"name": "needs_task", "task": map[string]any{}}); rerr != nil {
		t.Fatal(rerr)
	}
	got = waitResult("t-2")
	if res, rerr := call("tasks/cancel", map[string]any{"taskId": "t-2"}); rerr != nil || !strings.Contains(string(res), `"status":"cancelled"`) {
		t.Fatalf("tasks/cancel: %s %v", res, rerr)
	}
	if r := <-got; !strings.Contains(r, "-32603") {
		t.Fatalf("tasks/result of a cancelled task: %s", r)
	}

	// tasks/list pages 2 at a time over every task.
	call("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	var page struct {
		Tasks      []tbTask
		NextCursor string
	}
	res, _ = call("tasks/list", map[string]any{})
	if json.Unmarshal(res, &page) != nil || len(page.Tasks) != 2 || page.Tasks[0].ID != "t-1" || page.NextCursor == "" {
		t.Fatalf("tasks/list: %s", res)
	}
	res, _ = call("tasks/list", map[string]any{"cursor": page.NextCursor})
	page.NextCursor = ""
	if json.Unmarshal(res, &page) != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != "t-3" || page.NextCursor != "" {
		t.Fatalf("tasks/list page 2: %s", res)
	}
	wantCode(-32602, "tasks/list", map[string]any{"cursor": "bogus"})

	wantCode(-32601, "tools/call", map[string]any{"name": "needs_task"})
	wantCode(-32601, "tools/call", map[string]any{"name": "plain", "task": map[string]any{}})
	wantCode(-32601, "resources/list", map[string]any{})
	if res, rerr := call("tools/call", map[string]any{"name": "plain", "arguments": map[string]any{"text": "p"}}); rerr != nil || !strings.Contains(string(res), `"done p"`) {
		t.Fatalf("plain: %s %v", res, rerr)
	}
	if _, _, err := tbPost(ctx, b.ts.Client(), b.URL(), "nope", "ping", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown session: %v", err)
	}
	if n := len(b.Received("tools/call")); n != 6 {
		t.Fatalf("Received(tools/call): %d", n)
	}
}
