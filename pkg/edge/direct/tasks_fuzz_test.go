package direct

import (
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
