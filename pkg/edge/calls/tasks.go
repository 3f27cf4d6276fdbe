package calls

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// taskID is the id a client knows a backend's task by.
func TaskID(backend, id string) string { return backend + "/" + id }

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

// RelatedTask is the _meta key of a task's related messages.
const RelatedTask = "io.modelcontextprotocol/related-task"

// taskCall forwards a tools/call with a task to the tool's backend and
// answers its CreateTaskResult with the task under the edge's id (kept
// in s's table). A tool the caller may not use is unknown; one whose
// definition has no task support is refused as the spec says (-32601).
func (pl *Plane) TaskCall(ctx context.Context, s *session.Session, x *mcp.RequestExtra, params map[string]json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var name string
	if json.Unmarshal(params["name"], &name) != nil || name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: no tool name"}
	}
	start := time.Now()
	c := Call{Session: s, Ident: pl.IdentityOf(x), TokenInfo: TokenInfoOf(x), Name: name, Args: params["arguments"]}
	rt, err := pl.Resolve(c)
	if err != nil {
		pl.trail(c, rt, start, nil, err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool %q: %v", name, ErrUnavailable)}
	}
	if pl.o.View().ToolExecutions().TaskSupport(name) == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q cannot run as a task", name)}
	}
	fwd := make(map[string]json.RawMessage, len(params))
	for k, v := range params {
		fwd[k] = v
	}
	fwd["name"], _ = json.Marshal(rt.Tool.Original)
	if m, ok := fwd["_meta"]; ok {
		if fwd["_meta"] = forwardMeta(m); fwd["_meta"] == nil {
			delete(fwd, "_meta")
		}
	}
	body, err := json.Marshal(fwd)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: params not encodable"}
	}
	raw, err := pl.o.Pool.Request(backend.WithCaller(ctx, TokenIdentity(c.TokenInfo)), rt.Tool.Backend, rt.Config, "tools/call", body, nil)
	pl.trail(c, rt, start, raw, err) // a task made, or the backend's answer to the call
	if err != nil {
		return nil, rpcErrorOf(err)
	}
	out, bid, ok := swapTaskID(raw, []string{"task"}, func(id string) string { return TaskID(rt.Tool.Backend, id) })
	if !ok {
		return raw, nil // no task made: the backend answered the call itself
	}
	if len(bid) > sessionstore.MaxTaskID {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tool %q: its backend's task id is longer than %d bytes", name, sessionstore.MaxTaskID)}
	}
	s.Tasks(true).Add(TaskID(rt.Tool.Backend, bid), sessionstore.TaskRef{Backend: rt.Tool.Backend, ID: bid, Tool: name})
	pl.tasksChanged(s)
	return out, nil
}

// forwardMeta is a request's _meta without the protocol's own members
// (as callMeta); nil when nothing is left or m is not an object.
func forwardMeta(m json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(m, &fields) != nil {
		return nil
	}
	for k := range fields {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			delete(fields, k)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	b, _ := json.Marshal(fields)
	return b
}

// taskVisible reports whether the caller of x may still reach a task of
// s: whether the policy in force lets it see the tool whose call made the
// task (a task of a tool it may no longer see is unknown to it). A task
// recorded without its tool (by an earlier edge) is reachable only while
// no policy is in force.
func (pl *Plane) taskVisible(s *session.Session, x *mcp.RequestExtra, ref sessionstore.TaskRef) bool {
	if ref.Tool == "" {
		return pl.Policy() == nil
	}
	_, err := pl.Resolve(Call{Session: s, Ident: pl.IdentityOf(x), TokenInfo: TokenInfoOf(x), Name: ref.Tool})
	return err == nil
}

// TaskMethod forwards tasks/get, tasks/result or tasks/cancel of one of
// s's tasks to its backend, under the backend's id, and answers with the
// edge's id in the result. A task of a tool the policy in force hides
// from the caller of x is not found (it stays in the table: a later
// policy may show the tool again).
func (pl *Plane) TaskMethod(ctx context.Context, s *session.Session, x *mcp.RequestExtra, method string, params map[string]json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var id string
	if json.Unmarshal(params["taskId"], &id) != nil || id == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": no taskId"}
	}
	t := s.Tasks(false)
	ref, ok := sessionstore.TaskRef{}, false
	if t != nil {
		ref, ok = t.Get(id)
	}
	if !ok || !pl.taskVisible(s, x, ref) {
		return nil, errTaskNotFound(id)
	}
	return pl.forwardTask(ctx, s, method, id, ref)
}

// forwardTask forwards method of s's task id, ref, to its backend.
func (pl *Plane) forwardTask(ctx context.Context, s *session.Session, method, id string, ref sessionstore.TaskRef) (json.RawMessage, *jsonrpc.Error) {
	t := s.Tasks(true)
	cfg, ok := pl.BackendConfig(ref.Backend)
	if !ok { // its backend left the view: the task went with it
		t.Drop(id)
		pl.tasksChanged(s)
		return nil, errTaskNotFound(id)
	}
	fwd := map[string]json.RawMessage{}
	fwd["taskId"], _ = json.Marshal(ref.ID)
	body, _ := json.Marshal(fwd)
	raw, err := pl.o.Pool.Request(ctx, ref.Backend, cfg, method, body, nil)
	if err != nil {
		return nil, rpcErrorOf(err)
	}
	path := []string(nil) // tasks/get and tasks/cancel answer a Task
	if method == "tasks/result" {
		path = []string{"_meta", RelatedTask}
	}
	if out, _, ok := swapTaskID(raw, path, func(string) string { return id }); ok {
		return out, nil
	}
	return raw, nil // a result without the backend's task id: nothing of the backend's to hide
}

// tasksPage is how many tasks one tasks/list page holds.
const tasksPage = 50

// listTasks answers tasks/list with s's tasks, oldest first, each as its
// backend's tasks/get gives it now; a task its backend no longer knows
// leaves the table, and one of a tool the policy in force hides from the
// caller of x is left out. The cursor is opaque to the client.
func (pl *Plane) ListTasks(ctx context.Context, s *session.Session, x *mcp.RequestExtra, params map[string]json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	from := 0
	if c, ok := params["cursor"]; ok && string(c) != "null" {
		var cursor string
		n, err := -1, json.Unmarshal(c, &cursor)
		if err == nil {
			var b []byte
			if b, err = base64.RawURLEncoding.DecodeString(cursor); err == nil && strings.HasPrefix(string(b), "tasks:") {
				n, err = strconv.Atoi(strings.TrimPrefix(string(b), "tasks:"))
			}
		}
		if err != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/list: invalid cursor"}
		}
		from = n
	}
	var ids []string
	if t := s.Tasks(false); t != nil {
		ids = t.IDs()
	}
	if from > len(ids) {
		from = len(ids)
	}
	page := ids[from:min(from+tasksPage, len(ids))]
	got := make([]json.RawMessage, len(page))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, id := range page {
		g.Go(func() error {
			ref, ok := s.Tasks(true).Get(id)
			if !ok || !pl.taskVisible(s, x, ref) {
				return nil // gone meanwhile, or hidden by the policy: left out (kept)
			}
			res, rerr := pl.forwardTask(gctx, s, "tasks/get", id, ref)
			switch {
			case rerr == nil:
				got[i] = res
			case rerr.Code == jsonrpc.CodeInvalidParams: // gone at its backend (expired, deleted)
				if t := s.Tasks(false); t != nil {
					t.Drop(id)
					pl.tasksChanged(s)
				}
			}
			return nil // a backend that fails now leaves its task out of this page
		})
	}
	_ = g.Wait()
	out := struct {
		Tasks      []json.RawMessage `json:"tasks"`
		NextCursor string            `json:"nextCursor,omitempty"`
	}{Tasks: []json.RawMessage{}}
	for _, r := range got {
		if r != nil {
			out.Tasks = append(out.Tasks, r)
		}
	}
	if end := from + len(page); end < len(ids) {
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("tasks:" + strconv.Itoa(end)))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks/list: not encodable"}
	}
	return b, nil
}

// swapTaskID replaces the taskId of the object at path in obj (a JSON
// object; path nil: obj itself) by to(old) and returns the result and the
// old id; ok is false when there is no string taskId there.
func swapTaskID(obj json.RawMessage, path []string, to func(string) string) (json.RawMessage, string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || m == nil {
		return nil, "", false
	}
	var old string
	if len(path) == 0 {
		if json.Unmarshal(m["taskId"], &old) != nil || old == "" {
			return nil, "", false
		}
		m["taskId"], _ = json.Marshal(to(old))
	} else {
		inner, ok := m[path[0]]
		if !ok {
			return nil, "", false
		}
		if m[path[0]], old, ok = swapTaskID(inner, path[1:], to); !ok {
			return nil, "", false
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "", false
	}
	return b, old, true
}

// tasksChanged tells the edge that the task table of s changed (its
// session record keeps it).
func (pl *Plane) tasksChanged(s *session.Session) {
	if pl.o.TasksChanged != nil {
		pl.o.TasksChanged(s)
	}
}

// trail records a task-augmented call in the call trail (when one is
// kept): raw is what the backend answered, failure why it failed.
func (pl *Plane) trail(c Call, rt Route, start time.Time, raw json.RawMessage, failure error) {
	if pl.record == nil {
		return
	}
	reply := backend.Reply{Raw: raw}
	if failure == nil && raw == nil {
		reply.Raw = json.RawMessage(`{}`)
	}
	pl.Audit(c, rt, start, &reply, failure)
}
