package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Tasks (MCP 2025-11-25, experimental) through the edge. A client of the
// session-based protocol may make a tools/call a task when the tool's
// definition says execution.taskSupport "optional" or "required"; the
// edge advertises the tasks capability (list, cancel, tools/call) and
// serves each tool's execution member in tools/list as the backend gave
// it (lists serve the definitions the view holds; taskfields.go).
//
// The go-sdk knows no task method, so the edge answers them before it:
// a tools/call with params.task and tasks/get, tasks/result, tasks/cancel
// and tasks/list of a session held here (Edge.post). A task lives at the
// backend whose tool made it, which knows the edge's pooled session only,
// not the client: every task a session creates is kept in that session's
// table (and its session record, so that an edge that rebuilds the
// session has them too), under an id unique across backends (taskID), and
// a task method reaches only the tasks of its own session's table. tasks/list lists
// them by asking their backends for each (tasks/get).
//
// Left out: a task's notifications/tasks/status and the requests a
// backend sends while a task waits for input (they would need a stream
// per task); tasks over the 2026-07-28 protocol (an extension there) and
// in optimizer mode.

// taskRef is where a task lives: its backend and the backend's id for it.
type taskRef struct{ backend, id string }

// taskID is the id a client knows a backend's task by.
func taskID(backend, id string) string { return backend + "/" + id }

// sessionTasks are the tasks one session created here, by taskID.
type sessionTasks struct {
	mu    sync.Mutex
	refs  map[string]taskRef
	order []string // oldest first
}

// maxSessionTasks bounds a session's table (as its record's); the oldest
// task goes first.
const maxSessionTasks = sessionstore.MaxTasks

func (t *sessionTasks) add(id string, ref taskRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refs == nil {
		t.refs = map[string]taskRef{}
	}
	if _, ok := t.refs[id]; ok {
		return
	}
	for len(t.order) >= maxSessionTasks {
		delete(t.refs, t.order[0])
		t.order = t.order[1:]
	}
	t.refs[id] = ref
	t.order = append(t.order, id)
}

func (t *sessionTasks) get(id string) (taskRef, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ref, ok := t.refs[id]
	return ref, ok
}

func (t *sessionTasks) drop(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.refs[id]; !ok {
		return
	}
	delete(t.refs, id)
	for i, o := range t.order {
		if o == id {
			t.order = append(t.order[:i:i], t.order[i+1:]...)
			break
		}
	}
}

// refsOf is the table as its session record keeps it, oldest first.
func (t *sessionTasks) refsOf() []sessionstore.TaskRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]sessionstore.TaskRef, 0, len(t.order))
	for _, id := range t.order {
		r := t.refs[id]
		out = append(out, sessionstore.TaskRef{Backend: r.backend, ID: r.id})
	}
	return out
}

// tasksChanged writes s's table into its record.
func (e *Edge) tasksChanged(s *session.Session, t *sessionTasks) {
	if s.Record().SetTasks(t.refsOf()) {
		e.recs.Enqueue(s)
	}
}

// restoreTasks fills the table of s, rebuilt here from its stored record,
// with the record's tasks.
func (e *Edge) restoreTasks(s *session.Session, refs []sessionstore.TaskRef) {
	if len(refs) == 0 {
		return
	}
	t := e.sessionTasksOf(s, true)
	for _, r := range refs { // bounded and checked by the store
		t.add(taskID(r.Backend, r.ID), taskRef{backend: r.Backend, id: r.ID})
	}
}

func (t *sessionTasks) ids() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.order...)
}

// sessionTasksOf is s's table (made on first use when make is set; nil otherwise).
func (e *Edge) sessionTasksOf(s *session.Session, make bool) *sessionTasks {
	if v, ok := e.tasks.Load(s.ID()); ok {
		return v.(*sessionTasks)
	}
	if !make {
		return nil
	}
	v, _ := e.tasks.LoadOrStore(s.ID(), &sessionTasks{})
	return v.(*sessionTasks)
}

// taskMessage is a request the edge may answer as a task method.
type taskMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// taskRequest reads data as a task method: a tools/call with a task, or
// tasks/*. ok is false for anything else (the go-sdk serves it).
func taskRequest(data []byte) (m taskMessage, params map[string]json.RawMessage, ok bool) {
	if !bytes.Contains(data, []byte(`"tasks/`)) && !bytes.Contains(data, []byte(`"task"`)) {
		return m, nil, false // the common case, decided without decoding
	}
	if json.Unmarshal(data, &m) != nil || len(m.ID) == 0 || bytes.Equal(m.ID, []byte("null")) {
		return m, nil, false
	}
	switch m.Method {
	case "tools/call", "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
	default:
		return m, nil, false
	}
	if len(m.Params) > 0 && !bytes.Equal(m.Params, []byte("null")) && json.Unmarshal(m.Params, &params) != nil {
		return m, nil, false // not an object: the go-sdk answers it
	}
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	if m.Method == "tools/call" {
		if t, ok := params["task"]; !ok || bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
			return m, nil, false // a plain call
		}
	}
	return m, params, true
}

// serveTask answers r, a POST of session s, when it is a task method
// (taskRequest); it reports whether it did.
func (e *Edge) serveTask(w http.ResponseWriter, r *http.Request, s *session.Session) bool {
	if s.Kind() != session.KindSession || e.opts.Mode != ModePassthrough || s.Flags()&session.FlagInitialized == 0 {
		return false
	}
	wb, ok := r.Body.(*wholeBody)
	if !ok {
		return false
	}
	m, params, ok := taskRequest(wb.data)
	if !ok {
		return false
	}
	e.calls.Begin()
	defer e.calls.End()
	x := &mcp.RequestExtra{TokenInfo: goauth.TokenInfoFromContext(r.Context()), Header: r.Header}
	var res json.RawMessage
	var rerr *jsonrpc.Error
	switch m.Method {
	case "tools/call":
		res, rerr = e.taskCall(r.Context(), s, x, params)
	case "tasks/list":
		res, rerr = e.listTasks(r.Context(), s, params)
	default:
		res, rerr = e.taskMethod(r.Context(), s, m.Method, params)
	}
	writeRPC(w, m.ID, res, rerr)
	return true
}

// writeRPC writes the JSON-RPC response of id: res, or rerr.
func writeRPC(w http.ResponseWriter, id, res json.RawMessage, rerr *jsonrpc.Error) {
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id, Result: res, Error: rerr}
	if rerr != nil {
		out.Result = nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *jsonrpc.Error  `json:"error"`
		}{"2.0", id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks: response not encodable"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// rpcErrorOf is the client's error for a failed backend request: the
// backend's JSON-RPC error as it gave it, else an internal error naming
// the backend and the kind of failure only.
func rpcErrorOf(err error) *jsonrpc.Error {
	var be *backend.Error
	if errors.As(err, &be) && be.Kind == backend.KindRPCError {
		return &jsonrpc.Error{Code: be.Code, Message: be.Message}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// errTaskNotFound is the answer for a task id the session does not have.
func errTaskNotFound(id string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %.80q: not found", id)}
}
