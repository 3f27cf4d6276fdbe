package edge

import (
	"encoding/json"
	"testing"
)

// FuzzTaskRequest: any body is either not a task method or one whose
// params are an object; nothing panics.
func FuzzTaskRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"a/t-1"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a_slow","task":{"ttl":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":null}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tasks/list"}`,
		`[{"method":"tasks/get"}]`, `{"method":"tasks/get","id":1,"params":[1]}`, `"task"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, params, ok := taskRequest(data)
		if !ok {
			return
		}
		if params == nil || len(m.ID) == 0 {
			t.Fatalf("accepted %q without params or id", data)
		}
		if m.Method == "tools/call" {
			if _, has := params["task"]; !has {
				t.Fatalf("a tools/call without a task accepted: %q", data)
			}
		}
	})
}

// FuzzSwapTaskID: whatever a backend answers, a swapped result is one
// JSON object whose id at the path is the new one.
func FuzzSwapTaskID(f *testing.F) {
	for _, s := range []string{
		`{"task":{"taskId":"t-1","status":"working"}}`, `{"taskId":"t-1"}`,
		`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-9"}},"content":[]}`,
		`{"task":{"taskId":5}}`, `{"task":[]}`, `null`, `{"taskId":""}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	paths := [][]string{nil, {"task"}, {"_meta", relatedTask}}
	f.Fuzz(func(t *testing.T, data []byte, p uint8) {
		path := paths[int(p)%len(paths)]
		out, old, ok := swapTaskID(data, path, func(id string) string { return "edge/" + id })
		if !ok {
			return
		}
		var v any = map[string]any{}
		if json.Unmarshal(out, &v) != nil {
			t.Fatalf("swapped %q into invalid JSON %q", data, out)
		}
		m := v.(map[string]any)
		for _, k := range path {
			m = m[k].(map[string]any)
		}
		if m["taskId"] != "edge/"+old {
			t.Fatalf("taskId %v, want edge/%s", m["taskId"], old)
		}
	})
}
