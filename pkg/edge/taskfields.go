package edge

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// What the go-sdk's types cannot carry of tasks (tasks.go) is added to
// its results as they are encoded: the server's tasks capability in the
// initialize result, and each tool's execution member in tools/list. A
// result is wrapped in a type that embeds the go-sdk's (so it is still an
// mcp.Result) and adds the members when marshalled.

// tasksCapability is the edge's tasks capability: tasks/list, tasks/cancel
// and task-augmented tools/call.
var tasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// taskFields is the session servers' outermost middleware: on a session
// of the session-based protocol in passthrough mode, it adds the tasks
// capability to initialize and the tools' execution members to
// tools/list.
func (e *Edge) taskFields(s *session.Session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || s.Kind() != session.KindSession || e.opts.Mode != ModePassthrough {
				return res, err
			}
			switch r := res.(type) {
			case *mcp.InitializeResult:
				return &initializeWithTasks{r}, nil
			case *mcp.ListToolsResult:
				if x := s.Served().ToolExecutions(); hasExecution(x, r.Tools) {
					return &toolsWithExecution{ListToolsResult: r, x: x}, nil
				}
			}
			return res, err
		}
	}
}

// initializeWithTasks is an initialize result with the tasks capability.
type initializeWithTasks struct{ *mcp.InitializeResult }

func (r *initializeWithTasks) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	caps := map[string]json.RawMessage{}
	if c, ok := m["capabilities"]; ok {
		if err := json.Unmarshal(c, &caps); err != nil {
			return nil, err
		}
	}
	caps["tasks"] = tasksCapability
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// hasExecution reports whether a tool of tools has an execution member.
func hasExecution(x view.Executions, tools []*mcp.Tool) bool {
	if len(x) == 0 {
		return false
	}
	for _, t := range tools {
		if _, ok := x[t.Name]; ok {
			return true
		}
	}
	return false
}

// toolsWithExecution is a tools/list result whose tools carry their
// definitions' execution members.
type toolsWithExecution struct {
	*mcp.ListToolsResult
	x view.Executions
}

func (r *toolsWithExecution) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	tools := make([]json.RawMessage, len(r.Tools))
	for i, t := range r.Tools {
		tb, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		if ex, ok := r.x[t.Name]; ok && len(tb) > 1 && tb[len(tb)-1] == '}' {
			sep := ","
			if len(tb) == 2 { // {}
				sep = ""
			}
			tb = append(append(append(tb[:len(tb)-1:len(tb)-1], sep+`"execution":`...), ex...), '}')
		}
		tools[i] = tb
	}
	if m["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
