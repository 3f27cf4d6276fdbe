package direct

import (
	"bytes"
	"encoding/json"
	"net/http"

	segjson "github.com/segmentio/encoding/json"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
)

// Tasks (MCP 2025-11-25, experimental) through the edge. A client of the
// session-based protocol may make a tools/call a task when the tool's
// definition says execution.taskSupport "optional" or "required"; the
// edge advertises the tasks capability (list, cancel, tools/call) and
// serves each tool's execution member in tools/list as the backend gave
// it (lists serve the definitions the view holds; package sessionserver).
//
// The go-sdk knows no task method, so the edge answers them before it:
// a tools/call with params.task and tasks/get, tasks/result, tasks/cancel
// and tasks/list of a session held here (Answers.Task). A task lives at the
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
	// Read as the go-sdk reads it (member names case-sensitively), never
	// as encoding/json, which folds "paramſ" into params.
	dec := segjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	if dec.Decode(&m) != nil || len(m.ID) == 0 || bytes.Equal(m.ID, []byte("null")) {
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

// Task answers r, a POST of session s, when it is a task method
// (taskRequest); it reports whether it did.
func (a *Answers) Task(w http.ResponseWriter, r *http.Request, s *session.Session) bool {
	if s.Kind() != session.KindSession || !a.o.Passthrough || s.Flags()&session.FlagInitialized == 0 {
		return false
	}
	wb, ok := r.Body.(Body)
	if !ok {
		return false
	}
	m, params, ok := taskRequest(wb.Bytes())
	if !ok {
		return false
	}
	a.o.Calls.Begin()
	defer a.o.Calls.End()
	x := &mcp.RequestExtra{TokenInfo: goauth.TokenInfoFromContext(r.Context()), Header: r.Header}
	var res json.RawMessage
	var rerr *jsonrpc.Error
	switch m.Method {
	case "tools/call":
		res, rerr = a.o.Calls.TaskCall(r.Context(), s, x, params)
	case "tasks/list":
		res, rerr = a.o.Calls.ListTasks(r.Context(), s, x, params)
	default:
		res, rerr = a.o.Calls.TaskMethod(r.Context(), s, x, m.Method, params)
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
