package sessionserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// What the go-sdk's types cannot carry, or carry for every revision, is
// settled as results are encoded, for the revision of the session: the
// server's tasks capability is added to the initialize result of a
// 2025-11-25 session (the revision that defines it), and a resources/read
// result to an older session leaves out ttlMs and cacheScope (2026-07-28
// members). A result is wrapped in a type that embeds the go-sdk's (so it
// is still an mcp.Result) and settles them when marshalled. A tool's
// execution member needs nothing here: lists serve the definitions the
// view holds, at the session's revision (view.Project).

// TasksCapability is the edge's tasks capability: tasks/list, tasks/cancel
// and task-augmented tools/call.
var TasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// results is the session servers' outermost middleware: on a session
// of the session-based protocol, it adds the tasks capability to a
// 2025-11-25 initialize in passthrough mode, and drops the 2026-07-28
// cache members from resources/read results; on a 2026-07-28 request, it
// marks the results the go-sdk marks only for its own handlers (tools/call,
// prompts/get, resources/read) with resultType "complete" (completed).
func (sv *Servers) results(s *session.Session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			if s.Kind() != session.KindSession {
				return completed(res), nil
			}
			switch r := res.(type) {
			case *mcp.InitializeResult:
				if sv.o.Passthrough && r.ProtocolVersion >= view.Rev20251125 {
					return &initializeWithTasks{r}, nil
				}
			case *mcp.ReadResourceResult:
				if rev := s.ProtocolVersion(); view.Older(rev) {
					return &readAtRevision{ReadResourceResult: r, rev: rev}, nil
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
	caps["tasks"] = TasksCapability
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// readAtRevision is a resources/read result to a session of revision rev,
// older than 2026-07-28: without ttlMs and cacheScope.
type readAtRevision struct {
	*mcp.ReadResourceResult
	rev string
}

func (r *readAtRevision) MarshalJSON() ([]byte, error) {
	return view.WithoutNewer(r.ReadResourceResult, r.rev)
}

// completed is res as a 2026-07-28 result: a tools/call, prompts/get or
// resources/read result the edge made from a backend's is marked
// resultType "complete" when encoded (the go-sdk marks these only in its
// own handlers: the field is unexported); any other result as it is (the
// go-sdk marks the rest itself).
func completed(res mcp.Result) mcp.Result {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if !r.NeedsInput() {
			return &completeResult{r}
		}
	case *mcp.GetPromptResult:
		if !r.NeedsInput() {
			return &completeResult{r}
		}
	case *mcp.ReadResourceResult:
		if !r.NeedsInput() {
			return &completeResult{r}
		}
	}
	return res
}

// completeResult is a result marked resultType "complete" when encoded.
type completeResult struct{ mcp.Result }

func (r *completeResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.Result)
	if err != nil {
		return nil, err
	}
	return fastpath.MarkComplete(b), nil
}
