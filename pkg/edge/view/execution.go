package view

import (
	"encoding/json"
	"sync"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// A tool's execution member (MCP 2025-11-25: execution.taskSupport, whether
// a tools/call of it may or must be a task) is part of its backend's
// definition, which the catalog keeps whole; the go-sdk's Tool has no
// field for it. Executions reads it from the catalog once per catalog
// view, for the lists that pass it on (Edge.taskFields).

// Executions maps exposed tool names to their definitions' execution
// objects; tools without one are absent.
type Executions map[string]json.RawMessage

// executionsOnce is the lazily read Executions of one Served value.
type executionsOnce struct {
	once sync.Once
	x    Executions
}

// ToolExecutions is the execution objects of the tools of s's catalog,
// read on first use.
func (s *Served) ToolExecutions() Executions {
	s.exec.once.Do(func() {
		if s.Catalog != nil {
			s.exec.x = executions(s.Catalog)
		}
	})
	return s.exec.x
}

// executions reads the execution member of every tool definition of v:
// kept only when it is a JSON object (definitions were bounded and checked
// when the catalog was built).
func executions(v *catalog.View) Executions {
	x := Executions{}
	for _, t := range v.Tools {
		var d struct {
			Execution json.RawMessage `json:"execution"`
		}
		if json.Unmarshal(t.Def, &d) != nil || len(d.Execution) == 0 || d.Execution[0] != '{' {
			continue
		}
		x[t.Exposed] = d.Execution
	}
	return x
}

// TaskSupport is a tool's execution.taskSupport: "optional" or "required"
// when a tools/call of it may be a task; "" (forbidden) otherwise.
func (x Executions) TaskSupport(tool string) string {
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	if raw, ok := x[tool]; ok && json.Unmarshal(raw, &e) == nil {
		switch e.TaskSupport {
		case "optional", "required":
			return e.TaskSupport
		}
	}
	return ""
}
