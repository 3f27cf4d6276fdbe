package edge

import (
	"testing"

	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Task methods are checked against the policy in force, not the one the
// task was made under: once a policy hides the tool whose call made a
// task, tasks/get, tasks/result and tasks/cancel answer it as unknown
// (-32602) and tasks/list leaves it out, without reaching its backend;
// a policy that shows the tool again makes it reachable again.
func TestTaskMethodsRecheckPolicy(t *testing.T) {
	e, f, alpha := startTaskFleet(t)
	c, _ := openRaw(t, e.MCPURL())
	var created struct{ Task wireTask }
	c.ok("tools/call", map[string]any{"name": "alpha_slow", "arguments": map[string]any{"text": "x"}, "task": map[string]any{}}, &created)
	c.ok("tools/call", map[string]any{"name": "beta_slow", "arguments": map[string]any{"text": "y"}, "task": map[string]any{}}, &created)

	setPolicy(t, f, &policy.Section{Rules: []policy.Rule{{Name: "no-alpha-slow", Effect: "deny", Tools: []string{"alpha_slow"}}}}, e)
	before := len(alpha.Received("tasks/get")) + len(alpha.Received("tasks/result")) + len(alpha.Received("tasks/cancel"))
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if code := c.fails(m, map[string]any{"taskId": "alpha/t-1"}); code != -32602 {
			t.Fatalf("%s of a task of a tool the policy now hides: %d, want -32602 (unknown)", m, code)
		}
	}
	if n := len(alpha.Received("tasks/get")) + len(alpha.Received("tasks/result")) + len(alpha.Received("tasks/cancel")); n != before {
		t.Fatalf("alpha got %d task requests for a hidden task", n-before)
	}
	var tl struct{ Tasks []wireTask }
	c.ok("tasks/list", nil, &tl)
	if len(tl.Tasks) != 1 || tl.Tasks[0].TaskID != "beta/t-1" {
		t.Fatalf("tasks/list under the policy: %+v, want beta's task only", tl.Tasks)
	}
	var task wireTask
	c.ok("tasks/get", map[string]any{"taskId": "beta/t-1"}, &task)

	setPolicy(t, f, &policy.Section{}, e)
	c.ok("tasks/get", map[string]any{"taskId": "alpha/t-1"}, &task)
	if task.TaskID != "alpha/t-1" {
		t.Fatalf("tasks/get once the tool is shown again: %+v", task)
	}
	c.ok("tasks/list", nil, &tl)
	if len(tl.Tasks) != 2 {
		t.Fatalf("tasks/list once the tool is shown again: %+v", tl.Tasks)
	}
}
